"""``python -m courseware <command> [arguments]``: the course's commands, the ones the Makefile runs.

Set-up (``courseware.setup.install``): ``install``, ``lab``, ``test``, ``doctor``. The editions and the
measurements: each other command runs one module of this package as a script, with the arguments after it.
"""

from __future__ import annotations

import runpy
import sys

COMMANDS = {   # command -> (module run as __main__, what it does)
    "student": ("courseware.editions.make_student", "the student edition (nbgrader's release) of the notebooks"),
    "course": ("courseware.editions.nbgrader_course", "an nbgrader course directory for a class"),
    "decks": ("courseware.editions.build_decks", "the lecture decks and hand-outs"),
    "site": ("courseware.editions.build_site", "the course website (Jupyter Book)"),
    "book-pdf": ("courseware.editions.book_pdf", "the website printed to one PDF"),
    "hub-link": ("courseware.editions.hub_link", "an nbgitpuller link for a class hub"),
    "vendor-assets": ("courseware.editions.vendor_assets", "refresh the vendored JavaScript/CSS/fonts"),
    "site-requirements": ("courseware.editions.site_requirements", "the website's own requirements"),
    "file-map": ("courseware.authoring.file_map", "the map of the files (LAYOUT.md)"),
    "code-width": ("courseware.authoring.code_width", "code lines wider than the website shows"),
    "quiz-cells": ("courseware.authoring.quiz_cells", "write a notebook's quiz cells"),
    "tag-exercises": ("courseware.authoring.tag_exercises", "nbgrader tags on the exercises"),
    "bootstrap-cell": ("courseware.authoring.bootstrap_cell", "the Colab bootstrap cell"),
    "execute-section": ("courseware.authoring.execute_section", "re-run a notebook's Exercises section"),
    "section-minutes": ("courseware.measure.section_minutes", "a reader's minutes per section"),
    "main-line": ("courseware.measure.main_line", "each notebook's main line against its budget"),
    "run-times": ("courseware.measure.run_times", "the per-notebook run-time table"),
    "results-table": ("courseware.measure.results_table", "the README's results table"),
    "slide-report": ("courseware.measure.slide_report", "slide heights"),
    "timing-asserts": ("courseware.measure.timing_asserts", "the notebook asserts that depend on a time"),
    "flaky": ("courseware.measure.flaky", "the timing asserts run K times in each condition"),
    "bench-hub": ("courseware.measure.bench_hub", "a class on one machine, measured (as root)"),
    "mutants": ("courseware.measure.mutants", "the exercises' checks measured by mutants of their model answers"),
    "grading-table": ("courseware.measure.grading_table", "autograde seconds and each attack's points"),
}
SETUP = ("install", "lab", "test", "doctor")


def usage() -> str:
    lines = ["usage: python -m courseware <command> [arguments]", "", "set-up: " + ", ".join(SETUP)]
    lines += [f"  {name:<18} {what}" for name, (_, what) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        module = COMMANDS[argv[0]][0]
        sys.argv = [module, *argv[1:]]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
        return 0
    if not argv or argv[0] in SETUP or argv[0].startswith("-") and argv[0] not in ("-h", "--help"):
        from courseware.setup.install import main as setup_main
        return setup_main(argv)
    print(usage(), file=sys.stderr if argv[0] not in ("-h", "--help") else sys.stdout)
    return 0 if argv[0] in ("-h", "--help") else 2


if __name__ == "__main__":
    raise SystemExit(main())
