#!/usr/bin/env python3
"""Rewrites each ```text block of README.md and docs/*.md from what the sh
block before it prints (tests/test_docs.py --update; the test says the
conventions and checks the pages agree).

usage: docs/update_docs.py [path/to/servesim] [PAGE.md...]   (default: build/cli/servesim)
"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
args = sys.argv[1:]
servesim = args.pop(0) if args and not args[0].endswith(".md") else str(root / "build/cli/servesim")
sys.exit(subprocess.run([sys.executable, str(root / "tests/test_docs.py"), servesim, str(root),
                         "--update", *args]).returncode)
