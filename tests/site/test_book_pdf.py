"""`make book-pdf` (scripts/editions/book_pdf.py) prints every page of the site into one PDF: read back with pypdf,
every chapter of the table of contents is there, in order, each starting on a page of its own, with its maths
typeset (no raw TeX in the text) and its figures (the PDF holds at least as many images as the notebooks have
figures on the site). Runs under `make test-site` (marker `site`), after the site is built."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
sys.path.insert(0, str(ROOT))
from scripts.editions import book_pdf  # noqa: E402

pytestmark = pytest.mark.site
H1 = re.compile(r"<h1[^>]*>(.*?)<a class=\"headerlink\"", re.S)


def _title(path: str) -> str:
    html = (SITE / path).read_text()
    m = H1.search(html, html.find('<article class="bd-article"'))  # the page's own heading, not the print title
    assert m, f"{path} has no <h1>"
    return re.sub(r"<[^>]+>", "", m.group(1)).replace("&amp;", "&").strip()


@pytest.fixture(scope="module")
def pdf(tmp_path_factory):
    if not (SITE / "index.html").is_file():
        pytest.skip("no built site: run `make site` (make test-site builds it first)")
    if book_pdf.chromium_path() is None:
        pytest.skip("no Chromium: apt-get install chromium, or set COURSE_CHROMIUM")
    out = ROOT / "build" / "site-test" / "course.pdf"
    assert book_pdf.main(["--out", str(out)]) == 0, "book_pdf.py did not gather every page of the site"
    from pypdf import PdfReader

    reader = PdfReader(out)
    return [page.extract_text() or "" for page in reader.pages], reader


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def chapters(pdf):
    """(site path, first PDF page index, page index after its last) for every page of the table of contents."""
    texts, _ = pdf
    squashed = [_squash(t) for t in texts]
    starts = []
    for path in book_pdf.chapter_paths():
        title = _squash(_title(path))
        after = starts[-1][1] + 1 if starts else 0
        found = next((i for i in range(after, len(texts)) if squashed[i].startswith(title)), None)
        assert found is not None, f"{path} ({title!r}) does not begin a page of the PDF after the previous chapter"
        starts.append((path, found))
    ends = [s for _, s in starts[1:]] + [len(texts)]
    return [(path, s, e) for (path, s), e in zip(starts, ends)]


def test_every_chapter_is_in_the_pdf_in_order_on_a_page_of_its_own(pdf, chapters):
    texts, _ = pdf
    assert [c[0] for c in chapters] == book_pdf.chapter_paths()
    print(f"\n{len(chapters)} chapters in {len(texts)} PDF pages, starting at pages {[s + 1 for _, s, _ in chapters]}")


def _notebook(path: str) -> Path:
    return ROOT / path.replace(".html", ".ipynb")


def test_no_raw_tex_in_a_chapter(pdf, chapters):
    """In the notebooks' chapters (the guides quote `$$` and `\\frac` as text, in code)."""
    texts, _ = pdf
    for path, start, end in chapters:
        if path.startswith("notebooks/"):
            for i in range(start, end):
                for raw in ("$$", "\\frac", "\\begin{"):
                    assert raw not in texts[i], f"raw TeX {raw!r} on PDF page {i + 1} ({path})"


def _pixels(image) -> str:
    return hashlib.sha256(image.convert("RGB").tobytes() + repr(image.size).encode()).hexdigest()


def test_every_figure_of_a_notebook_is_in_its_chapter(pdf, chapters):
    """Each figure of a notebook is, pixel for pixel, among the images on its chapter's PDF pages (and no image
    there is something else)."""
    import nbformat
    from PIL import Image

    _, reader = pdf
    for path, start, end in chapters:
        if not path.startswith("notebooks/"):
            continue
        nb = nbformat.read(_notebook(path), as_version=4)
        figures = {_pixels(Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"]))))
                   for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.get("outputs", []) if "image/png" in out.get("data", {})}
        printed = {_pixels(img.image) for i in range(start, end) for img in reader.pages[i].images}
        assert figures == printed, (f"{path}: {len(figures - printed)} figure(s) of the notebook missing from its "
                                    f"PDF pages, {len(printed - figures)} image(s) there that are not its figures")
