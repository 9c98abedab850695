#!/usr/bin/env bash
# Installs what linerate needs on a fresh Debian machine of this project's kind, idempotently:
# Debian packages only when missing, Rust crates through cargo's own fetch.
set -euo pipefail

# libbpf-dev: <bpf/bpf_helpers.h> for rebuilding examples/ (make -C examples).
# clang-13/llvm-13: rebuilding the LLVM 13 objdump fixtures (crates/bpf/tests/fixtures/objdump).
# libz3-dev: Z3 for crates/smt (the `z3` crate links it through pkg-config). Debian's 4.8.12 was
# measured against the PyPI z3-solver 5.4.1.0 wheel's libz3.so (issue 9), `linerate bound --json`,
# release builds of one commit, alternating runs, median of 3 (elapsed s, Debian -> wheel):
# xdp_path_explosion 5.51 -> 5.27, xdp_firewall 11.47 -> 16.58, xdp_quic_lb_v6 6.18 -> 7.75,
# xdp_cms_d20 1.18 -> 1.17, xdp_dns 5.20 -> 5.97, xdp_jumbo 1.02 -> 0.64,
# xdp_path_explosion_nfp (nfp) 8.77 -> 8.43; geometric mean 1.03x slower with the wheel (user CPU
# 1.05x), 1.45x slower on xdp_firewall; same bounds and SSPs. The wheel is not faster, so
# Debian's stays. To measure again: pip install --no-deps --target DIR z3-solver==VERSION, then
# build with Z3_NO_PKG_CONFIG=1 Z3_LIBRARY_PATH_OVERRIDE=DIR/z3/lib Z3_SYS_Z3_VERSION=VERSION
# RUSTFLAGS="-C link-arg=-Wl,-rpath,DIR/z3/lib" CARGO_TARGET_DIR=another-dir (without
# Z3_NO_PKG_CONFIG the pkg-config probe's -L/usr/lib/x86_64-linux-gnu shadows the override).
# graphviz: `dot` lays out the control-flow graph of `linerate report`; chromium: the headless
# browser its tests render reports in; time: GNU time, the peak memory bench/report prints.
packages=(clang-13 llvm-13 clang-14 clang-19 llvm-19 bpftool pkg-config libbpf-dev libz3-dev
  graphviz chromium time)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust (stable) first" >&2
  exit 1
fi
cargo fetch --locked -q 2>/dev/null || cargo fetch -q
