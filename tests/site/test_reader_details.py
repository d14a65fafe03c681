"""Smaller things a reader of the website and the PDF notices (issue 53, item 5), each checked on build/site/:

* a "Check yourself" quiz shows the quiz, not the `check_yourself(...)` call under it (cut off on a phone);
* no text points at what this edition lacks: "the folded speaker notes" (the site has none), `make lab` in an
  explorer's note (the site has no checkout), "Nothing above depends on these cells" on an appendix page of its own;
* each appendix page links back to its chapter;
* on a phone, tapping a section in the contents drawer closes the drawer;
* on a phone, a code cell's text is readable (at least 12 px, no larger than the body text) and its box shows at
  least 40 characters of a line (before: 14 px, 36 characters; the lines are up to 83);
* a first visit logs no console error (the theme's empty mode);
* the search page from file:// says it shows no snippets there (and fetches nothing), and no snippet shows raw `\\(`;
* the PDF names its title once, has an author, and lists "After the course" once on its contents page.
Marker `site`.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_site import CHROMIUM_ARGS, OfflinePage, browser, server, site_pages  # noqa: E402,F401

pytestmark = pytest.mark.site


def _article(path: str) -> str:
    html = (SITE / path).read_text(encoding="utf-8")
    start = html.find('<article class="bd-article"')
    return html[start:html.find("</article>", start)]


def _chapters() -> list[str]:
    return [p for p in site_pages() if re.fullmatch(r"notebooks/\d\d_[a-z0-9_]+\.html", p)]


def test_a_quiz_shows_the_quiz_not_the_call():
    pages = [p for p in _chapters() if "Quiz" in (SITE / p).read_text(encoding="utf-8")]
    assert len(pages) >= 10
    calls = {p: _article(p).count("check_yourself") for p in pages if "check_yourself" in _article(p)}
    assert calls == {}, calls


def test_no_text_points_at_what_the_site_lacks():
    found = []
    for path in _chapters():
        text = re.sub(r"<[^>]+>", "", _article(path))
        for phrase in ("folded speaker notes", "Nothing above depends on these cells"):
            if phrase in text:
                found.append(f"{path}: {phrase!r}")
        for note in re.findall(r'<p class="course-widget-note">(.*?)</p>', _article(path), re.S):
            if "make lab" in note:
                found.append(f"{path}: `make lab` in an explorer's note")
    assert found == [], found


def test_each_appendix_page_links_back_to_its_chapter():
    appendices = [p for p in site_pages() if p.endswith("_appendix.html")]
    assert len(appendices) >= 5
    missing = [p for p in appendices if f'href="{Path(p).stem.removesuffix("_appendix")}.html"' not in _article(p)]
    assert missing == [], missing


def test_tapping_a_section_in_the_phone_contents_drawer_closes_it(browser, server):
    tab = OfflinePage(browser, server, size=(390, 844), touch=True)
    page = tab.open("notebooks/08_transformer_translation.html")
    button = [b for b in page.query_selector_all(".secondary-toggle") if b.is_visible()][0]
    button.tap()
    page.wait_for_timeout(400)
    assert page.evaluate("document.getElementById('pst-secondary-sidebar-modal').open")
    links = [a for a in page.query_selector_all("#pst-secondary-sidebar-modal a[href*='#']") if a.is_visible()]
    links[len(links) // 2].tap()
    page.wait_for_timeout(600)
    assert not page.evaluate("document.getElementById('pst-secondary-sidebar-modal').open"), "the drawer stayed open"
    assert page.evaluate("window.scrollY") > 500
    assert tab.failures == []
    tab.close()


# Each visible code box of the article (a code cell's source or printed output): its font size, the body text's, and
# how many characters of a line it shows (its content width over the width of one character of its font).
CODE_BOXES_JS = r"""() => {
  const body = parseFloat(getComputedStyle(document.querySelector('article p') || document.body).fontSize);
  const boxes = [];
  for (const pre of document.querySelectorAll('article div.cell_input div.highlight pre, article div.cell_output pre')) {
    if (!pre.checkVisibility()) continue;
    const style = getComputedStyle(pre);
    const probe = document.createElement('span');
    probe.textContent = 'x'.repeat(50);
    probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
    pre.appendChild(probe);
    const char = probe.getBoundingClientRect().width / 50;
    probe.remove();
    const width = pre.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    boxes.push({size: parseFloat(style.fontSize), chars: Math.floor(width / char), output: !!pre.closest('.cell_output')});
  }
  return {body, boxes};
}"""


def test_on_a_phone_code_is_readable_and_shows_40_characters(browser, server):
    """On a 390×844 phone every code box of four chapters (source and printed output): its text at least 12 px and
    no larger than the body text, and at least 40 characters of a line in view (the rest scrolls in the box)."""
    tab = OfflinePage(browser, server, size=(390, 844), touch=True)
    sizes, chars, bad, n = set(), [], [], 0
    for stem in ("01_tokens_and_embeddings", "04_scaled_dot_product_attention", "08_transformer_translation",
                 "10_attention_at_scale"):
        page = tab.open(f"notebooks/{stem}.html")
        report = page.evaluate(CODE_BOXES_JS)
        assert len(report["boxes"]) >= 10, (stem, len(report["boxes"]))
        for box in report["boxes"]:
            n += 1
            sizes.add(box["size"])
            chars.append(box["chars"])
            if not 12 <= box["size"] <= report["body"] or box["chars"] < 40:
                bad.append((stem, box, report["body"]))
    page.screenshot(path=str(ROOT / "build" / "site-test" / "phone_code_box_390.png"))
    assert tab.failures == []
    tab.close()
    assert bad == [], f"{len(bad)} of {n} code boxes too small, too large or narrower than 40 characters: {bad[:3]}"
    print(f"\non a 390 px phone: {n} code boxes, font {sorted(sizes)} px, {min(chars)}-{max(chars)} characters of a line "
          f"in view")


def test_a_first_visit_logs_no_console_error(browser, server):
    errors = []
    for path in ("site/index.html", "notebooks/04_scaled_dot_product_attention.html", "RESULTS.html"):
        tab = OfflinePage(browser, server)   # a fresh context: a first visit, nothing stored
        tab.page.on("console", lambda m, path=path: errors.append(f"{path}: {m.text}") if m.type == "error" else None)
        tab.open(path)
        tab.page.wait_for_timeout(500)
        assert tab.failures == []
        tab.close()
    assert errors == [], errors


def test_search_from_files_says_it_has_no_snippets(browser):
    """From file:// the search lists its results with no snippet and says how to have them, with no failed fetch."""
    context = browser.new_context()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto((SITE / "search.html").as_uri() + "?q=causal+mask", wait_until="load")
    page.wait_for_selector("#search-results ul.search li", timeout=60_000)
    page.wait_for_timeout(1500)
    assert "served over http" in page.locator(".course-search-note").inner_text()
    assert page.locator("#search-results ul.search li").count() >= 3
    context.close()
    assert errors == [], errors[:5]


