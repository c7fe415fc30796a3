#!/usr/bin/env python3
"""opperf_peer_target.py: the target check of scripts/opperf-peer-report (issue 20's rule).

Among the cases of one `opperf run --baseline ... --format json` report where the peer takes at
least FLOOR_US per call, the geometric mean of ours/peer and every case above MAX_RATIO. One
ratio of a memory-bound case on a shared VM can move 2x between runs, so a case is only counted
above the line when the median of its re-runs (each one interleaving ours and the peer's calls
of that case) is too:

  opperf_peer_target.py configs RUN.json FLOOR_US MAX_RATIO OUTSTEM
      writes OUTSTEM-PASS.json (an `opperf run --config` file) for each pass that has cases
      above MAX_RATIO, and prints the passes, one per line (nothing when no case is above)
  opperf_peer_target.py report RUN.json FLOOR_US MAX_RATIO RERUNS [RERUN.json ...]
      prints the Markdown target section: the first run's count, the count confirmed by the
      median of the re-runs, and a table of the listed cases with every ratio
"""
import json
import math
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def key(r):
    return (r["op"], r["pass"], r["dtype"], r.get("spec") or r.get("params") or "")


def eligible(doc, floor_s):
    """(ratio, record) of every case the target counts."""
    if "unavailable" in str(doc.get("context", {}).get("peer", "")):
        sys.exit("opperf-peer-report: the peer did not run (%s): see opperf's message above"
                 % doc["context"]["peer"])
    out = []
    for r in doc["results"]:
        p = r.get("peer") or {}
        if r.get("status") != "ok" or p.get("status") != "ok" or not p.get("ratio"):
            continue
        if p.get("median", 0) < floor_s:
            continue
        out.append((p["ratio"], r))
    return out


def as_config_case(r):
    """The case of record r as an `opperf run --config` entry: its inputs by name (the input
    tensors' shapes) and every other name=value of its spec as a parameter."""
    ins = {t["name"]: t["shape"] for t in r.get("tensors", []) if t.get("role") == "in"}
    params = {}
    for tok in (r.get("spec") or "").split():
        name, eq, val = tok.partition("=")
        if eq and name not in ins:
            params[name] = val
    for tok in (r.get("params") or "").split():
        name, eq, val = tok.partition("=")
        if eq:
            params[name] = val
    return {"op": r["op"], "dtype": r["dtype"], "inputs": ins, "params": params}


def cmd_configs(run, floor_us, max_ratio, stem):
    rows = eligible(load(run), float(floor_us) * 1e-6)
    by_pass = {}
    for ratio, r in rows:
        if ratio > float(max_ratio):
            by_pass.setdefault(r["pass"], []).append(as_config_case(r))
    for p, cases in sorted(by_pass.items()):
        with open(f"{stem}-{p}.json", "w") as f:
            json.dump(cases, f, indent=1)
        print(p)


def median(xs):
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def cmd_report(run, floor_us, max_ratio, nreruns, reruns):
    floor_s, worst = float(floor_us) * 1e-6, float(max_ratio)
    rows = eligible(load(run), floor_s)
    if not rows:
        print(f"**Target:** no case where the peer takes at least {floor_s * 1e6:g} us.")
        return
    again = {}  # case key -> ratios of the re-runs
    for path in reruns:
        for r in load(path)["results"]:
            p = r.get("peer") or {}
            if r.get("status") == "ok" and p.get("status") == "ok" and p.get("ratio"):
                again.setdefault(key(r), []).append(p["ratio"])
    gm = math.exp(sum(math.log(x[0]) for x in rows) / len(rows))
    over = sorted((x for x in rows if x[0] > worst), key=lambda x: -x[0])
    kept = [x for x in over if again.get(key(x[1])) and median(again[key(x[1])]) > worst]
    unconfirmed = [x for x in over if not again.get(key(x[1]))]
    print(f"**Target** (cases where the peer takes >= {floor_s * 1e6:g} us per call): {len(rows)} cases, "
          f"geometric mean of ours/peer **{gm:.3f}** (first run); **{len(over)}** above {worst:g} in the "
          f"first run, **{len(kept) + len(unconfirmed)}** of them also above it in the median of "
          f"{nreruns} re-run(s) of each listed case (each re-run interleaves ours and the peer's "
          f"calls of that case)" + (f", {len(unconfirmed)} without a re-run result" if unconfirmed else "")
          + ".")
    if not over:
        return
    print()
    print("| ours/peer (first run) | re-runs | median of re-runs | op | pass | dtype | case | ours | peer |")
    print("|---:|---|---:|---|---|---|---|---:|---:|")
    for ratio, r in over:
        rr = again.get(key(r), [])
        med = f"**{median(rr):.2f}**" if rr and median(rr) > worst else (f"{median(rr):.2f}" if rr else "none")
        desc = (r.get("spec") or r.get("params") or "")[:70]
        print(f"| {ratio:.2f} | {' '.join(f'{x:.2f}' for x in rr) or '-'} | {med} | {r['op']} | {r['pass']} | "
              f"{r['dtype']} | {desc} | {r['time']['median'] * 1e6:.1f} us | {r['peer']['median'] * 1e6:.1f} us |")


def main(argv):
    if len(argv) >= 6 and argv[1] == "configs":
        cmd_configs(*argv[2:6])
    elif len(argv) >= 6 and argv[1] == "report":
        cmd_report(argv[2], argv[3], argv[4], argv[5], argv[6:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
