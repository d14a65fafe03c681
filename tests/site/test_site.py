"""The course website (`make site`, scripts/editions/build_site.py) as a reader sees it, in Chromium.

`make test-site` builds build/site/ and runs this file (pytest marker `site`; `make test` deselects
it). The site is served from 127.0.0.1 and every request to anything else is refused and recorded.
Each page is opened once (the `crawl` fixture) and what it showed is checked by the tests below:

* no request failed or went outside the local server;
* every internal link points at a file of the site and every #anchor at an id on its page;
* every figure (image/png output) of every committed notebook is on its page, byte for byte;
* no raw `$$`, `\\frac` or `\\begin{` is left on screen (MathJax typeset everything);
* speaker notes, open questions' model answers and code model answers are folded (not visible
  before their toggle is opened; a code answer shows after its "Show the model answer" button is
  clicked); hidden tests and mark schemes are not on the page at all;
* the built-in search lists the notebook that teaches a term for a handful of course terms;
* axe-core (axe-playwright-python's bundled axe.min.js) finds no serious or critical violation.

Everything it writes goes under build/ (screenshots: build/site-test/); the checkout stays clean.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import re
import subprocess
import sys
import threading
import urllib.parse
from collections import Counter
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
SHOTS = ROOT / "build" / "site-test"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
sys.path.insert(0, str(ROOT))
from scripts.editions.book_pdf import _Quiet, chromium_path  # noqa: E402  (the PDF script serves and prints the same site)

pytestmark = pytest.mark.site

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# search term -> the notebook that teaches it
SEARCHES = {
    "teacher forcing": "02_rnn_seq2seq",
    "online softmax": "10_attention_at_scale",
    "positional encoding": "06_positional_encoding",
    "label smoothing": "08_transformer_translation",
    "permutation equivariance": "04_scaled_dot_product_attention",
    "byte-pair encoding": "01_tokens_and_embeddings",
}
RAW_MATH = ("$$", "\\frac", "\\begin{")
SERIOUS = ("serious", "critical")

# What a page showed: run in the page after MathJax has finished.
PAGE_REPORT_JS = r"""
() => {
  const hidden = (el) => el.closest('pre, code, script, style, textarea, mjx-container, .highlight, .cell_input');
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const visible = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!el || hidden(el) || !n.textContent.trim()) continue;
    if (el.checkVisibility({visibilityProperty: true, opacityProperty: true})) visible.push(n.textContent);
  }
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id)
      .concat([...document.querySelectorAll('a[name]')].map(e => e.getAttribute('name')));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  const figures = [...document.querySelectorAll('.cell_output img')].map(i => ({src: i.src, ok: i.complete && i.naturalWidth > 0, alt: i.alt}));
  const notes = [...document.querySelectorAll('details.speaker-notes')].map(d => ({
      open: d.open,
      shown: [...d.children].filter(c => c.tagName !== 'SUMMARY').some(c => c.checkVisibility())}));
  const answers = [...document.querySelectorAll('details:not(.speaker-notes)')].filter(d => /Model answer/.test(d.querySelector('summary')?.textContent || ''))
      .map(d => ({open: d.open, shown: [...d.children].filter(c => c.tagName !== 'SUMMARY').some(c => c.checkVisibility())}));
  const codeAnswers = [...document.querySelectorAll('.cell.tag_hide-cell')].map(c => ({
      shown: [...c.querySelectorAll('.cell_input')].some(i => i.checkVisibility()),
      button: (c.querySelector('summary, button')?.textContent || '').trim()}));
  return {visible: visible.join(' '), ids, links, figures, notes, answers, codeAnswers,
          mathjax: !!window.MathJax, title: document.title};
}
"""


@pytest.fixture(scope="module")
def server():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site in {SITE}: run `make site` (or `make test-site`, which builds it first)")
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed: `make test-site`")
    exe = chromium_path()
    if exe is None:
        pytest.skip("no Chromium found (COURSE_CHROMIUM, /usr/bin/chromium, PATH); Debian: apt-get install chromium")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class OfflinePage:
    """One browser page whose every request outside the local server is refused; failures recorded."""

    def __init__(self, browser, base: str, color_scheme: str = "light"):
        self.base, self.failures = base, []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=color_scheme)
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.context.route("**/*", self._route)
        self.page.on("requestfailed", lambda r: self.failures.append(f"failed: {r.url} ({r.failure})"))
        self.page.on("response", lambda r: self.failures.append(f"HTTP {r.status}: {r.url}") if r.status >= 400 else None)
        self.page.on("pageerror", lambda e: self.failures.append(f"script error: {e}"))

    def _route(self, route):
        url = route.request.url
        if url.startswith(self.base) or url.startswith(("data:", "blob:", "about:")):
            route.continue_()
        else:
            self.failures.append(f"outside request refused: {url}")
            route.abort("blockedbyclient")

    def open(self, path: str):
        self.page.goto(self.base + path, wait_until="load")
        self.page.evaluate("async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }")
        self.page.wait_for_timeout(200)
        return self.page

    def close(self):
        self.context.close()


def _is_redirect(path: Path) -> bool:
    return 'http-equiv="Refresh"' in path.read_text(errors="replace")[:500]


def site_pages() -> list[str]:
    """Every HTML page of the site but the redirect Jupyter Book writes at index.html (to the landing page)."""
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
                  if not p.relative_to(SITE).as_posix().startswith(("_static/", "_sources/")) and not _is_redirect(p))


@pytest.fixture(scope="module")
def crawl(browser, server):
    """Every page opened once: {path: report} (see PAGE_REPORT_JS), with the failed requests and
    axe-core's violations (None without axe-playwright-python)."""
    try:
        from axe_playwright_python.sync_playwright import Axe
        axe = Axe()
    except ImportError:
        axe = None
    reports = {}
    tab = OfflinePage(browser, server)
    SHOTS.mkdir(parents=True, exist_ok=True)
    for path in site_pages():
        tab.failures = []
        page = tab.open(path)
        report = page.evaluate(PAGE_REPORT_JS)
        report["failures"] = list(tab.failures)
        report["axe"] = axe.run(page).response["violations"] if axe else None
        reports[path] = report
    tab.close()
    return reports


