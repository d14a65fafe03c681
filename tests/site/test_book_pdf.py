"""`make book-pdf` (courseware/editions/book_pdf.py) prints every page of the site into one PDF: read back with pypdf,
every chapter of the table of contents is there, in order, each starting on a page of its own, with its maths
typeset (no raw TeX in the text) and its figures (the PDF holds at least as many images as the notebooks have
figures on the site). A reader can navigate it: a contents page with the page each page of the site begins on,
an outline (bookmarks) with a top-level entry per page of the site and its sections under it, links between
chapters that lead inside the PDF, none to the local server that printed it. Runs under `make test-site`
(marker `site`), after the site is built, and before tests/site/test_site.py, whose link check finds the copy it
leaves in build/site/course.pdf (the landing page links it).

Issue 53: no page ends in an empty code frame (a pixel scan of every page: ink in every framed box), and the model
answers and the quizzes' answers are printed at the end of the book, each place they were saying on which page.
The PDF is tagged (a structure tree a screen reader follows: headings, figures with their alt text, links) and
saved compact (object streams, every page's content compressed)."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
sys.path.insert(0, str(ROOT))
from courseware.editions import book_pdf  # noqa: E402

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


PDF_PATH = ROOT / "build" / "site-test" / "course.pdf"   # where the fixture above prints it


def _squash(text: str) -> str:
    """Whitespace squashed, ligatures undone (the PDF's text has "ﬁ" where the page has "fi")."""
    text = re.sub(r"(?<=\w)-\n(?=\w)", "-", text)   # a title broken after a hyphen ("dot-\nproduct")
    return re.sub(r"\s+", " ", unicodedata.normalize("NFKC", text)).strip()


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
    spans = {path: (start, end) for path, start, end in chapters}
    for path, start, end in chapters:
        if not path.startswith("notebooks/") or path.endswith("_appendix.html"):
            continue
        nb = nbformat.read(_notebook(path), as_version=4)
        figures = {_pixels(Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"]))))
                   for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.get("outputs", []) if "image/png" in out.get("data", {})}
        pages = list(range(start, end))   # the chapter's pages, and its appendix page's (build_site.split_appendix)
        appendix = spans.get(path.removesuffix(".html") + "_appendix.html")
        pages += list(range(*appendix)) if appendix else []
        printed = {_pixels(img.image) for i in pages for img in reader.pages[i].images}
        assert figures == printed, (f"{path}: {len(figures - printed)} figure(s) of the notebook missing from its "
                                    f"PDF pages, {len(printed - figures)} image(s) there that are not its figures")


# ------------------------------------------------------------------ navigating the book


def _annotations(reader):
    """(page index, annotation) for every link of the PDF."""
    for i, page in enumerate(reader.pages):
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") == "/Link":
                yield i, annot


def _chapter_of(chapters, page_index: int) -> str | None:
    return next((path for path, start, end in chapters if start <= page_index < end), None)


def test_the_outline_has_a_bookmark_for_every_page_of_the_site_and_its_sections(pdf, chapters):
    _, reader = pdf
    top = [item for item in reader.outline if not isinstance(item, list)]
    assert top[0].title == "Contents" and reader.get_destination_page_number(top[0]) == 0
    assert len(top) == len(chapters) + 2 and top[-1].title == "Model answers", [t.title for t in top]
    for item, (path, start, _) in zip(top[1:], chapters):
        assert _squash(item.title) == _squash(_title(path)), (item.title, path)
        assert reader.get_destination_page_number(item) == start, f"{item.title}: bookmark to page {reader.get_destination_page_number(item) + 1}, the page begins on {start + 1}"
    nested = [item for item in reader.outline if isinstance(item, list)]
    assert sum(len(n) for n in nested) >= 5 * sum(p.startswith("notebooks/") for p, _, _ in chapters)
    print(f"\n{len(top)} top-level bookmarks and {sum(len(n) for n in nested)} under them")


def test_the_contents_page_gives_the_page_each_chapter_begins_on(pdf, chapters):
    texts, reader = pdf
    first = chapters[0][1]
    assert first >= 1 and texts[0].lstrip().startswith("Contents")
    # the numbers are right-aligned after a dotted leader: read the page as laid out
    contents = " ".join(_squash(reader.pages[k].extract_text(extraction_mode="layout")) for k in range(first))
    for path, start, _ in chapters:
        title = re.escape(_squash(_title(path))).replace(r"\ ", r"\s*")
        m = re.search(title + r"\s*(\d+)", contents)
        assert m, f"{path} is not on the contents page"
        assert int(m.group(1)) == start + 1, f"{path}: the contents page says page {m.group(1)}, it begins on {start + 1}"


def test_links_between_chapters_lead_inside_the_pdf_and_none_to_a_local_server(pdf, chapters):
    texts, reader = pdf
    local, internal, across, dangling = [], 0, 0, []
    dests = {str(k).lstrip("/"): v for k, v in reader.named_destinations.items()}
    for i, annot in _annotations(reader):
        action = annot.get("/A")
        uri = str(action.get_object().get("/URI", "")) if action is not None else ""
        if re.match(r"https?://(127\.0\.0\.1|localhost|\[::1\])", uri):
            local.append((i + 1, uri))
        dest = annot.get("/Dest")
        if dest is None:
            continue
        internal += 1
        name = str(dest).lstrip("/") if not isinstance(dest, list) else None
        if name is not None and name not in dests:
            dangling.append((i + 1, name))
            continue
        target = reader.get_destination_page_number(dests[name]) if name is not None else reader.get_page_number(dest[0])
        across += _chapter_of(chapters, i) != _chapter_of(chapters, target) and i >= chapters[0][1]
    assert local == [], f"{len(local)} links to the local server that printed the PDF, e.g. {local[:3]}"
    assert dangling == [], dangling[:5]
    assert across >= 20, f"{across} links from one chapter to another inside the PDF"
    assert "launch button above" not in _squash(" ".join(texts))   # an explorer's note once said so
    print(f"\n{internal} internal links ({across} from one page of the site to another), none to 127.0.0.1")


def test_no_speaker_notes_in_the_readers_pdf(pdf):
    """The PDF, like the site, is the self-paced reader's edition: the notes are in the notebooks and the decks
    (before: 123 folded "Speaker notes (for a lecturer ...)" lines, which a PDF cannot open)."""
    texts, _ = pdf
    assert _squash(" ".join(texts)).count("Speaker notes (for a lecturer") == 0


# ------------------------------------------------------------------ what a page cannot open, and empty frames


def _answers_start(texts) -> int:
    """The index of the PDF page the "Model answers" section begins on (the book's last section)."""
    starts = [i for i, t in enumerate(texts) if t.lstrip().startswith("Model answers")]
    assert starts, "no page begins with the Model answers section"
    return starts[-1]


def test_no_page_ends_in_an_empty_code_frame(pdf):
    """Every page rendered (72 dpi) and every code frame on it (a code cell's green bar and its grey box) holds
    ink: no frame printed empty at the foot of a page with its code on the next (before: 180 empty frames)."""
    texts, _ = pdf
    empty = book_pdf.empty_code_frames(PDF_PATH)
    assert empty is not None, "pypdfium2 is not installed (pyproject.toml's site group: `make test-site` installs it)"
    assert empty == [], f"{len(empty)} empty code frames, on pages {sorted({p for p, _ in empty})[:20]}"
    import pypdfium2 as pdfium
    from PIL import Image  # noqa: F401

    doc = pdfium.PdfDocument(str(PDF_PATH))
    frames = sum(len(book_pdf.code_frames(doc[i].render(scale=1).to_pil().convert("RGB"))) for i in range(0, len(doc), 7))
    doc.close()
    assert frames > 50, f"only {frames} code frames found on every 7th page: the scan no longer sees them"
    print(f"\n0 empty code frames on {len(texts)} pages ({frames} frames found on every 7th page)")


def test_the_model_answers_are_at_the_end_and_each_place_says_where(pdf):
    """No "Show the model answer" bar (a page cannot open it): each code model answer (its first line) and each
    open question's answer is printed in the Model answers section at the end, and the quizzes' answers too; every
    "Model answer: page N" / "Answers: page N" in the book names a page of that section."""
    import nbformat

    texts, _ = pdf
    start = _answers_start(texts)
    body, end = _squash(" ".join(texts[:start])), _squash(" ".join(texts[start:]))
    bars = re.findall(r"(?<![“\"])(?:Show the model answer|Show code cell source)", body)   # (TESTING.md quotes one)
    assert bars == [], f"{len(bars)} toggle bars a page cannot open"
    answers = 0
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution"):
                first = next(ln for ln in cell.source.splitlines() if ln.strip() and "###" not in ln)
                assert _squash(first) in end, f"{path.name}: the model answer {first!r} is not in the Model answers"
                assert _squash(first) not in body or len(first) < 25, f"{path.name}: {first!r} before the end"
                answers += 1
    texts, reader = pdf
    # the pages that refer to an answer, read as laid out (the number follows its words); the others have no "page"
    laid_out = " ".join(_squash(reader.pages[i].extract_text(extraction_mode="layout")) for i in range(start)
                        if re.search(r"(?:Model\s+answer|Answers):", texts[i]))
    refs = [int(n) for n in re.findall(r"(?:Model answer|Answers): page\s*(\d+)", laid_out)]
    assert len(refs) >= answers + 10, f"{len(refs)} references to the answers for {answers} code answers"
    assert all(start + 1 <= n <= len(texts) for n in refs), [n for n in refs if not start + 1 <= n <= len(texts)]
    assert "Answers 1." not in body
    print(f"\n{answers} code model answers and {len(refs) - answers} other answers (open questions, quizzes) at the "
          f"end, pages {start + 1}-{len(texts)}; {len(refs)} references to them, each naming a page there")


def test_the_pdf_is_tagged_and_compact(pdf, chapters):
    """Chromium's tagged print: a structure tree with a heading for every page of the site, a figure with alt text
    for every figure of the notebooks, and the language; saved with object streams and every page's content
    compressed (before: untagged, 11.0 MB, 156 pages' content uncompressed where page numbers were laid over them)."""
    import nbformat
    import pikepdf

    figures = sum("image/png" in o.get("data", {}) for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
                  for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code" for o in c.get("outputs", []))
    with pikepdf.open(PDF_PATH) as doc:
        root = doc.Root
        assert "/StructTreeRoot" in root and root.MarkInfo.Marked is True and str(root.Lang).startswith("en")
        kinds, alt = {}, 0
        for obj in doc.objects:
            if isinstance(obj, pikepdf.Dictionary) and obj.get("/Type") == "/StructElem":
                kind = str(obj.get("/S"))
                kinds[kind] = kinds.get(kind, 0) + 1
                alt += kind == "/Figure" and bool(str(obj.get("/Alt", "")).strip())
        uncompressed = [i + 1 for i, page in enumerate(doc.pages)
                        for stream in (page.Contents if isinstance(page.Contents, pikepdf.Array) else [page.Contents])
                        if "/Filter" not in stream]
    object_streams = PDF_PATH.read_bytes().count(b"/ObjStm")
    assert kinds.get("/H1", 0) >= len(chapters), kinds
    assert alt >= figures, f"{alt} figures with alt text in the structure tree, {figures} figures in the notebooks"
    assert uncompressed == [] and object_streams > 0, (uncompressed[:10], object_streams)
    top = sorted(kinds.items(), key=lambda kv: -kv[1])[:8]
    print(f"\ntagged: {sum(kinds.values())} structure elements ({', '.join(f'{k[1:]} {v}' for k, v in top)}), "
          f"{alt} figures with alt text; {PDF_PATH.stat().st_size / 1e6:.1f} MB, {object_streams} object streams")