def test_search_snippets_show_no_raw_tex(browser, server):
    tab = OfflinePage(browser, server)
    page = tab.open("search.html?q=causal+mask")
    page.wait_for_selector("#search-results ul.search li p.context", timeout=60_000)
    page.wait_for_timeout(1500)
    snippets = page.eval_on_selector_all("#search-results p.context", "els => els.map(e => e.textContent)")
    assert snippets and not [s for s in snippets if "\\(" in s or "\\)" in s], snippets[:3]
    tab.close()


def test_the_pdf_metadata_and_contents():
    pdf = ROOT / "build" / "site-test" / "course.pdf"   # printed by tests/site/test_book_pdf.py
    if not pdf.is_file():
        pytest.skip("no PDF: tests/site/test_book_pdf.py prints it first")
    from pypdf import PdfReader

    sys.path.insert(0, str(ROOT))
    from courseware.editions.book_pdf import BOOK_AUTHOR, BOOK_TITLE, start_pages

    reader = PdfReader(pdf)
    assert reader.metadata.title == BOOK_TITLE and reader.metadata.author == BOOK_AUTHOR, reader.metadata
    contents = " ".join(reader.pages[k].extract_text() for k in range(start_pages(pdf)["p0"] - 1))
    assert contents.lstrip().startswith("Contents")
    assert contents.count("After the course") == 1, contents.count("After the course")
