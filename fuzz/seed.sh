#!/usr/bin/env bash
# Creates the seed corpora of the fuzz targets from the repository's objects (fuzz/corpus is not
# committed). Run from anywhere: `bash fuzz/seed.sh`. Needs llvm-objdump/llvm-objcopy (19
# preferred, 14 or unversioned accepted) for the `asm` and `insn` seeds; without them only the
# `object` corpus and the committed listings are seeded.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
corpus="$here/corpus"
mkdir -p "$corpus/object" "$corpus/insn" "$corpus/asm" "$corpus/commands"

pick() { for t in "$@"; do if command -v "$t" >/dev/null 2>&1; then echo "$t"; return; fi; done; }
objdump=$(pick llvm-objdump-19 llvm-objdump llvm-objdump-14)
objcopy=$(pick llvm-objcopy-19 llvm-objcopy llvm-objcopy-14)

objects=("$root"/examples/*.o "$root"/crates/bpf/tests/fixtures/*.o "$root"/crates/bpf/tests/fixtures/asm/*.o)
for o in "${objects[@]}"; do
  [ -f "$o" ] || continue
  base=$(basename "$(dirname "$o")")_$(basename "$o" .o)
  cp "$o" "$corpus/object/$base.o"
  if [ -n "$objdump" ]; then
    "$objdump" -d "$o" >"$corpus/asm/$base.d.txt" 2>/dev/null || true
    "$objdump" -dr "$o" >"$corpus/asm/$base.dr.txt" 2>/dev/null || true
    "$objdump" -d --no-show-raw-insn --no-leading-addr "$o" >"$corpus/asm/$base.bare.txt" 2>/dev/null || true
  fi
  if [ -n "$objcopy" ] && [ -n "$objdump" ]; then
    # Raw instruction bytes of every executable section, for the `insn` target.
    "$objdump" -h "$o" 2>/dev/null | awk '$0 ~ /TEXT/ { print $2 }' | while read -r sec; do
      safe=$(echo "$sec" | tr -c 'A-Za-z0-9_.\n-' '_')
      "$objcopy" -O binary --only-section="$sec" "$o" "$corpus/insn/$base.$safe.bin" 2>/dev/null || true
      [ -s "$corpus/insn/$base.$safe.bin" ] || rm -f "$corpus/insn/$base.$safe.bin"
    done
  fi
done
# The committed llvm-objdump listings and assembler sources of the test fixtures, and the
# listings of every LLVM release (crates/bpf/tests/fixtures/objdump/<release>/).
for t in "$root"/crates/bpf/tests/fixtures/asm/*.txt "$root"/crates/bpf/tests/fixtures/asm/*.s; do
  [ -f "$t" ] && cp "$t" "$corpus/asm/fixture_$(basename "$t")"
done
for t in "$root"/crates/bpf/tests/fixtures/objdump/*/*.txt; do
  [ -f "$t" ] && cp "$t" "$corpus/asm/$(basename "$(dirname "$t")")_$(basename "$t")"
done
# The `commands` target reads a mode byte first (see crates/conformance/src/decodable.rs): 0 and
# a file (objects, objdump listings), 1 and raw slots, 2 and generator choices (the slot blobs
# again, read as choices).
prefixed() { { printf "\\$(printf %03o "$1")"; cat "$2"; } >"$3"; }
for f in "$corpus"/object/*.o; do
  [ -f "$f" ] && prefixed 0 "$f" "$corpus/commands/0_$(basename "$f")"
done
for f in "$corpus"/asm/*.dr.txt; do
  [ -f "$f" ] && prefixed 0 "$f" "$corpus/commands/0_$(basename "$f")"
done
for f in "$corpus"/insn/*.bin; do
  [ -f "$f" ] || continue
  prefixed 1 "$f" "$corpus/commands/1_$(basename "$f")"
  prefixed 2 "$f" "$corpus/commands/2_$(basename "$f")"
done
for d in object insn asm commands; do
  echo "corpus/$d: $(find "$corpus/$d" -type f | wc -l) files"
done
