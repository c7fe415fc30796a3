#!/usr/bin/env python3
"""opperf_peer_target.py: the target check of scripts/opperf-peer-report (issue 20's rule).

Among the cases of one `opperf run --baseline ... --format json` report where the peer takes at
least FLOOR_US per call, the geometric mean of ours/peer and every case above MAX_RATIO. One
ratio of a memory-bound case on a shared VM can move 2x between runs, so every case above the
line is measured again (each re-run interleaving ours and the peer's calls of that case) and
stays counted unless the median of our re-run times over the peer's faster median (first run or
re-runs) is at or below the line. The peer's faster figure is taken because its time depends on
its process's history too (a fresh process pays page faults on a large clone a long-running one
does not): a re-run can only confirm a case, never flatter us with a slower peer.

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
    again = {}  # case key -> [(ours, peer)] medians of the re-runs
    for path in reruns:
        for r in load(path)["results"]:
            p = r.get("peer") or {}
            if r.get("status") == "ok" and p.get("status") == "ok" and p.get("median"):
                again.setdefault(key(r), []).append((r["time"]["median"], p["median"]))

    def confirmed(r):
        """Our re-runs' median over the peer's faster median; None without a re-run."""
        rr = again.get(key(r))
        if not rr:
            return None
        return median([o for o, _ in rr]) / min(r["peer"]["median"], median([q for _, q in rr]))

    gm = math.exp(sum(math.log(x[0]) for x in rows) / len(rows))
    over = sorted((x for x in rows if x[0] > worst), key=lambda x: -x[0])
    kept = [x for x in over if confirmed(x[1]) is None or confirmed(x[1]) > worst]
    print(f"**Target** (cases where the peer takes >= {floor_s * 1e6:g} us per call): {len(rows)} cases, "
          f"geometric mean of ours/peer **{gm:.3f}** (first run); **{len(over)}** above {worst:g} in the "
          f"first run, **{len(kept)}** of them still above it after {nreruns} re-run(s) of each (the median "
          f"of our re-run times over the peer's faster median, first run or re-runs; a case without a "
          f"re-run result stays counted).")
    if not over:
        return
    print()
    print("| ours/peer (first run) | re-runs' ratios | confirmed | ours (first; re-runs) | peer (first; re-runs) "
          "| op | pass | dtype | case |")
    print("|---:|---|---:|---:|---:|---|---|---|---|")
    us = lambda t: f"{t * 1e6:.1f} us"
    for ratio, r in over:
        rr = again.get(key(r), [])
        c = confirmed(r)
        cs = "none" if c is None else (f"**{c:.2f}**" if c > worst else f"{c:.2f}")
        desc = (r.get("spec") or r.get("params") or "")[:70]
        print(f"| {ratio:.2f} | {' '.join(f'{o / q:.2f}' for o, q in rr) or '-'} | {cs} | "
              f"{us(r['time']['median'])}; {us(median([o for o, _ in rr])) if rr else '-'} | "
              f"{us(r['peer']['median'])}; {us(median([q for _, q in rr])) if rr else '-'} | "
              f"{r['op']} | {r['pass']} | {r['dtype']} | {desc} |")


def main(argv):
    if len(argv) >= 6 and argv[1] == "configs":
        cmd_configs(*argv[2:6])
    elif len(argv) >= 6 and argv[1] == "report":
        cmd_report(argv[2], argv[3], argv[4], argv[5], argv[6:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
