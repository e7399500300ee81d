#!/usr/bin/env python3
"""Every command and output the docs show, run and compared, so that the
pages cannot drift from the binary.

usage: test_docs.py SERVESIM SOURCE_ROOT [--update] [PAGE.md...]

The pages are README.md and docs/*.md.  Their fenced blocks follow three
conventions (the README's Documentation section says so in short):

  ```sh      commands a reader types.  Each line that starts with
             `servesim` (or `build/cli/servesim`; or `sqlite3`, a query on a
             database the page made; or `mpirun`, when servesim has MPI),
             and each such command of a `&&`
             chain (the README's quick start), is run, in order, by bash
             in a scratch folder of the page's own where the repository's
             top-level folders (data/, examples/, tests/, ...) are links,
             so a page's commands build on each other (run writes runs.db,
             report reads it) and nothing lands in the repository.  A
             trailing `\\` joins lines.  The exit status must be 0, or N for
             a line whose comment says `# exit N` (a refusal the page shows).
             Other lines (apt-get, meson, mpirun on a cluster) are what the
             README's setup and .ci/run do, and are not run here.
  ```text    right after a sh block: what its servesim lines print, one
             after the other (each line's stdout then stderr), compared line by line, trailing blanks
             aside.  A line that is just `...` stands for any number of
             lines (an excerpt); `...` inside a line, for any text there (a
             wall time).  Further text blocks before the next other block
             are excerpts of the same output.
  ```usage   synopses: for each `servesim COMMAND ...` line (indented lines
             continue it), every --option it names must be in the help of
             `servesim COMMAND --help`.
  ```sql     queries on the tables: each is run on a database of
             examples/agents.json (iterations recorded) and must succeed.
  ```record  a dated measurement of an earlier version, kept as history
             (the prose says when): not re-run.
  ```json, ```csv, ```diagram ...  shown, not run: any other tag names what
             the block holds.  An untagged block, or a text block that does
             not follow a sh block, is an error: an output must say which
             command prints it.

--update rewrites each text block from what its command prints (keeping
the first and last lines around a single `...` as many as there were), and
runs nothing else: docs/update_docs.py calls it.

TAP output.
"""

import difflib
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

RUN_PREFIXES = ("servesim ", "build/cli/servesim ", "sqlite3 ", "mpirun ")
# mpirun as the tests run it (tests/test_mpi.c): as root, more ranks than cores
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_hwloc_base_binding_policy": "none"}
ELISION = "..."
EXIT_COMMENT = re.compile(r"\s+#.*\bexit (\d+)\b.*$")
TIMEOUT_S = 300


class Block:
    def __init__(self, kind, line, lines):
        self.kind, self.line, self.lines = kind, line, lines


def blocks_of(text):
    """The fenced blocks of a page, with their tag and first line number."""
    out, kind, start, lines = [], None, 0, []
    for number, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            if kind is None:
                kind, start, lines = line[3:].strip(), number + 1, []
            else:
                out.append(Block(kind, start, lines))
                kind = None
        elif kind is not None:
            lines.append(line)
    return out


def commands_of(block):
    """The block's logical lines: `\\` continuations joined, with the line
    number each starts on."""
    out, pending, first = [], "", 0
    for offset, line in enumerate(block.lines):
        if not pending:
            first = block.line + offset
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        out.append((first, pending + line))
        pending = ""
    return out


def runnable(block):
    """The commands of a sh block the test runs: its servesim and sqlite3
    lines, and those links of a `&&` chain."""
    for number, chain in commands_of(block):
        for command in chain.split(" && "):
            if command.startswith(RUN_PREFIXES):
                yield number, command


def usable(tool, servesim):
    if not shutil.which(tool):
        return False
    if tool != "mpirun":
        return True
    version = subprocess.run([servesim, "--version"], capture_output=True, text=True).stdout
    return "(MPI)" in version


def expected_status(command):
    m = EXIT_COMMENT.search(command)
    return (int(m.group(1)), command[: m.start()]) if m else (0, command)


