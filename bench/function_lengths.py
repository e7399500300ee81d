#!/usr/bin/env python3
"""Function lengths of the C sources, per folder: median, 90th percentile and
longest, in lines from the opening brace to the closing one (both at column
0, as .clang-format lays every function out).  Usage: function_lengths.py
[ROOT] (default: the repository this script is in)."""
import os
import statistics
import sys

FOLDERS = ["util", "models", "workloads", "sim", "record", "analysis", "plan", "lessons",
           "validate", "cli"]


def lengths(path):
    out, start, name, sig = [], None, None, ""
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f):
            if line.startswith("{") and start is None:
                head = sig.split("(")[0].split()
                start, name = i, head[-1].lstrip("*") if head else "?"
            elif line.startswith("}") and start is not None:
                out.append((i - start + 1, name))
                start = None
            if line[:1].isalpha() and "(" in line:
                sig = line  # a signature starts at column 0; its arguments may wrap
    return out


def quantile(v, q):
    v = sorted(v)
    h = (len(v) - 1) * q
    lo = int(h)
    return v[lo] + (h - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    print(f"{'folder':10} {'functions':>9} {'median':>7} {'p90':>6} {'longest':>8}  longest function")
    every = []
    for folder in FOLDERS:
        d = os.path.join(root, folder)
        if not os.path.isdir(d):
            continue
        fns = []
        for f in sorted(os.listdir(d)):
            if f.endswith(".c"):
                fns += [(n, f"{f}:{name}") for n, name in lengths(os.path.join(d, f))]
        if not fns:
            continue
        every += fns
        n = [x for x, _ in fns]
        top = max(fns)
        print(f"{folder:10} {len(n):9} {statistics.median(n):7.0f} {quantile(n, 0.9):6.0f} "
              f"{top[0]:8}  {top[1]}")
    n = [x for x, _ in every]
    print(f"{'all':10} {len(n):9} {statistics.median(n):7.0f} {quantile(n, 0.9):6.0f} {max(n):8}")


main()
