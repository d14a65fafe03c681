"""The course website (`make site`, courseware/editions/build_site.py) as a reader sees it, in Chromium.

`make test-site` builds build/site/ and runs this file (pytest marker `site`; `make test` deselects
it). The site is served from 127.0.0.1 and every request to anything else is refused and recorded.
Each page is opened once (the `crawl` fixture) and what it showed is checked by the tests below:

* no request failed or went outside the local server;
* every internal link points at a file of the site and every #anchor at an id on its page;
* every figure (image/png output) of every committed notebook is on its page, byte for byte;
* no raw `$$`, `\\frac` or `\\begin{` is left on screen (MathJax typeset everything);
* open questions' model answers and code model answers are folded (not visible before their toggle is
  opened; a code answer shows after its "Show the model answer" button is clicked); speaker notes, hidden
  tests, mark schemes and the lines the hidden tests printed are not on the page at all;
* a chapter's "Download .ipynb" gives the student edition of that chapter (`make student`), cell by cell,
  and its first cells run in an empty folder;
* the built-in search lists the notebook that teaches a term for a handful of course terms, and no two
  results with the same title;
* axe-core (axe-playwright-python's bundled axe.min.js) finds no serious or critical violation;
* on a phone (390×844) and at 800 px, tapping ☰ and the contents button opens their drawers; at 1366 px
  ☰ hides and shows the chapter menu, and there is one search box;
* on a phone no page is wider than the screen, and in dark mode every piece of inline code (the
  explorers' notes included) and axe-core's colour-contrast rule pass on every page;
* the landing page links the site's licence page and the PDF; "Next" after the last chapter leads to
  the closing page;
* a "Check yourself" quiz on one chapter of each part, answered wrong and then right by clicks (and a number
  typed), shows the feedback written for each answer, with no kernel.

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
from courseware.editions.book_pdf import _Quiet, chromium_path  # noqa: E402  (the PDF script serves and prints the same site)

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

    def __init__(self, browser, base: str, color_scheme: str = "light", size=(1280, 900), touch: bool = False):
        self.base, self.failures = base, []
        self.context = browser.new_context(viewport={"width": size[0], "height": size[1]}, color_scheme=color_scheme,
                                           has_touch=touch, is_mobile=touch)
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
    """(The number of pages is not fixed: a notebook's appendix becomes a page of its own.)"""
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
                hint = " (courseware/editions/book_pdf.py writes it: make book-pdf)" if target == "course.pdf" else ""
                broken.append(f"{path}: {href} (no file {target}){hint}")
            elif url.fragment and target in ids and urllib.parse.unquote(url.fragment) not in ids[target]:
                broken.append(f"{path}: {href} (no id {url.fragment!r} on {target})")
    assert broken == [], "\n".join(broken[:50])
    print(f"{checked} internal links checked")


def test_no_raw_tex_on_screen(crawl):
    raw = {path: [s for s in RAW_MATH if s in r["visible"]] for path, r in crawl.items()}
    assert {p: s for p, s in raw.items() if s} == {}
    assert all(r["mathjax"] for p, r in crawl.items()   # a page with no maths loads no MathJax (build_site.py)
               if p.startswith("notebooks/") and 'class="math' in (SITE / p).read_text(encoding="utf-8"))


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
    pages = [notebook_page(nb_path)]
    appendix = pages[0].removesuffix(".html") + "_appendix.html"   # the appendix's own page (build_site.split_appendix)
    pages += [appendix] if appendix in crawl else []
    expected = _pngs(nbformat.read(nb_path, as_version=4))
    assert sum(expected.values()) > 0
    shown = Counter()
    for fig in (f for page in pages for f in crawl[page]["figures"]):
        assert fig["ok"], f"{fig['src']} did not load"
        assert len(fig["alt"]) > 20 and fig["alt"].startswith("Figure"), f"alt text {fig['alt']!r} on {fig['src']}"
        rel = urllib.parse.unquote(urllib.parse.urlsplit(fig["src"]).path).lstrip("/")
        shown[hashlib.sha256((SITE / rel).read_bytes()).hexdigest()] += 1
    missing = expected - shown
    assert not missing, f"{sum(missing.values())} of {sum(expected.values())} figures are not on its pages {pages}"


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
    assert n_notes > 0 and report["notes"] == [], f"{len(report['notes'])} speaker notes on the page (the reader's edition has none)"
    assert "Speaker notes" not in report["visible"]
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
                    assert snippet not in html, f"speaker note on the page: {snippet}"
    assert "BEGIN HIDDEN TESTS" not in html and "BEGIN MARK SCHEME" not in html and "BEGIN SOLUTION" not in html
    # what a removed hidden test printed is removed with it (no output without the code that made it)
    orphans = re.findall(r"\w+: (?:hidden tests passed|recorded for the judge)", html)
    assert orphans == [], f"{len(orphans)} lines printed by hidden tests on the page, e.g. {orphans[0]}"


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


@pytest.mark.parametrize("term", ["teacher forcing", "brevity penalty", "FlashAttention"])
def test_search_snippets_show_the_words_searched(browser, server, term):
    """Each result's summary is the text around the hit, not the page's buttons and contents list (issue 41:
    Sphinx's own summary showed "...Colab" for "brevity penalty"; site/_static/course.js)."""
    tab = OfflinePage(browser, server)
    page = tab.open("search.html?q=" + urllib.parse.quote(term))
    page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#search-progress')?.textContent.includes('Preparing')",
                           timeout=30_000)
    page.wait_for_function("() => [...document.querySelectorAll('#search-results ul.search li')]"
                           ".every(li => li.querySelector('p.context'))", timeout=30_000)
    snippets = page.eval_on_selector_all("#search-results ul.search li",
                                         "els => els.map(li => [li.querySelector('a').getAttribute('href'), "
                                         "li.querySelector('p.context').textContent])")
    assert snippets and tab.failures == []
    missing = [(href, text[:120]) for href, text in snippets if term.lower() not in text.lower()]
    assert not missing, f"search for {term!r}: snippets without it: {missing}"
    print(f"search {term!r}: {snippets[0][0]}: {snippets[0][1][:160]}")
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