def scratch_folder(root, base, page):
    """A folder for the page's commands, the repository's folders linked in."""
    work = base / page.replace("/", "_")
    (work / "build" / "cli").mkdir(parents=True)
    for entry in root.iterdir():
        if entry.name.startswith((".", "build")) or entry.name in ("README.md", "LICENSE"):
            continue
        (work / entry.name).symlink_to(entry)
    (work / "bin").mkdir()
    return work


def run(command, work, servesim):
    env = dict(os.environ, PATH=f"{work / 'bin'}:{os.environ['PATH']}", **MPI_ENV)
    env.pop("COLUMNS", None)  # the width a pipe gets: the pages show it
    if command.startswith("mpirun "):
        # Open MPI's plugins leak what MPI_Init allocates and are unloaded
        # before LeakSanitizer looks, as tests/test_mpi.c says: under the
        # sanitizer build the ranks are checked for memory errors, not leaks
        asan = env.get("ASAN_OPTIONS")
        env["ASAN_OPTIONS"] = (asan + ":" if asan else "") + "detect_leaks=0"
    try:
        p = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                           text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return 124, f"(ran past {TIMEOUT_S} s)\n"
    return p.returncode, p.stdout + p.stderr


def same_line(shown, printed):
    """A shown line is the printed one, a `...` inside it standing for any
    text (the wall time of "simulated in ... s")."""
    if ELISION not in shown:
        return shown == printed
    parts = (re.escape(p) for p in shown.split(ELISION))
    return re.fullmatch(".*".join(parts), printed) is not None


def matches(shown, printed):
    """Whether the printed lines are the shown ones, a line `...` matching
    any run of lines."""
    shown = [line.rstrip() for line in shown]
    printed = [line.rstrip() for line in printed.rstrip("\n").split("\n")]
    memo = {}

    def m(i, j):
        if (i, j) not in memo:
            if i == len(shown):
                memo[(i, j)] = j == len(printed)
            elif shown[i].strip() == ELISION:
                memo[(i, j)] = any(m(i + 1, k) for k in range(j, len(printed) + 1))
            else:
                memo[(i, j)] = (j < len(printed) and same_line(shown[i], printed[j])
                                and m(i + 1, j + 1))
        return memo[(i, j)]

    return m(0, 0)


def first_difference(shown, printed):
    """Where the shown lines part from the printed ones, as a diff (an
    elision shows as removed lines)."""
    printed = [line.rstrip() for line in printed.rstrip("\n").split("\n")]
    diff = difflib.unified_diff([line.rstrip() for line in shown], printed, "shown", "printed",
                                lineterm="", n=1)
    return "\n".join(list(diff)[:40])


def regenerated(shown, printed):
    if matches(shown, printed):
        return shown
    printed = printed.rstrip("\n").split("\n")
    cuts = [k for k, line in enumerate(shown) if line.strip() == ELISION]
    if not cuts:
        return printed
    if len(cuts) > 1:
        return None  # hand-made excerpt: the writer mends it
    head, tail = cuts[0], len(shown) - cuts[0] - 1
    if head + tail >= len(printed):
        return printed
    return printed[:head] + [ELISION] + (printed[-tail:] if tail else [])


class Tap:
    def __init__(self):
        self.n, self.failed = 0, 0

    def ok(self, good, what, diag=None):
        self.n += 1
        self.failed += not good
        print(f"{'ok' if good else 'not ok'} {self.n} - {what}")
        if not good and diag:
            for line in diag.rstrip("\n").split("\n")[-25:]:
                print(f"#   {line}")


def check_sql(tap, page, block, db):
    query = "\n".join(block.lines)
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as c:
            rows = c.execute(query).fetchall()
        tap.ok(len(rows) > 0, f"{page}:{block.line}: the query runs and returns rows",
               "it returned none")
    except sqlite3.Error as e:
        tap.ok(False, f"{page}:{block.line}: the query runs", str(e))


def sql_database(base, servesim, root):
    db = base / "agents.db"
    subprocess.run([servesim, "run", str(root / "examples/agents.json"), "-o", str(db),
                    "--record-iterations", "--quiet"], check=True, capture_output=True)
    return db


class Shared:
    """What the pages share, each made once: every command's --help, and the
    database the sql blocks query."""

    def __init__(self, servesim, root, base):
        self.servesim, self.root, self.base = servesim, root, base
        self.helps, self.db = {}, None

    def sql_db(self):
        if self.db is None:
            self.db = sql_database(self.base, self.servesim, self.root)
        return self.db