def test_the_site_root_opens_the_landing_page(browser, server):
    tab = OfflinePage(browser, server)
    tab.page.goto(server, wait_until="load")
    tab.page.wait_for_url("**/site/index.html")
    tab.page.wait_for_load_state("load")
    assert tab.page.locator("h1").first.inner_text().startswith("Attention, from RNNs to Transformers")
    tab.page.screenshot(path=str(SHOTS / "landing.png"))
    assert tab.failures == []
    tab.close()


def notebook_page(nb_path: Path) -> str:
    return f"notebooks/{nb_path.stem}.html"


# ------------------------------------------------------------------ requests, links, maths


def test_every_page_opens_with_no_failed_or_outside_request(crawl):
    assert len(crawl) >= 10 + 5 + 1, sorted(crawl)
    bad = {path: r["failures"] for path, r in crawl.items() if r["failures"]}
    assert bad == {}
    print(f"{len(crawl)} pages opened, no request failed or left 127.0.0.1")


def test_every_internal_link_and_anchor_resolves(crawl, server):
    ids = {path: set(r["ids"]) for path, r in crawl.items()}
    broken, checked = [], 0
    for path, report in crawl.items():
        for href in report["links"]:
            if not href.startswith(server):
                continue
            url = urllib.parse.urlsplit(href)
            target = urllib.parse.unquote(url.path[len(urllib.parse.urlsplit(server).path):]) or "index.html"
            if target.endswith("/"):
                target += "index.html"
            checked += 1
            if not (SITE / target).is_file():
                broken.append(f"{path}: {href} (no file {target})")
            elif url.fragment and target in ids and urllib.parse.unquote(url.fragment) not in ids[target]:
                broken.append(f"{path}: {href} (no id {url.fragment!r} on {target})")
    assert broken == [], "\n".join(broken[:50])
    print(f"{checked} internal links checked")


