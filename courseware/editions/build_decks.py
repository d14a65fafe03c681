"""Build the lecture companion from the notebooks: a reveal.js slide deck or an HTML hand-out per
notebook, with nbconvert, that opens from file:// with no network.

    python -m courseware decks slides                        # build/slides/NN_name.slides.html
    python -m courseware decks handouts                      # build/handouts/NN_name.html
    python -m courseware decks handouts --variant instructor # build/handouts-instructor/
    python -m courseware decks slides 04 06 --out /tmp/decks # some notebooks (number, name or path)

(`make slides`, `make handouts`, `make handouts VARIANT=instructor` call this.)

What it does to each notebook, through nbconvert's Python API:

* ``LecturePreprocessor`` (an nbconvert Preprocessor) removes the test markers (``# NBVAL_...``
  lines) and handles solutions: **student** (default) replaces them by the stubs nbgrader leaves
  (``courseware/editions/make_student.py``'s ``clear_solutions``: ``# YOUR CODE HERE`` /
  ``raise NotImplementedError()``, "YOUR ANSWER HERE", mark schemes removed) and drops the outputs
  of the cells it changed; **instructor** keeps the solutions and removes only the marker lines.
  Speaker notes (in the notebooks, closed ``<details>`` blocks that keep them out of a reader's way)
  are unwrapped: a deck shows them in reveal.js's speaker view, an instructor's hand-out as text; a
  student's hand-out has none. The bootstrap cell (``courseware/authoring/bootstrap_cell.py``: it fetches the course when a
  notebook runs alone on Colab) is left out of both.
  Widget outputs: the display priority puts ``image/png`` (the explorer's initial figure) first and
  never the widget view; an explorer output with no image gets a one-line note instead of its
  ``interactive(children=(...`` text; a progress bar widget (tqdm) keeps its text.
* The templates in ``courseware/editions/deck_templates/`` extend nbconvert's ``reveal`` and ``lab`` templates:
  reveal.js, its speaker-notes plugin and KaTeX (instead of MathJax) come from ``vendor/``, copied
  to ``_static/`` next to the pages and referenced relatively; nothing is loaded from a CDN.
  Figures are embedded in the page as data URIs (nbconvert's default).
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()  # before the imports, so the printed time is the whole run's

import argparse  # noqa: E402
import html  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import nbformat  # noqa: E402
from nbconvert.exporters import HTMLExporter, SlidesExporter  # noqa: E402
from nbconvert.preprocessors import Preprocessor  # noqa: E402
from traitlets import Enum  # noqa: E402
from traitlets.config import Config  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from courseware.editions.make_student import SOLUTION_DELIMITERS, clear_solutions  # noqa: E402
from courseware.authoring.bootstrap_cell import is_bootstrap  # noqa: E402
from courseware.authoring.tag_exercises import is_speaker_notes, unwrap_notes  # noqa: E402
from courseware.sections import appendix_start  # noqa: E402
from courseware.editions.vendor_assets import vendored_dir  # noqa: E402

NOTEBOOK_DIR = ROOT / "notebooks"
TEMPLATES = Path(__file__).resolve().parent / "deck_templates"
KINDS = ("slides", "handouts")
VARIANTS = ("student", "instructor")
STATIC = "_static"  # assets folder next to the built pages

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# What a static page may show, best first: never the widget view (it needs a kernel and a widget
# manager from a CDN) nor JavaScript; image/png before text/plain, so an explorer shows its figure.
DISPLAY_PRIORITY = ["text/html", "text/markdown", "image/svg+xml", "text/latex",
                    "image/png", "image/jpeg", "text/plain"]
NBVAL_LINE = re.compile(r"^\s*#\s*NBVAL_\w+.*$")
# the text/plain repr of an ipywidgets widget: "interactive(children=(...", "VBox(children=...", ...
WIDGET_REPR = re.compile(r"^[A-Za-z_][\w.]*\(\w+=")
WIDGET_NOTE = ('<p class="course-widget-note"><em>Interactive explorer: run the notebook in Jupyter '
               "to use it.</em></p>")


class LecturePreprocessor(Preprocessor):
    """Test markers out, solutions stubbed (student) or kept without their markers (instructor),
    widget outputs reduced to what a static page can show, the notebook's '# Title' as page title."""

    variant = Enum(list(VARIANTS), default_value="student").tag(config=True)
    kind = Enum(list(KINDS), default_value="slides").tag(config=True)

    def preprocess(self, nb, resources):
        nb.cells = [c for c in nb.cells if not is_bootstrap(c)]  # for a notebook opened alone, not for a lecture
        if self.kind == "slides" and (end := appendix_start(nb.cells)) is not None:
            nb.cells = nb.cells[:end]   # the appendix's measurements are for readers, not for the lecture
        if self.kind == "handouts" and self.variant == "student":
            nb.cells = [c for c in nb.cells if not is_speaker_notes(c)]
        for cell in nb.cells:
            if is_speaker_notes(cell):
                cell.source = unwrap_notes(cell.source)
        if self.variant == "student":
            before = [c.source for c in nb.cells]
            nb = clear_solutions(nb)
            for cell, source in zip(nb.cells, before):
                if cell.cell_type == "code" and cell.source != source:
                    cell.outputs, cell.execution_count = [], None  # a solution's output gives it away
        else:
            for cell in nb.cells:
                cell.source = _drop_lines(cell.source, lambda line: any(d in line for d in SOLUTION_DELIMITERS))
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.source = _drop_lines(cell.source, NBVAL_LINE.match)
                for output in cell.get("outputs", []):
                    _static_widget_output(output)
        nb.metadata.pop("widgets", None)  # widget state: only a widget manager would read it
        title = next((c.source.splitlines()[0][2:].strip() for c in nb.cells
                      if c.cell_type == "markdown" and c.source.startswith("# ")), None)
        if title and "title" not in nb.metadata:
            nb.metadata["title"] = title
        return nb, resources


