#!/usr/bin/env python3
"""Rewrites the key reference in docs/scenario.md (between the keys markers)
with what `servesim keys` prints.  tests/test_scenario.c checks they agree.

usage: docs/update_keys.py [path/to/servesim]   (default: build/cli/servesim)
"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
servesim = sys.argv[1] if len(sys.argv) > 1 else str(root / "build/cli/servesim")
keys = subprocess.run([servesim, "keys"], check=True, capture_output=True, text=True).stdout
doc = root / "docs/scenario.md"
text = doc.read_text()
begin, end = "<!-- keys:begin -->\n", "<!-- keys:end -->"
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
doc.write_text(head + begin + keys + end + tail)
