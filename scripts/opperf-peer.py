#!/usr/bin/python3
# opperf-peer.py: the peer side of `opperf run --baseline torch|numpy`: times opperf's cases
# with PyTorch or NumPy and answers in JSON on stdout. Run it with /usr/bin/python3: Debian's
# python3-torch and python3-numpy import only there (opperf runs $OPPERF_PYTHON, default
# /usr/bin/python3). The operator mapping lives in scripts/opperf_peer_map.py.
#
#   opperf-peer.py REQUEST.json [--dry-run]   answer a request written by opperf (see below)
#   opperf-peer.py --list [torch|numpy]       print the mapping table (opperf op -> peer)
#
# Request: {"library": "torch"|"numpy", "settings": {threads, warmup, warmup_calls, min_time,
# max_time, sample_time, min_runs, max_runs, batch}, "cases": [{id, op, category, dtype, pass,
# check, materialize, inputs: [{name, present, shape, dtype, diff, file, peer_grad_file}], outputs: [{name,
# shape, dtype, inplace, grad_file, peer_file}], params: {name: value as text}}]}.
# Answer: {"library": "torch 1.13.0", "cases": [{id, status ("ok", "no-equivalent: why",
# "error: message"), peer_op, median (s/call), samples, batch, times: [...], check_skip}]};
# or {"fatal": "one line"} when the library cannot be imported.
#
# Timing mirrors opperf's harness (src/harness.c): warm-up for `warmup` seconds (at least one
# call), calls per sample calibrated so a sample lasts `sample_time`, samples until both
# `min_runs` and `min_time` are reached, stopping after `max_time` once 3 samples exist; the
# figure is the median time per call. Inputs come from opperf's .npy files (its fill: the same
# values, so the same work, e.g. valid indices or SPD matrices), converted once before timing.
#
# Passes, as opperf defines them (DESIGN.md, op.h): "fwd" times the forward call; "bwd" times
# only the backward: the forward graph is built once with requires_grad on the differentiable
# inputs, then each call is torch.autograd.grad(outputs, inputs, output_gradients,
# retain_graph=True) (opperf's bwd likewise reuses the forward outputs already computed);
# "both" times forward + backward per call (a training step of the operator). NumPy has no
# backward: bwd/both cases answer "no-equivalent: numpy has no autograd".
# Input gradients are materialised as opperf writes them (each in its own contiguous memory):
# autograd may return a broadcast view (sum) or the output gradient itself (add), no work.
# A case with "materialize": false (opperf's native implementation hands some gradients back
# as views of the output gradient, README "Gradient views") keeps autograd's answer as is.
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def fatal(msg):
    print(json.dumps({"fatal": msg}))
    sys.exit(0)


def load_request(path):
    with open(path) as f:
        return json.load(f)


def set_threads_env(n):
    # Before numpy/torch are imported: OpenBLAS and OpenMP read these at load time.
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[k] = str(n)


def import_library(lib, threads):
    """Returns (module namespace, "name version") or exits with a fatal answer."""
    py = sys.executable
    try:
        import numpy
    except Exception:
        fatal("NumPy is not importable by %s (apt-get install python3-numpy)" % py)
    if lib == "numpy":
        return numpy, "numpy %s" % numpy.__version__
    try:
        import torch
    except Exception:
        fatal("PyTorch is not importable by %s (apt-get install python3-torch)" % py)
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass  # already set in this process
    return torch, "torch %s" % torch.__version__