# ------------------------------------------------------------------ the downloaded notebook


# What the download must not carry, and why (a public site; a class may grade the same exercises).
NOT_IN_A_DOWNLOAD = {
    r"### (BEGIN|END) HIDDEN TESTS|hidden_check\(": "a hidden test",
    r"### (BEGIN|END) (SOLUTION|MARK SCHEME)": "a model answer or a mark scheme",
    r"(?i)speaker notes|NOTES_OPEN": "speaker notes",
    r"learner-only|student-only|NBVAL_": "an edition marker or a test-runner directive",
}
# Run in the course's own environment (.venv): the first code cells of each downloaded notebook, alone in an
# empty folder; prints one JSON line {name: [error or None per cell]}.
RUN_FIRST_CELLS = r"""
import json, os, sys, tempfile, shutil, nbformat
from nbclient import NotebookClient
k, result = int(sys.argv[1]), {}
for path in sys.argv[2:]:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"][:k]
    nb.cells = code
    folder = tempfile.mkdtemp(prefix="course-download-")
    shutil.copy(path, folder)
    errors = []
    try:
        NotebookClient(nb, kernel_name="python3", timeout=300, allow_errors=True,
                       resources={"metadata": {"path": folder}}).execute()
    finally:
        leftover = sorted(set(os.listdir(folder)) - {os.path.basename(path)})
        shutil.rmtree(folder, ignore_errors=True)
    for c in nb.cells:
        err = [f"{o.ename}: {o.evalue}" for o in c.outputs if o.output_type == "error"]
        errors.append(err[0] if err else None)
    result[os.path.basename(path)] = {"errors": errors, "files": leftover}
print(json.dumps(result))
"""
FIRST_CELLS = 3


def _comparable(cell) -> dict:
    return {k: cell.get(k) for k in ("cell_type", "source", "metadata", "outputs", "execution_count", "attachments")}


