#!/usr/bin/env python3
"""Regenerates the figures docs/analysis.md shows, docs/figures/KIND.svg, one
per kind of `servesim plot`, from seeded runs of examples/quickstart.json made
with the built servesim (build/cli/servesim by default), and the step
pipeline's two of docs/cost-models.md from a hand-worked trace.  The figures only
change when the engine or the drawing does.  Usage: docs/update_figures.py
[SERVESIM]"""
import subprocess
import sys
import tempfile
from pathlib import Path

root = Path(__file__).resolve().parent.parent
servesim = sys.argv[1] if len(sys.argv) > 1 else str(root / "build" / "cli" / "servesim")
quick = str(root / "examples" / "quickstart.json")
out = root / "docs" / "figures"


def sv(cwd, *args):
    subprocess.run([servesim, *args], check=True, stdout=subprocess.DEVNULL, cwd=cwd)


def main():
    out.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # relative names: a figure keeps its file's name as metadata, and the
        # same name each time keeps the figures the same
        rates, users, runs = "rates.db", "users.db", "runs.db"
        # an open-loop sweep to past saturation, three seeds a point
        sv(tmp, "sweep", quick, "-o", rates, "--quiet", "-j", "2", "--seeds", "3",
           "--vary", "workload.arrival.rate_per_s=2:32:x2", "--set", "stop.requests=1500")
        # a closed-loop sweep over users
        sv(tmp, "sweep", quick, "-o", users, "--quiet", "-j", "2",
           "--vary", "workload.arrival.users=1:256:x4", "--set", "stop.requests=1500",
           "--set", 'workload.arrival={"process": "closed", "users": 1}', "--set", "warmup_s=2")
        # two rates, every iteration recorded
        for rate in ("8", "14"):
            sv(tmp, "run", quick, "-o", runs, "--quiet", "--record-iterations",
               "--set", f"workload.arrival.rate_per_s={rate}", "--set", "stop.requests=1000")
        figures = [
            ("latency-load", rates, []),
            ("throughput-concurrency", users, []),
            ("cdf", runs, ["--run", "1", "--run", "2"]),
            ("timeline", runs, ["--run", "2"]),
            ("slo-curve", runs, ["--run", "1", "--run", "2"]),
        ]
        for kind, db, options in figures:
            sv(tmp, "plot", db, kind, "-o", str(out / f"{kind}.svg"), *options)
        # the step pipeline: docs/cost-models.md's hand-worked light-load
        # timeline (tests/test_pipeline.c), asynchronous then synchronous
        (Path(tmp) / "light.csv").write_text(
            "arrival_time_s,input_tokens,output_tokens\n0,100,1000\n0.0355,100,50\n")
        (Path(tmp) / "pipeline.json").write_text(PIPELINE)
        for mode in ("true", "false"):
            sv(tmp, "run", "pipeline.json", "-o", "pipeline.db", "--quiet", "--record-iterations",
               "--set", f"cluster.scheduler.async_scheduling={mode}")
        for run, name in (("1", "pipeline"), ("2", "pipeline-sync")):
            sv(tmp, "plot", "pipeline.db", "pipeline", "--run", run, "--request", "1",
               "-o", str(out / f"{name}.svg"))


PIPELINE = """{"name": "pipeline", "seed": 1,
 "cluster": {"engine": "ideal", "gpu": "h100-sxm", "model": "llama-3.1-8b",
  "scheduler": {"max_batch": 2}, "host": {"frontend_s": 0.001, "output_s": 0.0005},
  "cost_model": {"kind": "linear", "iteration_s": 0.002, "prefill_s_per_token": 0.0001,
                 "decode_step_s": 0.008, "decode_s_per_seq": 0}},
 "workload": {"arrival": {"process": "trace", "path": "light.csv"}}}
"""


main()
