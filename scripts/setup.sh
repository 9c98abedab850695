#!/usr/bin/env bash
# Installs what linerate needs on a fresh Debian machine of this project's kind, idempotently:
# Debian packages only when missing, Rust crates through cargo's own fetch.
set -euo pipefail

# libbpf-dev: <bpf/bpf_helpers.h> for rebuilding examples/ (make -C examples).
# clang-13/llvm-13: rebuilding the LLVM 13 objdump fixtures (crates/bpf/tests/fixtures/objdump).
packages=(clang-13 llvm-13 clang-14 clang-19 llvm-19 bpftool pkg-config libbpf-dev libz3-dev)
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