def test_download_gives_the_student_edition(browser, server, tmp_path):
    """Every notebook page's "Download .ipynb" (its appendix page's too) is the student edition of its chapter,
    cell by cell (``make student``'s release, computed here with the same function): no hidden tests, no model
    answers, no mark schemes, no speaker notes, no outputs, no instructor metadata; with no repository named, its
    mentions of the placeholder address are left out and the bootstrap cell names none (tests/site/test_repo_url.py). The link is a download
    (``download`` attribute: from file:// it saves the file rather than opening JSON in a tab). Then the first
    cells of every downloaded chapter run in an empty folder, in the course's environment (.venv)."""
    from courseware.authoring.bootstrap_cell import is_bootstrap, without_repository
    from courseware.editions.build_site import config, name_repository, repository, unname_repository
    from courseware.editions.make_student import student_version

    repo = repository(config())   # the build's own rule: $REPO_URL, else site/_config.yml's unless the placeholder

    tab = OfflinePage(browser, server)
    checked, downloaded, figures = [], {}, []
    for path in site_pages():
        if not path.startswith("notebooks/"):
            continue
        page = tab.open(path)
        links = page.eval_on_selector_all(".btn-download-source-button",
                                          "els => els.map(a => [a.href, a.hasAttribute('download')])")
        assert len(links) == 1, f"{path}: {len(links)} download links"
        href, is_download = links[0]
        assert is_download, f"{path}: the download link has no download attribute"
        name = urllib.parse.unquote(urllib.parse.urlsplit(href).path).rsplit("/", 1)[-1]
        committed = ROOT / "notebooks" / name
        assert committed.is_file(), f"{path} downloads {name}, which is not a notebook of the repository"
        assert path.removeprefix("notebooks/").removesuffix(".html").startswith(committed.stem)
        response = page.request.get(href)
        assert response.ok, f"{href}: HTTP {response.status}"
        got = nbformat.reads(response.body().decode(), as_version=4)
        want = student_version(nbformat.read(committed, as_version=4))
        for cell in want.cells:   # the one difference: the repository named, or (none named) its mentions left out
            cell.source = (name_repository(cell.source, repo) if repo else
                           without_repository(cell.source) if is_bootstrap(cell) else unname_repository(cell.source))
        assert len(got.cells) == len(want.cells), f"{path}: {len(got.cells)} cells, the student edition {len(want.cells)}"
        differ = [i for i, (a, b) in enumerate(zip(got.cells, want.cells)) if _comparable(a) != _comparable(b)]
        assert differ == [], f"{path}: cells {differ[:10]} differ from the student edition's"
        assert got.metadata == want.metadata
        found = [f"cell {i}: {why}" for i, cell in enumerate(got.cells) for pattern, why in NOT_IN_A_DOWNLOAD.items()
                 if re.search(pattern, cell.source)]
        assert found == [], f"{path}: {found[:5]}"
        assert not any(c.get("outputs") for c in got.cells), f"{path}: outputs in the download"
        assert not any(c.metadata.get("jupyter", {}).get("source_hidden") or c.metadata.get("slideshow", {}).get(
            "slide_type") == "notes" for c in got.cells)
        assert "widgets" not in got.metadata
        checked.append(name)
        if name not in downloaded:
            (tmp_path / name).write_bytes(response.body())
            downloaded[name] = (len(got.cells), len(nbformat.read(committed, as_version=4).cells))
    assert tab.failures == []
    tab.close()
    assert sorted(set(checked)) == [p.name for p in NOTEBOOKS]
    for name, (n, source) in sorted(downloaded.items()):
        print(f"  {name}: download {n} cells = the student edition's {n}, cell by cell (the committed source: {source})")
    print(f"{len(checked)} notebook pages download the student edition of their chapter")
    course_python = ROOT / ".venv" / "bin" / "python"
    if not course_python.is_file():
        pytest.skip("no course environment (.venv: `make install`) to run the downloaded notebooks' first cells in")
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("VIRTUAL_ENV")}
    proc = subprocess.run([str(course_python), "-c", RUN_FIRST_CELLS, str(FIRST_CELLS),
                           *[str(tmp_path / n) for n in sorted(downloaded)]],
                          capture_output=True, text=True, timeout=1800, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = __import__("json").loads(proc.stdout.strip().splitlines()[-1])
    failed = {n: r["errors"] for n, r in result.items() if any(r["errors"])}
    assert failed == {}, failed
    assert sorted(result) == sorted(downloaded)
    print(f"the first {FIRST_CELLS} code cells of each of the {len(result)} downloads ran in an empty folder, no error")


# ------------------------------------------------------------------ a phone, a tablet, a laptop

PHONE, TABLET, LAPTOP = (390, 844), (800, 900), (1366, 768)
DRAWERS_JS = """() => ['pst-primary-sidebar-modal', 'pst-secondary-sidebar-modal'].map(id => {
  const d = document.getElementById(id);
  return {open: d.open, visible: d.checkVisibility(), links: d.querySelectorAll('a[href]').length,
          width: Math.round(d.getBoundingClientRect().width)};
})"""


def _tab(browser, server, size, color_scheme="light"):
    """A page the size of a phone (a touch screen), a tablet or a laptop."""
    return OfflinePage(browser, server, color_scheme=color_scheme, size=size, touch=size == PHONE)


@pytest.mark.parametrize("size", [PHONE, TABLET], ids=["390px", "800px"])
def test_the_menu_and_contents_buttons_open_their_drawers(browser, server, size):
    tab = _tab(browser, server, size)
    page = tab.open("notebooks/05_multi_head_attention.html")
    for i, (selector, name) in enumerate([(".primary-toggle", "menu"), (".secondary-toggle", "contents")]):
        buttons = [b for b in page.query_selector_all(selector) if b.is_visible()]
        assert len(buttons) == 1, f"{len(buttons)} visible {selector} buttons"
        assert not any(d["open"] for d in page.evaluate(DRAWERS_JS))
        buttons[0].tap() if size == PHONE else buttons[0].click()
        page.wait_for_timeout(400)
        drawer = page.evaluate(DRAWERS_JS)[i]
        page.screenshot(path=str(SHOTS / f"drawer_{name}_{size[0]}.png"))
        assert drawer["open"] and drawer["visible"] and drawer["width"] > 150, f"the {name} drawer did not open: {drawer}"
        assert drawer["links"] >= (10 if name == "menu" else 5), drawer
        page.keyboard.press("Escape")
        page.wait_for_timeout(300)
        assert not page.evaluate(DRAWERS_JS)[i]["open"]
    assert tab.failures == []
    tab.close()


def test_at_laptop_width_the_menu_button_hides_the_sidebar_and_one_search_box(browser, server):
    tab = _tab(browser, server, LAPTOP)
    page = tab.open("notebooks/05_multi_head_attention.html")
    searches = [e for e in page.query_selector_all(".search-button-field, form.bd-search") if e.is_visible()]
    assert len(searches) == 1, f"{len(searches)} search boxes at 1366 px"
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.is_visible()
    button = [b for b in page.query_selector_all(".primary-toggle") if b.is_visible()][0]
    button.click()
    page.wait_for_timeout(400)
    page.screenshot(path=str(SHOTS / "menu_hidden_1366.png"))
    assert not sidebar.is_visible(), "☰ did not hide the chapter menu at 1366 px"
    assert not any(d["open"] for d in page.evaluate(DRAWERS_JS))
    button.click()
    page.wait_for_timeout(400)
    assert sidebar.is_visible()
    assert tab.failures == []
    tab.close()


# Inline code whose colours contrast less than 4.5:1 (WCAG AA), with the background it is seen on (the
# first ancestor with an opaque background).
INLINE_CODE_CONTRAST_JS = r"""
() => {
  const rgba = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; })
      .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c.slice(0, 3);
    }
    return [255, 255, 255];
  };
  const low = [];
  for (const el of document.querySelectorAll('article code:not(pre code), article .course-widget-note')) {
    if (!el.textContent.trim() || !el.checkVisibility()) continue;
    const [a, b] = [lum(rgba(getComputedStyle(el).color)), lum(background(el))].sort((x, y) => y - x);
    const ratio = (a + 0.05) / (b + 0.05);
    if (ratio < 4.5) low.push(`${JSON.stringify(el.textContent.slice(0, 40))} ${ratio.toFixed(2)}:1`);
  }
  return {low, checked: document.querySelectorAll('article code:not(pre code)').length};
}
"""


# axe-core's colour-contrast rule takes half a minute on a chapter's page (more on a busy machine): in dark mode
# it runs on the landing page, a chapter with an explorer's note and a guide with tables; the inline code check
# above runs on every page.
AXE_DARK_PAGES = ("site/index.html", "notebooks/05_multi_head_attention.html", "RESULTS.html")


@pytest.fixture(scope="module")
def phone_dark_crawl(browser, server):
    """Every page on a phone (390×844) in dark mode: {path: {width, low contrast inline code, axe-core's
    colour-contrast violations (AXE_DARK_PAGES)}}. The width is the page's own (document scrollWidth): a code
    cell's long lines scroll inside the cell's box, as the theme shows them, and do not widen the page."""
    try:
        from axe_playwright_python.sync_playwright import Axe
        axe = Axe()
    except ImportError:
        axe = None
    tab = _tab(browser, server, PHONE, color_scheme="dark")
    reports = {}
    for path in site_pages():
        page = tab.open(path)
        report = page.evaluate(INLINE_CODE_CONTRAST_JS)
        report["width"] = page.evaluate("document.documentElement.scrollWidth")
        report["theme"] = page.evaluate("document.documentElement.dataset.theme")
        if path in AXE_DARK_PAGES:
            report["axe"] = axe.run(page, options={"runOnly": ["color-contrast"]}).response["violations"] if axe else None
        reports[path] = report
    page = tab.open("notebooks/05_multi_head_attention.html")
    page.locator(".course-widget-note").first.scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / "dark_explorer_note_390.png"))
    tab.close()
    return reports


