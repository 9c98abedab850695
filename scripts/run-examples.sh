#!/usr/bin/env bash
# The main job: inspect every example object and run its test packets in linerate's interpreter
# and, where BPF is available, in this host's kernel; prints one line per example saying whether
# the two agree on action, output packet and final maps.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p linerate
bin=target/release/linerate

kernel=1
probe_pkt=$(printf '%.0s00' {1..60})
if ! "$bin" run examples/xdp_filter.o --kernel --packet "$probe_pkt" >/dev/null 2>/tmp/linerate-probe.$$; then
  echo "kernel runs SKIPPED: $(head -1 /tmp/linerate-probe.$$)"
  kernel=0
fi
rm -f /tmp/linerate-probe.$$

printf '%-18s %8s %5s %5s %8s  %-28s %s\n' object programs maps insns packets "interpreter actions" kernel
for obj in examples/*.o; do
  name=$(basename "$obj" .o)
  summary=$("$bin" inspect "$obj" --json --no-disasm | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["programs"]), len(d["maps"]), sum(p["insns"] for p in d["programs"]))')
  read -r nprog nmaps ninsns <<<"$summary"
  packets="examples/$name.packets"
  [ -f "$packets" ] || packets="examples/${name%_d*}.packets"
  maps=()
  for m in "examples/$name.maps.json" "examples/${name%_d*}.maps.json"; do
    [ -f "$m" ] && { maps=(--maps "$m"); break; }
  done
  if [ ! -f "$packets" ]; then
    printf '%-18s %8s %5s %5s %8s  %s\n' "$name" "$nprog" "$nmaps" "$ninsns" 0 "(no packets file)"
    continue
  fi
  prog=()
  entry=$(sed -n 's/^# program: *\([^ ]*\).*/\1/p' "$packets" | head -1)
  [ -n "$entry" ] && prog=(--prog "$entry")
  vm_json=$("$bin" run "$obj" "${prog[@]}" --packets "$packets" "${maps[@]}" --json)
  actions=$(python3 -c '
import json, sys, collections
runs = json.loads(sys.argv[1]); runs = runs if isinstance(runs, list) else [runs]
c = collections.Counter(r["action"].removeprefix("XDP_") for r in runs)
print(len(runs), ",".join(f"{k}:{v}" for k, v in sorted(c.items())))' "$vm_json")
  read -r count verdicts <<<"$actions"
  verdict=skipped
  if ((kernel)); then
    k_json=$("$bin" run "$obj" "${prog[@]}" --kernel --packets "$packets" "${maps[@]}" --json)
    verdict=$(python3 -c '
import json, sys
a, b = (json.loads(x) for x in sys.argv[1:3])
a = a if isinstance(a, list) else [a]; b = b if isinstance(b, list) else [b]
same = sum(x["action"] == y["action"] and x["packet"] == y["packet"] and x["maps"] == y["maps"] for x, y in zip(a, b))
print(f"{same}/{len(a)} agree")' "$vm_json" "$k_json")
  fi
  printf '%-18s %8s %5s %5s %8s  %-28s %s\n' "$name" "$nprog" "$nmaps" "$ninsns" "$count" "$verdicts" "$verdict"
done

echo
echo "Cost of every example on each shipped device model (linerate cost): blocks, and the slowest"
echo "entry-to-exit path whether feasible or not (programs with loops need 'linerate bound')."
printf '%-18s %-22s %6s  %-34s %s\n' object program blocks "x86: cycles/packet -> rate" "nfp: cycles, DRAM ops -> rate (bottleneck)"
for obj in examples/*.o; do
  name=$(basename "$obj" .o)
  for target in x86 nfp; do
    if ! "$bin" cost "$obj" --target "$target" --json >"/tmp/linerate-cost-$target.$$" 2>"/tmp/linerate-cost-err.$$"; then
      sed 's/^error: //' "/tmp/linerate-cost-err.$$" | head -1 >"/tmp/linerate-cost-$target.$$"
    fi
  done
  python3 - "$name" "/tmp/linerate-cost-x86.$$" "/tmp/linerate-cost-nfp.$$" <<'PY'
import json, re, sys
name, x86_file, nfp_file = sys.argv[1:4]
def load(path):
    text = open(path).read()
    try:
        j = json.loads(text)
    except ValueError:
        return None, text.strip()
    return (j.get("programs") or [j]), None
def rate(w):
    return f'{w["pps"] / 1e6:.2f} Mpps'
x86, x86_err = load(x86_file)
nfp, nfp_err = load(nfp_file)
for i, p in enumerate(x86 or []):
    w = p["worst_path"]
    xs = "loops" if w is None else f'{w["cost"]["cycles"]:.0f} cyc -> {rate(w)}'
    if nfp_err:
        m = re.search(r"insn (\d+) of `[^`]*` \(([^)]*)\) cannot run", nfp_err)
        ns = f"cannot offload: {m.group(2)} (insn {m.group(1)})" if m else nfp_err[:70]
    else:
        wn = nfp[i]["worst_path"]
        ns = "loops" if wn is None else (
            f'{wn["cost"]["cycles"]:.0f} cyc, {wn["cost"].get("dram_read", 0):.0f}+{wn["cost"].get("dram_atomic", 0):.0f} DRAM -> {rate(wn)} ({wn["bottleneck"]})')
    print(f'{name:<18} {p["program"]:<22} {len(p["blocks"]):>6}  {xs:<34} {ns}')
if x86_err:
    print(f'{name:<18} {"":<22} {"":>6}  error: {x86_err}')
PY
done
rm -f /tmp/linerate-cost-*.$$
