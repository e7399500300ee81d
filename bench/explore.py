#!/usr/bin/env python3
"""bench/explore.py: the explorer's update latency per panel -- what a slider
move costs a user -- measured end to end over HTTP (the request, the fork,
the lesson on the real engine, its JSON and SVG).  For each lesson it walks
the first slider over all its values, ROUNDS times, and prints the median and
the worst against issue 16's 300 ms.  Usage: bench/explore.py [SERVESIM]
[ROUNDS] (default build/cli/servesim, 3 rounds)."""
import json
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

root = Path(__file__).resolve().parent.parent
servesim = sys.argv[1] if len(sys.argv) > 1 else str(root / "build" / "cli" / "servesim")
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
BUDGET_MS = 300


def main():
    server = subprocess.Popen([servesim, "explore", "--port", "0"], stdout=subprocess.PIPE,
                              text=True)
    try:
        url = re.search(r"http://\S+", server.stdout.readline()).group(0)
        lessons = json.load(urllib.request.urlopen(url + "api/lessons"))["lessons"]
        print(f"{'lesson':<18}{'requests':>9}{'median ms':>11}{'worst ms':>10}  verdict")
        for lesson in lessons:
            control = lesson["controls"][0]
            times = []
            for _ in range(rounds):
                for value in control["values"]:
                    start = time.perf_counter()
                    urllib.request.urlopen(
                        f"{url}api/lesson?name={lesson['id']}&{control['name']}={value}").read()
                    times.append(1e3 * (time.perf_counter() - start))
            median = statistics.median(times)
            verdict = "ok" if median < BUDGET_MS else "over"
            print(f"{lesson['id']:<18}{len(times):>9}{median:>11.0f}{max(times):>10.0f}  "
                  f"{verdict} (median < {BUDGET_MS} ms)")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait()


main()