def test_no_page_is_wider_than_a_phone(phone_dark_crawl):
    wide = {path: r["width"] for path, r in phone_dark_crawl.items() if r["width"] > PHONE[0]}
    assert wide == {}, f"pages wider than a 390 px phone: {wide}"
    print(f"{len(phone_dark_crawl)} pages, none wider than 390 px")


def test_dark_mode_inline_code_and_contrast(phone_dark_crawl):
    assert all(r["theme"] == "dark" for r in phone_dark_crawl.values())
    low = {path: r["low"] for path, r in phone_dark_crawl.items() if r["low"]}
    assert low == {}, f"inline code below 4.5:1 in dark mode: {low}"
    assert set(AXE_DARK_PAGES) <= set(phone_dark_crawl)
    if any(phone_dark_crawl[p].get("axe") is None for p in AXE_DARK_PAGES):
        pytest.skip("axe-playwright-python is not installed (`make test-site` installs it)")
    found = {path: [f"{v['id']}: {len(v['nodes'])} elements, e.g. {v['nodes'][0]['html'][:120]}" for v in r["axe"]]
             for path, r in phone_dark_crawl.items() if r.get("axe")}
    assert found == {}, found
    print(f"dark mode: {sum(r['checked'] for r in phone_dark_crawl.values())} pieces of inline code on "
          f"{len(phone_dark_crawl)} pages, none below 4.5:1; axe-core's colour-contrast finds nothing on {AXE_DARK_PAGES}")


