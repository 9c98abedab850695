#!/usr/bin/env bash
# The full test suite, as CI runs it (.ci/run): every test of the workspace with kernel-backed
# tests required to run (LINERATE_REQUIRE_BPF=1 turns their SKIPPED into a failure), then every
# benchmark compiled, not run (quietly, so that cargo test's summary stays the closing lines).
# The test binaries are built first, on their own, so that the build's time is printed apart
# from the tests'.
set -euo pipefail
cd "$(dirname "$0")/.."
build_start=$SECONDS
cargo test --workspace --release --no-run
echo "test.sh: test binaries built in $((SECONDS - build_start)) s" >&2
LINERATE_REQUIRE_BPF=1 cargo test --workspace --release
cargo bench --workspace --no-run --quiet