class Timer:
    """opperf's harness loop, on a Python callable."""

    def __init__(self, st):
        self.warmup = float(st.get("warmup", 0.05))
        self.warmup_calls = int(st.get("warmup_calls", 0))
        self.min_time = float(st.get("min_time", 0.2))
        self.max_time = float(st.get("max_time", 3))
        self.sample_time = float(st.get("sample_time", 0.002))
        self.min_runs = int(st.get("min_runs", 3))
        self.max_runs = int(st.get("max_runs", 0)) or 1000
        self.batch = int(st.get("batch", 0))

    def run(self, fn):
        now = time.perf_counter
        t0 = now()
        calls = 0
        t = t0
        while calls == 0 or (calls < self.warmup_calls if self.warmup_calls > 0 else t - t0 < self.warmup):
            fn()
            calls += 1
            t = now()
        est = (t - t0) / calls
        k = 1
        if self.batch > 0:
            k = self.batch
        elif 0 < est < self.sample_time:
            k = min(int(-(-self.sample_time // est)), 1000000)
        samples = []
        total = 0.0
        start = now()
        rng = range(k)
        while True:
            b = now()
            for _ in rng:
                fn()
            e = now()
            samples.append((e - b) / k)
            total += e - b
            if len(samples) >= self.max_runs:
                break
            if len(samples) >= self.min_runs and total >= self.min_time:
                break
            if now() - start >= self.max_time and len(samples) >= 3:
                break
        s = sorted(samples)
        n = len(s)
        med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
        return med, samples, k


def answer_case(case, lib, mod, timer, dry):
    import opperf_peer_map as pm
    out = {"id": case["id"]}
    entry = pm.lookup(case["op"], lib)
    if isinstance(entry, pm.NoEq):
        out["status"] = "no-equivalent: " + entry.why
        return out
    out["peer_op"] = entry.name
    if lib == "numpy" and case["pass"] != "fwd":
        out["status"] = "no-equivalent: numpy has no autograd (forward only)"
        return out
    if case["pass"] != "fwd" and not entry.grad:
        out["status"] = "no-equivalent: %s" % (entry.nograd or "the peer has no backward for it")
        return out
    if case["dtype"] not in entry.dtypes:
        out["status"] = "no-equivalent: %s not supported by %s" % (case["dtype"], entry.name)
        return out
    if dry:
        out["status"] = "ok"
        return out
    try:
        prep = pm.prepare(case, lib, mod, entry)
        if case.get("check"):
            if entry.nocheck:
                out["check_skip"] = entry.nocheck
            else:
                prep.write_outputs(case)
        fn = prep.timed(case["pass"])
        if lib == "torch" and case["pass"] == "fwd":
            med, samples, k = prep.nograd(lambda: timer.run(fn))
        else:
            med, samples, k = timer.run(fn)
    except pm.Unsupported as e:
        out["status"] = "no-equivalent: %s" % e
        return out
    except Exception as e:  # one case's failure must not lose the others
        msg = str(e).strip().splitlines()
        out["status"] = "error: %s: %s" % (type(e).__name__, msg[0][:150] if msg else "")
        return out
    out.update(status="ok", median=med, samples=len(samples), batch=k, times=samples)
    return out


def list_mapping(lib):
    import opperf_peer_map as pm
    for name, e in sorted(pm.table(lib).items()):
        if isinstance(e, pm.NoEq):
            print("%-26s no equivalent: %s" % (name, e.why))
        else:
            print("%-26s %s%s" % (name, e.name, "" if e.grad or lib == "numpy" else "  (forward only)"))


def main(argv):
    if len(argv) >= 2 and argv[1] == "--list":
        list_mapping(argv[2] if len(argv) > 2 else "torch")
        return 0
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.stderr.write("usage: opperf-peer.py REQUEST.json [--dry-run] | --list [torch|numpy]\n")
        return 2
    req = load_request(argv[1])
    dry = "--dry-run" in argv[2:]
    lib = req.get("library", "torch")
    st = req.get("settings", {})
    threads = int(st.get("threads", 1)) or 1
    set_threads_env(threads)
    mod, libname = import_library(lib, threads)
    timer = Timer(st)
    cases = [answer_case(c, lib, mod, timer, dry) for c in req.get("cases", [])]
    json.dump({"library": libname, "python": sys.version.split()[0], "threads": threads,
               "cases": cases}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
