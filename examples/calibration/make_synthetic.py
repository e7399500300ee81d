#!/usr/bin/env python3
"""Makes the synthetic measured runs of docs/calibration.md: three runs that
servesim itself simulates on an H100 with *known* coefficients (mfu 0.35,
mbu 0.6, not the catalog's 0.5 and 0.75), each written as servesim's
measured-run JSON that does not say them -- its requests (arrival, lengths,
TTFT, E2E) in a CSV and the engine settings without the two coefficients.
`servesim calibrate` on them must give the coefficients back, and its
k-fold error says how well a profile fitted on two of them predicts the
third.  A fourth run, of another model (Qwen3-8B) on the same GPU and
engine, is held out of the fit: the profile predicts it.  Runs are seeded: the files only change when the engine does.
Usage: examples/calibration/make_synthetic.py [SERVESIM]"""
import json
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

here = Path(__file__).resolve().parent
root = here.parent.parent
servesim = sys.argv[1] if len(sys.argv) > 1 else str(root / "build" / "cli" / "servesim")

TRUTH = {"mfu": 0.35, "mbu": 0.6}
# (file, model, rate per second, median prompt tokens): a light, a middle
# and a heavy load of Llama-3.1-8B, and Qwen3-8B held out
RUNS = [("synthetic1", "llama-3.1-8b", 4, 400), ("synthetic2", "llama-3.1-8b", 8, 800),
        ("synthetic3", "llama-3.1-8b", 12, 1200), ("heldout-qwen3-8b", "qwen3-8b", 6, 600)]


def truth_scenario(k, model, rate, median):
    return {
        "name": f"synthetic {k}", "seed": k,
        "cluster": {"gpu": "h100-sxm", "model": model, "engine": "vllm-v1",
                    "cost_model": dict(TRUTH)},
        "workload": {"arrival": {"process": "poisson", "rate_per_s": rate},
                     "prompt_tokens": {"dist": "lognormal", "median": median, "sigma": 0.8,
                                       "min": 16, "max": 8000},
                     "output_tokens": {"dist": "lognormal", "median": 120, "sigma": 0.6,
                                       "min": 2, "max": 800}},
        "stop": {"requests": 150},
    }


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for k, (stem, model, rate, median) in enumerate(RUNS, 1):
            sc, db = Path(tmp) / f"truth{k}.json", Path(tmp) / f"truth{k}.db"
            sc.write_text(json.dumps(truth_scenario(k, model, rate, median)))
            subprocess.run([servesim, "run", str(sc), "-o", str(db), "-q"], check=True,
                           stdout=subprocess.DEVNULL)
            rows = sqlite3.connect(db).execute(
                "SELECT arrival_s, prompt_tokens, output_tokens, ttft_s, e2e_s FROM "
                "request_metrics WHERE status = 'completed' ORDER BY arrival_s").fetchall()
            with open(here / f"{stem}.csv", "w") as f:
                f.write("arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n")
                for a, p, o, t, e in rows:
                    f.write(f"{a!r},{p},{o},{t!r},{e!r}\n")
            measured = {"name": f"{stem}: {model}, {rate}/s, median prompt {median}",
                        "scenario": {"cluster": {"gpu": "h100-sxm", "model": model,
                                                 "engine": "vllm-v1"}},
                        "requests": f"{stem}.csv"}
            (here / f"{stem}.json").write_text(json.dumps(measured, indent=2) + "\n")


if __name__ == "__main__":
    main()