def _drop_lines(source: str, drop) -> str:
    return "\n".join(line for line in source.split("\n") if not drop(line))


def _static_widget_output(output) -> None:
    data = output.get("data", {})
    if WIDGET_VIEW not in data:
        return
    del data[WIDGET_VIEW]
    has_figure = any(m in data for m in ("image/png", "image/jpeg", "image/svg+xml"))
    text = data.get("text/plain", "")
    if not has_figure and WIDGET_REPR.match(text if isinstance(text, str) else "".join(text)):
        data.pop("text/plain")
        data["text/html"] = WIDGET_NOTE


def make_exporter(kind: str, variant: str = "student"):
    """An nbconvert exporter for ``kind`` ('slides' or 'handouts') and ``variant``."""
    _check(kind, KINDS, "kind")
    _check(variant, VARIANTS, "variant")
    c = Config()
    c.NbConvertBase.display_data_priority = DISPLAY_PRIORITY
    common = dict(config=c, extra_template_basedirs=[str(TEMPLATES)], extra_template_paths=[str(TEMPLATES)],
                  exclude_input_prompt=True, exclude_output_prompt=True, embed_images=True)
    if kind == "slides":
        exporter = SlidesExporter(template_name="course_reveal", reveal_scroll=True, reveal_theme="white",
                                  reveal_url_prefix=f"{STATIC}/{vendored_dir('reveal.js').name}", **common)
    else:
        exporter = HTMLExporter(template_name="course_lab", **common)
    exporter.register_preprocessor(LecturePreprocessor(variant=variant, kind=kind), enabled=True)
    return exporter


def _check(value: str, allowed, what: str) -> None:
    if value not in allowed:
        raise ValueError(f"unknown {what} {value!r}; choose one of: {', '.join(allowed)}")


def all_notebooks() -> list[Path]:
    return sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))