def test_no_raw_tex_on_screen(crawl):
    raw = {path: [s for s in RAW_MATH if s in r["visible"]] for path, r in crawl.items()}
    assert {p: s for p, s in raw.items() if s} == {}
    assert all(r["mathjax"] for p, r in crawl.items() if p.startswith("notebooks/"))


# ------------------------------------------------------------------ figures


def _pngs(nb) -> Counter:
    found = Counter()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {}).get("image/png")
            if data:
                found[hashlib.sha256(base64.b64decode("".join(data))).hexdigest()] += 1
    return found


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_every_figure_of_the_notebook_is_on_its_page(crawl, server, nb_path):
    report = crawl[notebook_page(nb_path)]
    expected = _pngs(nbformat.read(nb_path, as_version=4))
    assert sum(expected.values()) > 0
    shown = Counter()
    for fig in report["figures"]:
        assert fig["ok"], f"{fig['src']} did not load"
        assert len(fig["alt"]) > 20 and fig["alt"].startswith("Figure"), f"alt text {fig['alt']!r} on {fig['src']}"
        rel = urllib.parse.unquote(urllib.parse.urlsplit(fig["src"]).path).lstrip("/")
        shown[hashlib.sha256((SITE / rel).read_bytes()).hexdigest()] += 1
    missing = expected - shown
    assert not missing, f"{sum(missing.values())} of {sum(expected.values())} figures are not on the page"


# ------------------------------------------------------------------ what stays folded or out


def _regions(source: str, begin: str, end: str) -> list[str]:
    return re.findall(rf"(?s){re.escape(begin)}(.*?){re.escape(end)}", source)


def _snippets(text: str) -> list[str]:
    """A few distinctive plain-text lines of a region (what a reader would see if it were shown)."""
    lines = [re.sub(r"[*`$\\<>]|\*\*", "", ln).strip() for ln in text.splitlines()]
    return [ln[:60] for ln in lines if len(ln) > 30 and "{" not in ln and "_" not in ln][:3]


@pytest.mark.parametrize("nb_path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_notes_answers_hidden_tests_and_mark_schemes_are_not_shown(crawl, nb_path):
    nb = nbformat.read(nb_path, as_version=4)
    report = crawl[notebook_page(nb_path)]
    html = (SITE / notebook_page(nb_path)).read_text()
    n_notes = sum(c.metadata.get("slideshow", {}).get("slide_type") == "notes" for c in nb.cells)
    assert len(report["notes"]) == n_notes > 0
    assert not any(n["open"] or n["shown"] for n in report["notes"]), "a speaker note is open"
    assert not any(a["open"] or a["shown"] for a in report["answers"]), "an open question's answer is open"
    solutions = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
    code_answers = [c for c in solutions if c.cell_type == "code"]
    assert len(report["codeAnswers"]) == len(code_answers) > 0
    assert not any(a["shown"] for a in report["codeAnswers"]), "a code model answer is shown before its toggle"
    assert len(report["answers"]) == len(solutions) - len(code_answers)
    for cell in nb.cells:
        if cell.cell_type == "code":
            for region in _regions(cell.source, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"):
                for line in region.splitlines():
                    if "hidden_check(" in line or "def judge" in line:
                        assert line.strip() not in html, f"hidden test on the page: {line.strip()}"
        else:
            for region in _regions(cell.source, "### BEGIN MARK SCHEME", "### END MARK SCHEME"):
                for snippet in _snippets(region):
                    assert snippet not in html, f"mark scheme on the page: {snippet}"
            if cell.metadata.get("slideshow", {}).get("slide_type") == "notes":
                for snippet in _snippets(re.sub(r"(?s)<summary>.*?</summary>", "", cell.source)):
                    assert snippet not in report["visible"], f"speaker note visible: {snippet}"
    assert "BEGIN HIDDEN TESTS" not in html and "BEGIN MARK SCHEME" not in html and "BEGIN SOLUTION" not in html


def test_a_code_model_answer_opens_with_its_button(browser, server):
    tab = OfflinePage(browser, server)
    page = tab.open("notebooks/04_scaled_dot_product_attention.html")
    cell = page.locator(".cell.tag_hide-cell").first
    assert not cell.locator(".cell_input").is_visible()
    toggle = cell.get_by_text("Show the model answer")
    toggle.click()
    page.wait_for_timeout(300)
    assert cell.locator(".cell_input").is_visible()
    assert "def attention" in cell.locator(".cell_input").inner_text()
    cell.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "model_answer_open.png"))
    assert tab.failures == []
    tab.close()