# ------------------------------------------------------------------ the landing page, the last page, search


def test_the_landing_page_links_the_sites_licence_page_and_the_pdf(crawl, server):
    links = crawl["site/index.html"]["links"]
    assert server + "site/license.html" in links, [h for h in links if "licen" in h.lower()]
    assert not [h for h in links if "github.com" in h and "license" in h.lower()]
    assert server + "course.pdf" in links


def test_next_after_the_last_chapter_is_the_closing_page(browser, server):
    tab = OfflinePage(browser, server)
    page = tab.open("notebooks/10_attention_at_scale.html")
    for _ in range(3):   # past the chapter's appendix page, if it has one
        page.locator(".prev-next-area a.right-next").click()
        page.wait_for_load_state("load")
        if not page.url.endswith("_appendix.html"):
            break
    assert page.url.endswith("site/closing.html"), page.url
    assert page.locator("article h1").first.inner_text().startswith("After the course")
    assert tab.failures == []
    tab.close()


def test_search_has_no_two_results_with_the_same_title(browser, server):
    tab = OfflinePage(browser, server)
    page = tab.open("search.html?q=" + urllib.parse.quote("Attention, from RNNs to Transformers"))
    page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    page.wait_for_function("() => !document.querySelector('#search-progress')?.textContent.includes('Preparing')",
                           timeout=30_000)
    page.wait_for_timeout(500)
    titles = page.eval_on_selector_all("#search-results ul.search li > a", "els => els.map(a => a.textContent.trim())")
    assert titles and len(titles) == len(set(titles)), Counter(titles).most_common(3)
    assert tab.failures == []
    tab.close()