def help_of(servesim, command, cache):
    if command not in cache:
        p = subprocess.run([servesim, command, "--help"], capture_output=True, text=True)
        cache[command] = (p.returncode, p.stdout + p.stderr)
    return cache[command]


def check_usage(tap, page, block, servesim, cache):
    synopses = []
    for offset, line in enumerate(block.lines):
        if line.startswith("servesim "):
            synopses.append([block.line + offset, line])
        elif line[:1].isspace() and synopses:
            synopses[-1][1] += " " + line
    for number, text in synopses:
        command = text.split()[1]
        status, help_text = help_of(servesim, command, cache)
        missing = [o for o in re.findall(r"--[a-z][a-z0-9-]*", text) if o not in help_text]
        tap.ok(status == 0 and not missing, f"{page}:{number}: {text.split('[')[0].strip()}",
               f"servesim {command} --help exits {status}; not in it: {', '.join(missing)}")


def check_page(tap, root, base, page, servesim, update, shared):
    path = root / page
    text = path.read_text()
    work = scratch_folder(root, base, page)
    (work / "bin" / "servesim").symlink_to(servesim)
    (work / "build" / "cli" / "servesim").symlink_to(servesim)
    blocks = blocks_of(text)
    last_output = None  # of the servesim lines of the sh block just before
    rewrites = []
    for block in blocks:
        if block.kind == "usage" and not update:
            check_usage(tap, page, block, servesim, shared.helps)
        if block.kind == "sql" and not update:
            check_sql(tap, page, block, shared.sql_db())
        if not block.kind and not update:
            tap.ok(False, f"{page}:{block.line}: a block says what it holds",
                   "tag it: sh (run), text (the output of the sh block before it), usage, "
                   "sql, json, csv, diagram ...")
        if block.kind == "text" and last_output is None and not update:
            tap.ok(False, f"{page}:{block.line}: an output says which command prints it",
                   "put the command in a sh block right before it")
        if block.kind == "text" and last_output is not None:
            shown = block.lines
            if update:
                new = regenerated(shown, last_output)
                if new is not None and new != shown:
                    rewrites.append((block, new))
            else:
                tap.ok(matches(shown, last_output),
                       f"{page}:{block.line}: the output shown is what it prints",
                       first_difference(shown, last_output) +
                       "\nregenerate it: docs/update_docs.py")
        if block.kind == "text":
            continue  # a second excerpt of the same output may follow
        last_output = None
        if block.kind != "sh":
            continue
        for number, command in runnable(block):
            tool = command.split()[0]
            if tool in ("sqlite3", "mpirun") and not usable(tool, servesim):
                tap.ok(True, f"{page}:{number}: # SKIP no {tool} here (or servesim without MPI)")
                continue
            status, line = expected_status(command)
            code, output = run(line, work, servesim)
            last_output = (last_output or "") + output
            if not update:
                tap.ok(code == status, f"{page}:{number}: {line[:100]}",
                       f"exit {code}, expected {status}\n{output}")
    if rewrites:
        lines = text.split("\n")
        for block, new in sorted(rewrites, key=lambda r: -r[0].line):
            first = block.line - 1
            lines[first:first + len(block.lines)] = new
        path.write_text("\n".join(lines))
        print(f"# {page}: {len(rewrites)} output block(s) rewritten")


def main(argv):
    args = [a for a in argv[1:] if a != "--update"]
    update = "--update" in argv
    if len(args) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    servesim = pathlib.Path(args[0]).resolve()
    root = pathlib.Path(args[1]).resolve()
    pages = args[2:] or ["README.md"] + sorted(
        str(p.relative_to(root)) for p in (root / "docs").glob("*.md"))
    tap = Tap()
    base = pathlib.Path(tempfile.mkdtemp(prefix="servesim-docs-"))
    shared = Shared(servesim, root, base)
    try:
        for page in pages:
            check_page(tap, root, base, page, servesim, update, shared)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if not update:
        print(f"1..{tap.n}")
    return 1 if tap.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
