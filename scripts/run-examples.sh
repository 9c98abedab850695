#!/usr/bin/env bash
# The main job.
#
#   bash scripts/run-examples.sh          a tour of every capability, each once on the example where
#                                         it says most (about 3 minutes after the build)
#   bash scripts/run-examples.sh --all    every capability on every example (about 13 minutes)
#
# Both start with the agreement table (every example's packets in linerate's interpreter and, where
# BPF is available, in this host's kernel) and end with HTML reports in reports/ (index.html). Each
# step prints its number, what it shows and, when done, how long it took; the linerate commands
# draw their own progress bars on a terminal.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=tour
case "${1:-}" in
  "") ;;
  --all) mode=all ;;
  -h | --help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "run-examples.sh: unknown argument '$1' (expected nothing or --all)" >&2; exit 2 ;;
esac

cargo build --release -q -p linerate
bin=target/release/linerate
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
job_start=$SECONDS

kernel=1
probe_pkt=$(printf '%.0s00' {1..60})
if ! "$bin" run examples/xdp_filter.o --kernel --packet "$probe_pkt" >/dev/null 2>"$tmp/probe"; then
  echo "kernel runs SKIPPED: $(head -1 "$tmp/probe")"
  kernel=0
fi

steps=0
step_start=$SECONDS
# step TITLE [LINE...]: closes the previous step with its time and opens the next one.
step() {
  step_done
  steps=$((steps + 1))
  step_start=$SECONDS
  echo
  echo "== $steps. $1"
  shift
  local line
  for line in "$@"; do echo "   $line"; done
}
step_done() {
  ((steps)) && echo "   ($((SECONDS - step_start)) s)"
  return 0
}

# crafted NAME: the example's crafted packets, if any, as `packets` (a path or ""), `maps` and
# `prog` (argument arrays for run, cost and bound).
crafted() {
  local name=$1 m entry
  packets="examples/$name.packets"
  [ -f "$packets" ] || packets="examples/${name%_d*}.packets"
  [ -f "$packets" ] || packets=""
  maps=()
  for m in "examples/$name.maps.json" "examples/${name%_d*}.maps.json"; do
    [ -f "$m" ] && { maps=(--maps "$m"); break; }
  done
  prog=()
  if [ -n "$packets" ]; then
    entry=$(sed -n 's/^# program: *\([^ ]*\).*/\1/p' "$packets" | head -1)
    [ -n "$entry" ] && prog=(--prog "$entry")
  fi
  return 0
}