def test_no_launch_button_above_in_a_figure_note(crawl):
    assert not [p for p, r in crawl.items() if "launch button above" in r["visible"]]


def test_checkout_is_clean():
    """Nothing above (nor the build before it) wrote into the tracked tree."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=normal"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    assert status == "", status


# ------------------------------------------------------------------ Check yourself (courseware.quiz)
QUIZ_PAGES = ["01_tokens_and_embeddings", "04_scaled_dot_product_attention", "07_transformer_block",
              "10_attention_at_scale"]   # one chapter of each part


def _quiz_questions(stem: str) -> list[dict]:
    sys.path.insert(0, str(ROOT))
    from courseware.quiz import parts

    return [q for part in parts(stem[:2]) for q in part["questions"]]


def _plain_text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", html)).replace("&lt;", "<").replace("&gt;", ">").replace(
        "&amp;", "&").strip()


@pytest.mark.parametrize("stem", QUIZ_PAGES, ids=[s[:2] for s in QUIZ_PAGES])
def test_a_quiz_answered_wrong_then_right_shows_its_feedback(browser, server, stem):
    """Every question of the chapter's quizzes is on its page with no kernel; the first multiple-choice question
    and the first numeric one (if any) are answered wrong, then right, by clicks and keys, and each time the
    feedback written for that answer shows, marked incorrect or correct."""
    questions = _quiz_questions(stem)
    tab = OfflinePage(browser, server)
    page = tab.open(f"notebooks/{stem}.html")
    quizzes = page.locator(".Quiz")
    assert quizzes.count() == len(questions), f"{stem}: {quizzes.count()} questions on the page, {len(questions)} in the quiz"
    mc_index = next(i for i, q in enumerate(questions) if q["type"] == "multiple_choice")
    q, box = questions[mc_index], quizzes.nth(mc_index)
    wrong = next(a for a in q["answers"] if not a["correct"])
    right = next(a for a in q["answers"] if a["correct"])
    box.scroll_into_view_if_needed()
    box.locator(".MCButton", has_text=_plain_text(wrong["answer"])[:40]).first.click()
    feedback = box.locator(".Feedback")
    assert "incorrect" in feedback.get_attribute("class")
    assert _plain_text(wrong["feedback"])[:60] in feedback.inner_text()
    box.locator(".MCButton", has_text=_plain_text(right["answer"])[:40]).first.click()
    assert "correct" in feedback.get_attribute("class").split()
    assert _plain_text(right["feedback"])[:60] in feedback.inner_text()
    page.screenshot(path=str(SHOTS / f"quiz_{stem[:2]}.png"))
    numeric = [i for i, q in enumerate(questions) if q["type"] == "numeric"]
    if numeric:
        q, box = questions[numeric[0]], quizzes.nth(numeric[0])
        box.scroll_into_view_if_needed()
        field = box.locator("input.Input-text")
        value = next(a for a in q["answers"] if a.get("correct"))["value"]
        for typed, ok in ((value * 3 + 1, False), (value, True)):
            field.click()
            field.type(f"{typed:g}" if isinstance(typed, float) else str(typed))
            field.press("Enter")
            classes = box.locator(".Feedback").get_attribute("class").split()
            assert ("correct" in classes) is ok and ("incorrect" in classes) is not ok, (typed, classes)
    assert tab.failures == [], tab.failures
    tab.close()


# The contrast of one element's text with the background it is seen on (the first ancestor with an opaque one).
CONTRAST_JS = r"""
(el) => {
  const rgba = (s) => (s.match(/[\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; })
      .reduce((sum, c, i) => sum + c * [0.2126, 0.7152, 0.0722][i], 0);
  let bg = [255, 255, 255];
  for (let e = el; e; e = e.parentElement) {
    const c = rgba(getComputedStyle(e).backgroundColor);
    if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) { bg = c.slice(0, 3); break; }
  }
  const fg = rgba(getComputedStyle(el).color).slice(0, 3);
  const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
  return {ratio: (a + 0.05) / (b + 0.05), fg: `rgb(${fg})`, bg: `rgb(${bg})`};
}
"""
QUIZ_CONTRAST_PAGE = "04_scaled_dot_product_attention"   # a multiple-choice question and a numeric one


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_quiz_state_contrasts_at_least_4_5_to_1(browser, server, scheme):
    """Each state of a quiz, measured in the page (text colour on the background it is seen on, after the colour's
    animation has finished): a question, an option, an option answered wrong and right with its feedback, the number
    box's label, the box typed in, answered wrong and right (by its Check button, issue 53: dark text on the red and
    green was 2.91:1 and 3.52:1) and focused again, and the Check button. The number box opens a phone's number
    keyboard (inputmode="decimal")."""
    questions = _quiz_questions(QUIZ_CONTRAST_PAGE)
    tab = OfflinePage(browser, server, color_scheme=scheme)
    page = tab.open(f"notebooks/{QUIZ_CONTRAST_PAGE}.html")
    assert page.evaluate("document.documentElement.dataset.theme") == scheme
    quizzes = page.locator(".Quiz")
    states = {}

    def measure(name, locator):
        locator.first.scroll_into_view_if_needed()
        states[name] = page.evaluate(CONTRAST_JS, locator.first.element_handle())

    mc = next(i for i, q in enumerate(questions) if q["type"] == "multiple_choice")
    q, box = questions[mc], quizzes.nth(mc)
    measure("question", box.locator(".MultipleChoiceQn"))
    measure("option", box.locator(".MCButton"))
    for label, answer in (("wrong", next(a for a in q["answers"] if not a["correct"])),
                          ("right", next(a for a in q["answers"] if a["correct"]))):
        button = box.locator(".MCButton", has_text=_plain_text(answer["answer"])[:40]).first
        button.click()
        page.wait_for_timeout(1200)   # the button's colour is animated (0.6-0.8 s)
        measure(f"option answered {label}", button)
        measure(f"feedback, {label}", box.locator(".Feedback"))
    num = next(i for i, q in enumerate(questions) if q["type"] == "numeric")
    q, box = questions[num], quizzes.nth(num)
    field, check = box.locator("input.Input-text"), box.locator("button.course-quiz-check")
    assert field.get_attribute("inputmode") == "decimal"
    assert check.count() == 1 and check.is_visible(), "no Check button beside the number box"
    measure("number box label", box.locator(".InpLabel"))
    measure("Check button", check)
    value = next(a for a in q["answers"] if a.get("correct"))["value"]
    for label, typed in (("wrong", value * 3 + 1), ("right", value)):
        field.click()
        field.type(f"{typed:g}")
        measure("number box, typed", field)
        check.click()   # the button, not Enter: a phone's keyboard may send no Enter keypress
        page.wait_for_timeout(1200)
        classes = box.locator(".Feedback").get_attribute("class").split()
        assert ("correct" in classes) is (label == "right"), (label, classes)
        measure(f"number box answered {label}", field)
        measure(f"number feedback, {label}", box.locator(".Feedback"))
    field.click()
    measure("number box answered, focused again", field)
    page.screenshot(path=str(SHOTS / f"quiz_states_{scheme}.png"))
    assert tab.failures == [], tab.failures
    tab.close()
    for name, r in states.items():
        print(f"  {scheme:5s} {name:36s} {r['ratio']:5.2f}:1  ({r['fg']} on {r['bg']})")
    low = {name: round(r["ratio"], 2) for name, r in states.items() if r["ratio"] < 4.5}
    assert low == {}, f"quiz states below 4.5:1 in {scheme} mode: {low}"