def resolve(names: list[str]) -> list[Path]:
    """Notebooks named by path, file name, stem or two-digit number; all of them for no names."""
    if not names:
        return all_notebooks()
    found = []
    for name in names:
        p = Path(name)
        if p.suffix == ".ipynb" and p.is_file():
            found.append(p.resolve())
            continue
        stem = p.name.removesuffix(".ipynb")
        matches = [nb for nb in all_notebooks() if nb.stem == stem or nb.stem[:2] == stem]
        if len(matches) != 1:
            known = ", ".join(nb.stem for nb in all_notebooks())
            raise ValueError(f"no notebook {name!r} (give a path, a name or a number); known: {known}")
        found.append(matches[0])
    return found


def default_out(kind: str, variant: str) -> Path:
    return ROOT / "build" / (kind if variant == "student" else f"{kind}-{variant}")


def copy_assets(kind: str, out: Path) -> None:
    """vendor/ copies next to the pages, so the folder works wherever it is moved."""
    packages = ["katex"] + (["reveal.js"] if kind == "slides" else [])
    for name in packages:
        src = vendored_dir(name)
        shutil.copytree(src, out / STATIC / src.name, dirs_exist_ok=True)


def build(kind: str, variant: str = "student", notebooks: list[Path] | None = None,
          out: Path | None = None) -> list[Path]:
    """Write one page per notebook into ``out`` (plus ``_static/`` and an ``index.html``)."""
    exporter = make_exporter(kind, variant)
    notebooks = all_notebooks() if notebooks is None else notebooks
    out = default_out(kind, variant) if out is None else Path(out)
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(kind, out)
    written = []
    for path in notebooks:
        resources = {"course_katex": f"{STATIC}/{vendored_dir('katex').name}",
                     "metadata": {"name": path.stem, "path": str(path.parent)}}
        body, _ = exporter.from_notebook_node(nbformat.read(path, as_version=4), resources=resources)
        target = out / f"{path.stem}{exporter.file_extension}"
        target.write_text(body, encoding="utf-8")
        written.append(target)
    _write_index(out, kind, variant, written)
    return written


def _write_index(out: Path, kind: str, variant: str, pages: list[Path]) -> None:
    items = "\n".join(f'<li><a href="{html.escape(p.name)}">{html.escape(p.name)}</a></li>'
                      for p in sorted(out.glob("[0-9][0-9]_*.html")))
    (out / "index.html").write_text(
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Attention, from RNNs to '
        f"Transformers: {kind} ({variant})</title></head>\n<body><h1>Attention, from RNNs to Transformers: "
        f"{kind} ({variant} version)</h1>\n<ul>\n{items}\n</ul>\n"
        + ("<p>In a deck: arrow keys to move, <kbd>S</kbd> for the speaker notes window, <kbd>Esc</kbd> "
           "for the overview.</p>\n" if kind == "slides" else "")
        + "</body></html>\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=KINDS)
    parser.add_argument("notebooks", nargs="*", help="numbers, names or paths (default: all)")
    parser.add_argument("--variant", choices=VARIANTS, default="student")
    parser.add_argument("--out", type=Path, help="output folder (default: build/<kind>[-instructor])")
    args = parser.parse_args(argv)
    try:
        notebooks = resolve(args.notebooks)
    except ValueError as e:
        parser.error(str(e))
    out = args.out or default_out(args.kind, args.variant)
    start = time.perf_counter()
    pages = build(args.kind, args.variant, notebooks, out)
    now = time.perf_counter()
    for p in pages:
        print(f"wrote {p} ({p.stat().st_size / 1e6:.1f} MB)")
    total = sum(p.stat().st_size for p in pages) + sum(f.stat().st_size for f in (out / STATIC).rglob("*") if f.is_file())
    print(f"{args.kind} ({args.variant}): {len(pages)} notebooks in {now - _STARTED:.1f} s "
          f"({now - start:.1f} s converting, the rest importing nbconvert and nbgrader); "
          f"{out} holds {total / 1e6:.1f} MB with its assets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