agreement_table() {
  step "Every example in the interpreter and in this host's kernel (linerate inspect, run)" \
    "one line per example: its size, its crafted packets' actions in linerate's interpreter, and" \
    "how many packets the kernel (BPF_PROG_TEST_RUN) agrees on: action, output packet, maps."
  printf '%-22s %8s %5s %5s %8s  %-28s %s\n' object programs maps insns packets "interpreter actions" kernel
  local obj name summary nprog nmaps ninsns actions count verdicts verdict
  for obj in examples/*.o; do
    name=$(basename "$obj" .o)
    summary=$("$bin" inspect "$obj" --json --no-disasm | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["programs"]), len(d["maps"]), sum(p["insns"] for p in d["programs"]))')
    read -r nprog nmaps ninsns <<<"$summary"
    crafted "$name"
    if [ -z "$packets" ]; then
      printf '%-22s %8s %5s %5s %8s  %s\n' "$name" "$nprog" "$nmaps" "$ninsns" 0 "(no packets file)"
      continue
    fi
    # Run outputs go through files: with every map after every packet they outgrow argv.
    "$bin" run "$obj" "${prog[@]}" --packets "$packets" "${maps[@]}" --json >"$tmp/vm.json"
    actions=$(python3 -c '
import json, sys, collections
runs = json.load(open(sys.argv[1])); runs = runs if isinstance(runs, list) else [runs]
c = collections.Counter(r["action"].removeprefix("XDP_") for r in runs)
print(len(runs), ",".join(f"{k}:{v}" for k, v in sorted(c.items())))' "$tmp/vm.json")
    read -r count verdicts <<<"$actions"
    verdict=skipped
    if ((kernel)); then
      "$bin" run "$obj" "${prog[@]}" --kernel --packets "$packets" "${maps[@]}" --json >"$tmp/kernel.json"
      verdict=$(python3 -c '
import json, sys
a, b = (json.load(open(x)) for x in sys.argv[1:3])
a = a if isinstance(a, list) else [a]; b = b if isinstance(b, list) else [b]
same = sum(x["action"] == y["action"] and x["packet"] == y["packet"] and x["maps"] == y["maps"] for x, y in zip(a, b))
print(f"{same}/{len(a)} agree")' "$tmp/vm.json" "$tmp/kernel.json")
    fi
    printf '%-22s %8s %5s %5s %8s  %-28s %s\n' "$name" "$nprog" "$nmaps" "$ninsns" "$count" "$verdicts" "$verdict"
  done
}

cost_table() {
  step "Cost of every example on this host's x86 model and the NFP model (linerate cost)" \
    "blocks, and the slowest entry-to-exit path whether feasible or not; for programs with loops" \
    "(which 'linerate bound' unrolls), the slowest path one of the crafted packets takes, 'pkt'."
  printf '%-22s %-22s %6s  %-34s %s\n' object program blocks "x86: cycles/packet -> rate" "nfp: cycles, DRAM ops -> rate (bottleneck)"
  local obj name target extra
  for obj in examples/*.o; do
    name=$(basename "$obj" .o)
    crafted "$name"
    extra=()
    [ -n "$packets" ] && extra=(--packets "$packets" "${prog[@]}" "${maps[@]}")
    for target in x86 nfp; do
      if ! "$bin" cost "$obj" --target "$target" "${extra[@]}" --json >"$tmp/cost-$target.json" 2>"$tmp/cost-err"; then
        sed 's/^error: //' "$tmp/cost-err" | head -1 >"$tmp/cost-$target.json"
      fi
    done
    python3 - "$name" "$tmp/cost-x86.json" "$tmp/cost-nfp.json" <<'PY'
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
def slowest(p):
    """The program's slowest path: the static one, or for loops the slowest crafted packet's."""
    if p["worst_path"] is not None:
        return p["worst_path"], ""
    s = p.get("slowest_packet")
    if s is None:
        return None, ""
    return p["packets"][s["index"]], "pkt "
x86, x86_err = load(x86_file)
nfp, nfp_err = load(nfp_file)
for i, p in enumerate(x86 or []):
    w, how = slowest(p)
    xs = "loops" if w is None else f'{how}{w["cost"]["cycles"]:.0f} cyc -> {rate(w)}'
    if nfp_err:
        m = re.search(r"insn (\d+) of `[^`]*` \(([^)]*)\) cannot run", nfp_err)
        ns = f"cannot offload: {m.group(2)} (insn {m.group(1)})" if m else nfp_err[:70]
    else:
        wn, how = slowest(nfp[i])
        ns = "loops" if wn is None else (
            f'{how}{wn["cost"]["cycles"]:.0f} cyc, {wn["cost"].get("dram_read", 0):.0f}+{wn["cost"].get("dram_atomic", 0):.0f} DRAM -> {rate(wn)} ({wn["bottleneck"]})')
    print(f'{name:<22} {p["program"]:<22} {len(p["blocks"]):>6}  {xs:<34} {ns}')
if x86_err:
    print(f'{name:<22} {"":<22} {"":>6}  error: {x86_err}')
PY
  done
}

bound_table() {
  step "Worst-case throughput of every example on this host's x86 model and the NFP model (linerate bound)" \
    "at most 10 s each: the naive bound (slowest path, possible or not), the slowest satisfiable" \
    "path (SSP) with the action its witness packet takes, and what the search checked." \
    "'unconfirmed': the SSP's path could not be followed by the symbolic engine (the bound stays" \
    "sound); 'incomplete': the time limit came first, and the bound is the best proven by then."
  printf '%-24s %-4s %12s %12s %7s %7s  %s\n' object model "naive Mpps" "SSP Mpps" paths "time s" result
  local obj name target reason
  for obj in examples/*.o; do
    name=$(basename "$obj" .o)
    crafted "$name"
    for target in x86 nfp; do
      if "$bin" bound "$obj" "${prog[@]}" --target "$target" --timeout 10 --json >"$tmp/bound.json" 2>"$tmp/bound-err"; then
        python3 - "$name" "$target" "$tmp/bound.json" <<'PY'
import json, sys
name, target, path = sys.argv[1:4]
d = json.load(open(path))
naive = d["naive"]["pps"] / 1e6 if d.get("naive") else float("nan")
ssp = d.get("ssp")
if ssp:
    w = ssp["witness"]
    result = w.get("action") or "unconfirmed: " + w.get("unconfirmed", "")[:60]
    rate = f'{ssp["pps"] / 1e6:12.4f}'
else:
    bound = (d.get("bound") or {}).get("pps")
    result = "no satisfiable path" if d["complete"] else "incomplete, bound proven so far"
    rate = f'{bound / 1e6:12.4f}' if bound else f'{"-":>12}'
if not d["complete"] and ssp:
    result += " (incomplete)"
print(f'{name:<24} {target:<4} {naive:12.4f} {rate} {d["paths_checked"]:7} {d["elapsed_s"]:7.2f}  {result}')
PY
      else
        reason=$(sed 's/^error: //' "$tmp/bound-err" | head -1)
        reason=$(sed -E 's/.*insn ([0-9]+) of `[^`]*` \(([^)]*)\) cannot run.*/cannot offload: \2 (insn \1)/' <<<"$reason")
        printf '%-24s %-4s %12s %12s %7s %7s  %s\n' "$name" "$target" - - - - "${reason:0:90}"
      fi
    done
  done
}

