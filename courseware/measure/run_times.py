"""The per-notebook "will it run here" table: measured run times, recorded from test logs.

    python -m courseware run-times record LOG --as cpu        # a `make test` log (its "notebook execution times")
    python -m courseware run-times record LOG --as gpu --machine "NVIDIA H100, 16 cores"
    python -m courseware run-times table                       # print the table
    python -m courseware run-times write                       # put the table into README.md and site/index.md

``make test`` prints, at its end, how long nbval took to run each notebook (``conftest.py``). ``record``
reads those lines from a saved log and stores them, with the date, the commit and the machine, in
``runs/notebook_times.json`` under a setting: ``cpu`` is the course's reference (``make test`` on a 2-core
CPU, two notebooks at a time, one torch thread each: what CI runs), ``gpu`` a run on a GPU machine
(``make test`` there). A setting never measured shows as "not measured". ``write`` replaces the text between
``<!-- run-times:begin -->`` and ``<!-- run-times:end -->`` in README.md and site/index.md;
``tests/courseware/measure/test_run_times.py`` checks both hold the table the committed JSON gives.

The last column says what ``FULL = True`` changes, read from the comment on the ``FULL = False`` line of the
notebook's settings cell, so it cannot drift from the notebook.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
TIMES = ROOT / "runs" / "notebook_times.json"
PAGES = {ROOT / "README.md": "", ROOT / "site" / "index.md": "../"}  # page -> path to the repository's top
BEGIN, END = "<!-- run-times:begin -->", "<!-- run-times:end -->"
SETTINGS = {"cpu": "2-core CPU, `make test`", "gpu": "GPU, `make test`"}
LINE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?) s\s+(?:\S*/)?(\d\d)_[\w-]+\.ipynb\s*$")


def notebooks() -> dict[str, Path]:
    return {p.name[:2]: p for p in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))}


def parse_log(text: str) -> dict[str, float]:
    """Seconds per notebook from the "notebook execution times" section of a pytest log."""
    if "notebook execution times" not in text:
        raise ValueError("the log has no 'notebook execution times' section: give the saved output of "
                         "`make test` (or of pytest run on notebooks/ from the repository's top)")
    section = text.split("notebook execution times", 1)[1]
    times = {m.group(2): float(m.group(1)) for m in map(LINE.match, section.splitlines()) if m}
    if not times:
        raise ValueError("the 'notebook execution times' section lists no notebook")
    return times


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def record(log: Path, setting: str, machine: str | None, date: str | None, commit: str | None) -> dict:
    if setting not in SETTINGS:
        raise ValueError(f"--as must be one of {sorted(SETTINGS)}, not {setting!r}")
    times = parse_log(log.read_text(errors="replace"))
    missing = sorted(set(notebooks()) - set(times))
    if missing:
        raise ValueError(f"{log} has no time for notebook(s) {', '.join(missing)}: record a run of all of them")
    data = json.loads(TIMES.read_text()) if TIMES.exists() else {}
    data[setting] = {
        "date": date or datetime.date.today().isoformat(),
        "commit": commit or _commit(),
        "machine": machine or f"{platform.machine()}, {os.cpu_count()} cores",
        "seconds": {k: round(times[k], 1) for k in sorted(times)},
    }
    TIMES.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return data


def title(path: Path) -> str:
    """The notebook's first heading, e.g. "01 · Tokens and embeddings"."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            return cell.source.splitlines()[0][2:].strip()
    return path.stem


def full_change(path: Path) -> str:
    """What ``FULL = True`` changes: the comment on the notebook's ``FULL = False`` line, or on the line
    above it when the comment did not fit beside it (``courseware/authoring/code_width.py`` moves it there)."""
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type != "code":
            continue
        lines = cell.source.splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^FULL = False\s*(?:#\s*(.*))?$", line.strip())
            if m:
                above = re.match(r"^#\s*(True:.*)$", lines[i - 1].strip()) if i else None
                text = (m.group(1) or (above.group(1) if above else "")).strip()
                return re.sub(r"^True:\s*", "", text) or "a larger setting (see its settings cell)"
    return "— (no `FULL` switch)"


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 60 else f"{seconds:.0f} s"


def table(data: dict | None = None, prefix: str = "") -> str:
    """The Markdown table; ``prefix`` is the path from the page to the repository's top ("../" for site/)."""
    data = json.loads(TIMES.read_text()) if data is None else data
    head = ["notebook"] + [SETTINGS[s] for s in SETTINGS] + ["what `FULL = True` changes"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, path in notebooks().items():
        cells = [f"[{title(path)}]({prefix}notebooks/{path.name})"]
        for setting in SETTINGS:
            secs = data.get(setting, {}).get("seconds", {}).get(key)
            cells.append(_minutes(secs) if secs is not None else "not measured")
        cells.append(full_change(path))
        lines.append("| " + " | ".join(cells) + " |")
    notes = []
    for setting, label in SETTINGS.items():
        run = data.get(setting)
        if run:
            notes.append(f"{label}: {run['machine']}, commit {run['commit']}, {run['date']}")
        else:
            notes.append(f"{label}: not measured yet (no GPU was lent to the runs so far)")
    return "\n".join(lines) + "\n\nMeasured by `courseware/measure/run_times.py` from the test logs (" + "; ".join(notes) + ")."


def write_pages() -> list[Path]:
    changed = []
    for page, prefix in PAGES.items():
        text = table(prefix=prefix)
        old = page.read_text()
        if BEGIN not in old or END not in old:
            raise ValueError(f"{page.relative_to(ROOT)} has no {BEGIN} ... {END} block to fill")
        head, rest = old.split(BEGIN, 1)
        new = head + BEGIN + "\n" + text + "\n" + END + rest.split(END, 1)[1]
        if new != old:
            page.write_text(new)
            changed.append(page)
    return changed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="store the per-notebook times of a saved test log")
    rec.add_argument("log", type=Path)
    rec.add_argument("--as", dest="setting", required=True, choices=sorted(SETTINGS))
    rec.add_argument("--machine", help="what ran it (default: this machine's architecture and cores)")
    rec.add_argument("--date", help="YYYY-MM-DD of the run (default: today)")
    rec.add_argument("--commit", help="the commit it ran (default: HEAD)")
    sub.add_parser("table", help="print the table")
    sub.add_parser("write", help="write the table into README.md and site/index.md")
    args = ap.parse_args(argv)
    if args.cmd == "record":
        record(args.log, args.setting, args.machine, args.date, args.commit)
        print(f"recorded {args.setting} in {TIMES.relative_to(ROOT)}")
    elif args.cmd == "table":
        print(table())
    else:
        changed = write_pages()
        print("updated: " + (", ".join(str(p.relative_to(ROOT)) for p in changed) or "nothing (already current)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
