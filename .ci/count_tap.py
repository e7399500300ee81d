#!/usr/bin/env python3
"""Counts TAP results in meson's testlog.json files and prints
"N passed, N failed, N skipped" for each.  Every `ok` line is a pass and
every `not ok` line a failure; a test program that ended badly (crash,
timeout, non-zero exit) after its last TAP line, or printed none, counts one
more failure; one that skipped itself (TAP "1..0 # SKIP", meson's SKIP: the
invariant checks in a build without them) counts as skipped.
The log holds the environment, so only the counts are printed.

usage: count_tap.py TESTLOG.json [LABEL]
"""
import json
import re
import sys

TAP = re.compile(r"^(not ok|ok)\b")


def count(path):
    passed = failed = skipped = 0
    with open(path) as f:
        for line in f:
            test = json.loads(line)
            ok = bad = 0
            for out in (test.get("stdout") or "").splitlines():
                m = TAP.match(out)
                if m:
                    ok += m.group(1) == "ok"
                    bad += m.group(1) == "not ok"
            passed += ok
            failed += bad
            if test.get("result") == "SKIP" and ok == bad == 0:
                skipped += 1
            elif test.get("result") != "OK" and bad == 0:
                failed += 1  # crashed, timed out or exited non-zero with no failed assertion
    return passed, failed, skipped


if __name__ == "__main__":
    p, f, s = count(sys.argv[1])
    label = sys.argv[2] + ": " if len(sys.argv) > 2 else ""
    print(f"{label}{p} passed, {f} failed" + (f", {s} skipped" if s else ""))
    sys.exit(1 if f else 0)
