"""The offline lecture companion in a real browser: a reveal.js deck and an HTML hand-out
(built by courseware/editions/build_decks.py, as `make slides` / `make handouts` do) opened from file://
with every network request refused: nothing is requested outside the build folder, KaTeX
typesets every formula (no `$$` or `\\frac` left on screen), the deck has as many slides as
the notebook's slideshow metadata says, speaker notes stay off the slides, and each
explorer shows its saved figure. Screenshots go to build/screenshots/ (git-ignored), or to the folder
$COURSE_BROWSER_SCREENSHOTS names (`COURSE_BROWSER_SCREENSHOTS=docs/screenshots` refreshes the README's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
# the checkout stays as it was unless asked (a tracked screenshot rewritten on every run left clones dirty)
SHOTS = ROOT / os.environ.get("COURSE_BROWSER_SCREENSHOTS", "build/screenshots")
sys.path.insert(0, str(ROOT))
from courseware.measure import slide_report  # noqa: E402

pytestmark = pytest.mark.browser

NOTEBOOKS = ["04_scaled_dot_product_attention", "08_transformer_translation"]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("decks")
    for kind in ("slides", "handouts"):
        subprocess.run([sys.executable, "-m", "courseware", "decks", kind, *NOTEBOOKS,
                        "--out", str(out / kind)], check=True, cwd=ROOT, capture_output=True)
    return out


@pytest.fixture
def offline_page(browser):
    """A page whose every request to anything but file:// is aborted and recorded."""
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    page = context.new_page()
    refused: list[str] = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            refused.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    failed: list[str] = []
    page.on("requestfailed", lambda req: failed.append(req.url) if req.url.startswith("file://") else None)
    page.refused, page.failed = refused, failed
    yield page
    context.close()


def _visible_text_with_raw_tex(page) -> list[str]:
    """Text nodes outside KaTeX's output and outside code that still hold TeX delimiters."""
    return page.evaluate(r"""() => {
        const bad = [];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        while (walker.nextNode()) {
            const n = walker.currentNode, el = n.parentElement;
            if (!el || el.closest('.katex, pre, code, script, style, .jp-InputArea, aside.notes')) continue;
            const style = getComputedStyle(el);
            if (style.display === 'none' || style.visibility === 'hidden') continue;
            if (/\$\$|\\frac|\\sqrt|\\mathrm|\$[^$\s][^$]*\$/.test(n.textContent)) bad.push(n.textContent.trim().slice(0, 80));
        }
        return bad;
    }""")


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_deck_offline_typeset_and_sized_by_its_metadata(offline_page, built, name):
    page = offline_page
    page.goto((built / "slides" / f"{name}.slides.html").as_uri())
    page.wait_for_function("window.Reveal && Reveal.isReady()")
    page.wait_for_selector(".katex", state="attached")
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    expected = len(slide_report.pages(nb))  # slides + subslides
    assert page.evaluate("Reveal.getTotalSlides()") == expected
    assert page.evaluate("document.querySelectorAll('.katex-error').length") == 0
    assert _visible_text_with_raw_tex(page) == []
    # speaker notes are in the deck (for the S view) but not on any slide
    assert page.evaluate("document.querySelectorAll('aside.notes').length") > 0
    assert page.evaluate("[...document.querySelectorAll('aside.notes')].every(a => a.offsetParent === null)")
    assert page.refused == [] and page.failed == []
    if name.startswith("04"):
        SHOTS.mkdir(parents=True, exist_ok=True)
        h = v = -1  # show the page with the diagram of the pipeline: (horizontal, vertical) index
        for pg in slide_report.pages(nb):
            h, v = (h + 1, 0) if pg["kind"] == "slide" else (h, v + 1)
            if any("diagrams.scaled_dot_product_pipeline" in nb.cells[i].source for i in pg["cells"]):
                break
        page.evaluate(f"Reveal.slide({h}, {v})")
        page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "deck_04_slide.png"))


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_handout_offline_typeset_with_explorer_figures(offline_page, built, name):
    page = offline_page
    page.goto((built / "handouts" / f"{name}.html").as_uri())
    page.wait_for_selector(".katex", state="attached")
    page.wait_for_timeout(300)
    assert page.evaluate("document.querySelectorAll('.katex-error').length") == 0
    assert _visible_text_with_raw_tex(page) == []
    body = page.inner_text("body")
    assert "interactive(children" not in body and "BEGIN SOLUTION" not in body and "NBVAL" not in body
    n_img = page.evaluate("[...document.images].filter(i => i.complete && i.naturalWidth > 0).length")
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    assert n_img >= sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs
                        if "BEGIN SOLUTION" not in c.source)
    assert page.refused == [] and page.failed == []