bound_one() {
  step "A worst-case guarantee with its witness (linerate bound)" \
    "the stateful firewall on the x86 model: the naive bound is a path no packet takes; the" \
    "search proves the slowest satisfiable path (SSP) and writes the packet and map entries" \
    "that drive it, which the kernel then runs."
  "$bin" bound examples/xdp_firewall.o --witness "$tmp/w.pcap" --witness-maps "$tmp/w.json"
  if ((kernel)); then
    # --witness-maps holds one entry set per reported path; the SSP's is the first.
    python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))[0], open(sys.argv[2], "w"))' \
      "$tmp/w.json" "$tmp/ssp-maps.json"
    echo "   the witness in the kernel:"
    "$bin" run examples/xdp_firewall.o --pcap "$tmp/w.pcap" --maps "$tmp/ssp-maps.json" --kernel | grep action
  fi
}

measure_one() {
  step "Estimate against measurement (linerate measure)" \
    "the 5 slowest satisfiable paths of the LPM router, each witness timed in this host's kernel."
  if ((kernel)); then
    "$bin" measure examples/xdp_router.o --paths 5
  else
    echo "   skipped: needs BPF (root)"
  fi
}

optimize_table() {
  step "Optimization of every example with the rule library (linerate optimize --rules-only)" \
    "each output is loaded in the kernel, run against the input on 2,000 generated packets, and" \
    "proven equivalent as a whole program where Z3 decides within 5 s, before it is written."
  printf '%-24s %8s %8s %8s  %s\n' object before after "time s" checked
  local obj name start
  for obj in examples/*.o; do
    name=$(basename "$obj" .o)
    start=$(date +%s.%N)
    if "$bin" optimize "$obj" -o "$tmp/opt.o" --rules-only --no-measure --witnesses 0 \
        --differential-packets 2000 --prove-timeout 5s --json >"$tmp/opt.json" 2>"$tmp/opt-err"; then
      python3 - "$name" "$tmp/opt.json" "$start" "$(date +%s.%N)" <<'PY'
import json, sys
name, path, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
d = json.load(open(path))
proof = {"equivalent": "proven equivalent", "unknown": "proof undecided", "unchanged": "unchanged"}.get(d["equivalence"]["verdict"], d["equivalence"]["verdict"])
print(f'{name:<24} {d["insns_before"]:8} {d["insns_after"]:8} {t1 - t0:8.2f}  verifier {d["verifier"]}, {d["differential_packets"]} packets identical, {proof}')
PY
    else
      printf '%-24s %8s %8s %8s  %s\n' "$name" - - - "$(sed 's/^error: //' "$tmp/opt-err" | head -1 | cut -c1-90)"
    fi
  done
  echo "   a 10 s search on two of them:"
  for name in xdp_reflector xdp_router; do
    "$bin" optimize "examples/$name.o" -o "$tmp/opt.o" --budget 10 --no-measure --witnesses 0 \
      --differential-packets 2000 --prove-timeout 10s | grep -E "optimized|instructions|proof"
  done
}

optimize_one() {
  step "A synthesized optimization (linerate optimize)" \
    "a 10 s search on the reflector, each rewrite proven in Z3, the output loaded in the kernel," \
    "run against the input on generated packets, proven equivalent whole, and timed before/after."
  # --explain prints every rewrite; the first one shows what they look like.
  "$bin" optimize examples/xdp_reflector.o -o "$tmp/reflector.opt.o" --budget 10 --explain \
    | awk '/^  rewrite at/ { if (++rewrites > 1) { hidden = 1 } } !hidden { print }
           END { if (rewrites > 1) printf "  (%d more rewrites: linerate optimize --explain)\n", rewrites - 1 }'
}

hxdp_table() {
  step "hXDP: every example compiled for the Sephirot core (linerate hxdp)" \
    "4 lanes; its instruction ROM written and checked back (row rules, and 200 packets through" \
    "the cycle model against the interpreter), and its worst case bounded with the rows per edge."
  printf '%-24s %6s %6s %6s %6s %10s  %s\n' object insns rows ratio IPC "worst Mpps" check
  local obj name verdict
  for obj in examples/*.o; do
    name=$(basename "$obj" .o)
    if "$bin" hxdp "$obj" -o "$tmp/$name.rom" --timeout 20 --json >"$tmp/hxdp.json" 2>"$tmp/hxdp-err"; then
      if "$bin" hxdp check "$tmp/$name.rom" --source "$obj" --json >"$tmp/check.json" 2>"$tmp/check-err"; then
        verdict=ok
      else
        verdict="FAILED: $(sed 's/^error: //' "$tmp/check-err" | head -1)"
      fi
      python3 - "$name" "$tmp/hxdp.json" "$tmp/check.json" "$verdict" <<'PY'
import json, sys
name, path, check_path, verdict = sys.argv[1:5]
d = json.load(open(path))
c = json.load(open(check_path)) if verdict == "ok" else None
w = d.get("worst_case") or {}
worst = f'{w["pps"] / 1e6:10.2f}' if w.get("pps") else f'{"-":>10}'
checked = f'{len(c["violations"])} violations, {len(c["mismatches"])}/{c["packets_checked"]} packets differ' if c else verdict
print(f'{name:<24} {d["ebpf_insns"]:6} {d["vliw_rows"]:6} {d["ebpf_insns"] / d["vliw_rows"]:6.2f} {d["static_ipc"]:6.2f} {worst}  {checked}')
PY
    else
      printf '%-24s %6s %6s %6s %6s %10s  %s\n' "$name" - - - - - "$(sed 's/^error: //' "$tmp/hxdp-err" | head -1 | cut -c1-90)"
    fi
  done
  "$bin" hxdp examples/xdp_reflector.o --no-worst-case --simulate examples/xdp_reflector.packets | tail -4
}

hxdp_one() {
  step "hXDP: the reflector compiled for the Sephirot FPGA core (linerate hxdp)" \
    "its VLIW schedule row by row, the ROM written and checked back against the interpreter, and" \
    "its worst case on the core."
  "$bin" hxdp examples/xdp_reflector.o -o "$tmp/reflector.rom" --timeout 20
  "$bin" hxdp check "$tmp/reflector.rom" --source examples/xdp_reflector.o
}

p4_all() {
  step "P4 (linerate p4 latency): every P4 example's paper 001 parameters and its latency" \
    "on the Agilio CX model (Table II plus Eq. 1)."
  local p4 name
  for p4 in examples/p4/*.p4; do
    "$bin" p4 latency "$p4"
  done
  step "P4 -> XDP (linerate p4 compile): every P4 example compiled with its table entries" \
    "the firewall's packets run in the interpreter and in the kernel."
  for p4 in examples/p4/*.p4; do
    name=$(basename "$p4" .p4)
    "$bin" p4 compile "$p4" --entries "examples/p4/$name.entries.json" -o "$tmp/$name.o" | head -1
  done
  p4_firewall_runs
}

p4_one() {
  step "P4: a firewall's latency estimate and its compilation to XDP (linerate p4)" \
    "paper 001's model on the Agilio CX, then the P4 program compiled with its table entries to" \
    "an XDP object, whose packets run in the interpreter and in the kernel."
  "$bin" p4 latency examples/p4/l3_fwd_firewall.p4
  "$bin" p4 compile examples/p4/l3_fwd_firewall.p4 --entries examples/p4/l3_fwd_firewall.entries.json \
    -o "$tmp/l3_fwd_firewall.o" | head -1
  p4_firewall_runs
}

# p4_firewall_runs: the compiled firewall's packets, one action per packet, in each engine.
p4_firewall_runs() {
  local engine flags
  for engine in interpreter kernel; do
    flags=()
    if [ "$engine" = kernel ]; then
      ((kernel)) || continue
      flags=(--kernel)
    fi
    printf '%-12s ' "$engine:"
    "$bin" run "$tmp/l3_fwd_firewall.o" --packets examples/p4/l3_fwd_firewall.packets \
      --maps "$tmp/l3_fwd_firewall.maps.json" "${flags[@]}" | awk '/^action/ { print $2 }' | paste -sd' '
  done
}

# colocate_sim QUOTA: profiles the simulated SmartNIC's five NFs and trains their models.
colocate_sim() {
  local nf profiles=()
  for nf in flowstats nat flowmonitor nids ipcomp; do
    "$bin" colocate profile "$nf" --backend sim --quota "$1" --random -o "$tmp/$nf.colo.json" --json \
      >/dev/null
    profiles+=("$tmp/$nf.colo.json")
  done
  "$bin" colocate train "${profiles[@]}" -o "$tmp/sim-models.json"
  "$bin" colocate predict "$tmp/sim-models.json" --target nids --flows 1000 --mtbr 1200 \
    --competitor flowmonitor@1000,1500,1200 --competitor flowstats@1000000
}

colocate_all() {
  step "Co-location (linerate colocate)" \
    "the simulated SmartNIC's five NFs profiled, trained, one predicted next to two competitors" \
    "with the bottleneck named, 5 short arrival sequences placed against the exact optimum; then" \
    "the flow-table example profiled on this host (NF on CPU 0, memory benchmarks on CPU 1; a" \
    "small quota) and predicted beside a 64 MiB stream."
  colocate_sim 300
  "$bin" colocate place "$tmp/sim-models.json" --random 5 --length 20
  if ((kernel)); then
    "$bin" colocate profile examples/xdp_flow_huge.o --backend host --quota 24 \
      -o "$tmp/flow_huge.colo.json"
    "$bin" colocate train "$tmp/flow_huge.colo.json" -o "$tmp/host-models.json"
    "$bin" colocate predict "$tmp/host-models.json" --target xdp_flow_huge --flows 100000 \
      --membench 64,1e10,stream
  fi
}

colocate_one() {
  step "Co-location: what an NF does next to others on one SmartNIC (linerate colocate)" \
    "the simulated SmartNIC's five NFs profiled and trained, then the NIDS predicted next to a" \
    "regex-heavy flow monitor and a flow-stats NF, with the bottleneck named."
  colocate_sim 150
}

host_model() {
  step "This host's x86 model (--target x86)" \
    "x86 figures are this host's: its model is calibrated on first use (about 25 s, a progress" \
    "bar on a terminal) and cached by host fingerprint; later commands read it at once."
  "$bin" cost examples/xdp_filter.o >/dev/null # calibrates if needed, with its progress bar
  "$bin" cost examples/xdp_filter.o --json >"$tmp/host.json"
  python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))["model_host"]
print("   model:", h["origin"], h.get("model_file") or "", "| fingerprint", h["host_fingerprint"])
print("   calibrated:", h.get("calibrated") or "unknown", "| this host:", "yes" if h["this_host"] else "no")
if h.get("warning"): print("   warning:", h["warning"])' "$tmp/host.json"
}

reports() {
  step "Reports (linerate report --quick): one HTML page per program and an index in reports/" \
    "worst case per device model with its control-flow graph and bound over time, estimate" \
    "against measurement, listing, optimizer rewrites, hXDP schedule; searches stop after 2 s" \
    "here (the page says which are incomplete). Open reports/index.html."
  "$bin" report "$@" -o reports --quick
}

agreement_table
host_model
if [ "$mode" = all ]; then
  cost_table
  bound_table
  optimize_table
  hxdp_table
  p4_all
  colocate_all
  reports examples/*.o
else
  bound_one
  measure_one
  optimize_one
  hxdp_one
  p4_one
  colocate_one
  reports examples/xdp_filter.o examples/xdp_firewall.o examples/xdp_path_explosion.o
fi
step_done

echo
echo "Done in $((SECONDS - job_start)) s."
if [ "$mode" = tour ]; then
  echo "The complete run, every capability on every example (about 13 minutes):"
  echo "  bash scripts/run-examples.sh --all"
  echo "Every command and its options: target/release/linerate --help, and README.md."
fi
