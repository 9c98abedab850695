"""Runs `linerate optimize --json` on every example and prints the issue's table (see bench/optimize)."""
import glob, json, os, shutil, statistics, subprocess, sys, tempfile, time

# A private copy of the binary: rebuilding during a long run must not change it midway.
_bin_dir = tempfile.mkdtemp(prefix="bench-optimize-")
BIN = os.path.join(_bin_dir, "linerate")
shutil.copy2("target/release/linerate", BIN)
budget = os.environ.get("OPT_BUDGET", "60")
goal = os.environ.get("OPT_GOAL", "size")
only = os.environ.get("OPT_ONLY", "")


def insns(path):
    out = subprocess.run([BIN, "inspect", path, "--json"], capture_output=True, text=True)
    if out.returncode != 0:
        return None
    progs = json.loads(out.stdout).get("programs", [])
    return progs[0]["insns"] if progs else None


def optimize(path, extra):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.o")
        cmd = [BIN, "optimize", path, "-o", out, "--json", "--goal", goal] + extra
        started = time.time()
        r = subprocess.run(cmd, capture_output=True, text=True)
        took = time.time() - started
        if r.returncode != 0:
            return None, took, r.stderr.strip().splitlines()[-1:] or ["?"]
        return json.loads(r.stdout), took, None


def pct(a, b):
    return 100.0 * (a - b) / a if a else 0.0


rows, failures = [], []
examples = sorted(glob.glob("examples/*.o"))
for path in examples:
    name = os.path.basename(path)[:-2]
    if only and only not in name:
        continue
    packets = f"examples/{name}.packets"
    maps = f"examples/{name}.maps.json"
    extra = ["--packets", packets] if os.path.exists(packets) else []
    extra += ["--maps", maps] if os.path.exists(maps) else []
    o2 = insns(path)
    os_path = f"examples/os/{name}.o"
    osz = insns(os_path) if os.path.exists(os_path) else None
    rules, rules_s, err = optimize(path, extra + ["--rules-only", "--no-measure", "--witnesses", "0", "--no-prove"])
    full, full_s, err2 = optimize(path, extra + ["--budget", budget, "--trials", os.environ.get("OPT_TRIALS", "31")])
    if full is None or rules is None:
        failures.append((name, (err or err2 or ["?"])[0]))
        continue
    rows.append(dict(name=name, o2=o2, os=osz, rules=rules, rules_s=rules_s, full=full, full_s=full_s))
    f = full
    print(f"{name}: {f['insns_before']} -> {f['insns_after']} ({pct(f['insns_before'], f['insns_after']):.1f}%), "
          f"rules-only {rules['insns_after']} in {rules['search']['seconds']:.3f}s", file=sys.stderr, flush=True)

hdr = ["example", "-O2", "-Os", "rules", "rules s (cmd s)", "opt", "red %", "est ns", "meas ns (95% CI of diff)", "SSP Mpps", "disc", "proof", "cand/s", "eq/s", "hit %", "rules"]
table = []
for r in rows:
    f = r["full"]
    s = f["search"]
    ci = f.get("measured_ns_difference_ci95") or [0, 0]
    verdict = "better" if ci[1] < 0 else ("WORSE" if ci[0] > 0 else "same")
    wb, wa = f.get("worst_case_pps_before"), f.get("worst_case_pps_after")
    ssp = f"{wb/1e6:.2f}->{wa/1e6:.2f}" if wb and wa else "-"
    e = f.get("equivalence") or {}
    proof = {"equivalent": f"eq {e.get('seconds') or 0:.1f}s", "unknown": f"unk {e.get('seconds') or 0:.1f}s"}.get(e.get("verdict"), e.get("verdict", "-"))
    table.append([
        r["name"], str(f["insns_before"]), str(r["os"] or "-"), str(r["rules"]["insns_after"]), f"{r['rules']['search']['seconds']:.3f} ({r['rules_s']:.1f})",
        str(f["insns_after"]), f"{pct(f['insns_before'], f['insns_after']):.1f}",
        f"{f['est_ns_before']:.1f}->{f['est_ns_after']:.1f}",
        f"{f['measured_ns_before']:.1f}->{f['measured_ns_after']:.1f} ({ci[0]:+.1f},{ci[1]:+.1f}) {verdict}",
        ssp, str(len(f["discarded"])), proof, f"{s['candidates_per_s']:.0f}", f"{s['equivalence_checks_per_s']:.1f}",
        f"{100*s['cache_hit_rate']:.0f}", str(f["rules_applied"]),
    ])
