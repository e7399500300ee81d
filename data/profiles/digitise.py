#!/usr/bin/env python3
"""Hourly request rates of the Azure LLM inference traces of 2024, read
from the figures that Azure's own notebook drew of them.

The traces themselves (AzureLLMInferenceTrace_{code,conv}_1week.csv, 17M and
27M rows) live only in Azure's blob storage, which the machines servesim is
built on cannot reach. The repository's notebook
(analysis/AzureLLMInferenceDataset2024.ipynb, cell "Analysis over time")
stores its plots of invocations per minute over the week as PNGs; the two
here are those outputs, unchanged. This script reads the plotted line back:

- the axes' frame (the black spines) and the grey grid lines at every 1,000
  invocations give the y scale, fitted by least squares (the grid is
  matplotlib's, so a residual of more than a pixel means a misread);
- the x axis spans the week exactly: pandas sets the limits to the first
  and last minute (day ticks fall every 199.6 px, checked below);
- each pixel column holds about 7.2 minutes; the line's blue pixels there
  span the smallest to the largest count of those minutes, and the
  column's value is the middle of that span;
- an hour's rate is the mean of its columns, weighted by overlap.

The digitised weekly mean is then set beside the one known exactly, the
row count over the week (the notebook prints both tables' lengths), and
the hours are scaled by their ratio so that they sum to the trace's count.

Usage: python3 digitise.py   (writes azure-{conv,code}-2024-week.csv here)
Only the standard library: PNG decoding is zlib and the five filters."""

import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
WEEK_MIN = 7 * 24 * 60

# name, figure, the grid lines' values top down, rows in the trace
TRACES = [
    ("conv", "azure-conv-2024-week.png", [5000, 4000, 3000, 2000, 1000], 27303999),
    ("code", "azure-code-2024-week.png", [6000, 5000, 4000, 3000, 2000, 1000], 16803695),
]


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"{path}: not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
    if (depth, ctype, interlace) != (8, 6, 0):
        sys.exit(f"{path}: expected 8-bit RGBA, not interlaced")
    raw, bpp, stride = zlib.decompress(idat), 4, w * 4
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pred) & 255
        rows.append([tuple(line[4 * x:4 * x + 4]) for x in range(w)])
        prev = line
    return w, h, rows


def dark(p):
    return p[0] < 60 and p[1] < 60 and p[2] < 60


def grey(p):
    return 160 <= p[0] <= 190 and abs(p[0] - p[1]) < 4 and abs(p[1] - p[2]) < 4


def blue(p):
    """matplotlib's first colour, #1f77b4, or an antialiased edge of it."""
    return p[2] - p[0] > 60 and (255 - p[0]) / (255 - 0x1F) > 0.35


def frame(px, w, h):
    spines_x = [x for x in range(w) if sum(dark(px[y][x]) for y in range(h)) > 200]
    spines_y = [y for y in range(h) if sum(dark(px[y][x]) for x in range(w)) > 500]
    grid = [y for y in range(h) if sum(grey(px[y][x]) for x in range(w)) > 300]
    return spines_x[0], spines_x[-1], spines_y[0], spines_y[-1], grid


def y_scale(grid, bottom, values):
    """Least squares through the grid lines and the frame's foot (0)."""
    ys, vs = grid + [bottom], values + [0]
    if len(ys) != len(vs):
        sys.exit(f"found {len(grid)} grid lines, expected {len(values)}")
    my, mv = sum(ys) / len(ys), sum(vs) / len(vs)
    k = sum((y - my) * (v - mv) for y, v in zip(ys, vs)) / sum((y - my) ** 2 for y in ys)
    resid = max(abs(mv + k * (y - my) - v) for y, v in zip(ys, vs))
    return (lambda y: mv + k * (y - my)), -k, resid


def hourly(path, values, hours=168):
    w, h, px = read_png(path)
    left, right, top, bottom, grid = frame(px, w, h)
    value, per_px, resid = y_scale(grid, bottom, values)
    if resid > per_px:
        sys.exit(f"{path}: the grid is off a straight line by {resid:.1f} (> a pixel)")
    ticks = [x for x in range(left, right + 1) if dark(px[bottom + 2][x])]
    span = right - left
    sums, weights, missing = [0.0] * hours, [0.0] * hours, 0
    for x in range(left + 1, right):
        hit = [y for y in range(top + 1, bottom) if blue(px[y][x])]
        if not hit:
            missing += 1
            continue
        mid = (value(max(hit)) + value(min(hit))) / 2
        a, b = (x - 0.5 - left) / span * hours, (x + 0.5 - left) / span * hours
        for hr in range(max(0, int(a)), min(hours, int(b) + 1)):
            overlap = min(b, hr + 1) - max(a, hr)
            if overlap > 0:
                sums[hr] += overlap * mid
                weights[hr] += overlap
    per_min = [s / wt for s, wt in zip(sums, weights)]
    return per_min, per_px, resid, missing, ticks


def main():
    for name, png, values, rows in TRACES:
        per_min, per_px, resid, missing, ticks = hourly(os.path.join(HERE, png), values)
        digitised = sum(per_min) / len(per_min)
        exact = rows / WEEK_MIN
        scale = exact / digitised
        out = os.path.join(HERE, f"azure-{name}-2024-week.csv")
        with open(out, "w") as f:
            f.write("hour,rate_per_s\n")
            for hr, r in enumerate(per_min):
                f.write(f"{hr},{r * scale / 60:.4f}\n")
        rates = [r * scale / 60 for r in per_min]
        print(f"{name}: {per_px:.2f} invocations/min a pixel, grid residual {resid:.1f}; "
              f"columns without the line: {missing}; day ticks at {ticks}")
        print(f"  digitised mean {digitised:.1f}/min against {exact:.1f}/min from "
              f"{rows:,} rows (x{scale:.4f}); hours {min(rates):.2f} to "
              f"{max(rates):.2f} req/s, mean {sum(rates) / len(rates):.3f}; wrote {out}")


if __name__ == "__main__":
    main()