# ------------------------------------------------------------------ search, dark mode


@pytest.mark.parametrize("term", list(SEARCHES))
def test_search_lists_the_page_that_teaches_it(browser, server, term):
    tab = OfflinePage(browser, server)
    page = tab.open("search.html?q=" + urllib.parse.quote(term))
    page.wait_for_selector("#search-results ul.search li, #search-results p", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#search-progress')?.textContent.includes('Preparing')",
                           timeout=30_000)
    page.wait_for_timeout(500)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(a => a.href)")
    pages = list(dict.fromkeys(urllib.parse.urlsplit(h).path.rsplit("/", 1)[-1].removesuffix(".html") for h in hits))
    assert tab.failures == []
    expected = SEARCHES[term]
    assert expected in pages, f"search for {term!r} listed {pages}"
    print(f"search {term!r}: {expected} is result {pages.index(expected) + 1} of {len(pages)}: {pages}")
    tab.close()


def test_dark_mode(browser, server):
    tab = OfflinePage(browser, server, color_scheme="dark")
    page = tab.open("notebooks/06_positional_encoding.html")
    theme = page.evaluate("document.documentElement.dataset.theme")
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    page.screenshot(path=str(SHOTS / "dark.png"))
    assert theme == "dark", theme
    rgb = [int(x) for x in re.findall(r"\d+", background)[:3]]
    assert sum(rgb) < 3 * 80, background
    assert tab.failures == []
    tab.close()


# ------------------------------------------------------------------ accessibility


def test_axe_finds_no_serious_or_critical_violation(crawl):
    if any(r["axe"] is None for r in crawl.values()):
        pytest.skip("axe-playwright-python is not installed (`make test-site` installs it)")
    found = {}
    for path, report in crawl.items():
        for v in report["axe"]:
            key = (v["id"], v["impact"])
            found.setdefault(key, {"pages": set(), "nodes": 0, "help": v["help"], "example": v["nodes"][0]["html"][:160]})
            found[key]["pages"].add(path)
            found[key]["nodes"] += len(v["nodes"])
    print(f"axe-core on {len(crawl)} pages:" + ("" if found else " no violation"))
    for (rule, impact), info in sorted(found.items(), key=lambda kv: (kv[0][1] not in SERIOUS, kv[0][0])):
        print(f"  {impact:9s} {rule}: {info['nodes']} elements on {len(info['pages'])} pages ({info['help']}); "
              f"e.g. {info['example']} on {sorted(info['pages'])[:3]}")
    serious = {k: v for k, v in found.items() if k[1] in SERIOUS}
    assert serious == {}, sorted(f"{r} ({i}): {v['nodes']} elements, e.g. {v['example']}" for (r, i), v in serious.items())


def test_checkout_is_clean():
    """Nothing above (nor the build before it) wrote into the tracked tree."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=normal"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", status