widths = [max(len(h), *(len(t[i]) for t in table)) if table else len(h) for i, h in enumerate(hdr)]
print("  ".join(h.ljust(w) for h, w in zip(hdr, widths)))
for t in table:
    print("  ".join(c.ljust(w) for c, w in zip(t, widths)))
if rows:
    red = [pct(r["full"]["insns_before"], r["full"]["insns_after"]) for r in rows]
    rred = [pct(r["full"]["insns_before"], r["rules"]["insns_after"]) for r in rows]
    vs_os = [pct(min(r["o2"], r["os"]), r["full"]["insns_after"]) for r in rows if r["os"]]
    better = sum(1 for r in rows if (r["full"].get("measured_ns_difference_ci95") or [0, 0])[1] < 0)
    worse = sum(1 for r in rows if (r["full"].get("measured_ns_difference_ci95") or [0, 0])[0] > 0)
    ssp_up = sum(1 for r in rows if r["full"].get("worst_case_pps_before") and r["full"].get("worst_case_pps_after")
                 and r["full"]["worst_case_pps_after"] > r["full"]["worst_case_pps_before"] * 1.0001)
    disc = sum(len(r["full"]["discarded"]) + len(r["rules"]["discarded"]) for r in rows)
    print()
    print(f"goal {goal}, budget {budget}s, {len(rows)} examples")
    print(f"instruction reduction vs clang -O2: mean {statistics.mean(red):.1f}% (median {statistics.median(red):.1f}%, K2 Table 1 mean 13.95%)")
    if vs_os:
        print(f"instruction reduction vs the better of clang -O2/-Os: mean {statistics.mean(vs_os):.1f}% over {len(vs_os)} examples")
    print(f"rules only: mean {statistics.mean(rred):.1f}%; applying the library took a median {statistics.median(r['rules']['search']['seconds'] for r in rows):.3f}s "
          f"(max {max(r['rules']['search']['seconds'] for r in rows):.3f}s) per program, the whole command with its 10,000-packet checks (no proof) a median {statistics.median(r['rules_s'] for r in rows):.2f}s")
    print(f"measured latency: better beyond the 95% CI on {better}/{len(rows)}, worse on {worse}/{len(rows)}")
    print(f"worst-case (SSP) throughput improved on {ssp_up}/{len(rows)}")
    print(f"written outputs rejected by the verifier or failing the differential test: 0 (each is checked before it is written); candidates discarded by the final checks: {disc}")
    verdicts = [(r["full"].get("equivalence") or {}).get("verdict") for r in rows]
    out_of_time = sum(1 for r in rows if "ran out" in ((r["full"].get("equivalence") or {}).get("reason") or ""))
    by_proof = sum(1 for r in rows for d in r["full"]["discarded"] if "equivalence check" in d["reason"])
    print(f"whole-program proof of the output: equivalent on {verdicts.count('equivalent')}/{len(rows)}, undecided on {verdicts.count('unknown')} "
          f"({out_of_time} out of time, the rest unmodelled features), unchanged {verdicts.count('unchanged')}; candidates discarded by the proof: {by_proof}")
    tot = lambda k: sum(r["full"]["search"][k] for r in rows)
    secs = sum(r["full"]["search"]["seconds"] for r in rows)
    print(f"search: {tot('candidates')/secs:.0f} candidates/s, {tot('equivalence_checks')/secs:.1f} equivalence checks/s, "
          f"cache hit rate {100*tot('cache_hits')/max(1, tot('cache_hits')+tot('equivalence_checks')):.0f}%, "
          f"{sum(r['full']['rules_applied'] for r in rows)} rules applied")
for name, why in failures:
    print(f"FAILED {name}: {why}")
shutil.rmtree(_bin_dir, ignore_errors=True)
