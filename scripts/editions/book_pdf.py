"""Print the whole course to one PDF from the built website (`make book-pdf`, after `make site`).

    python scripts/editions/book_pdf.py                 # build/course.pdf
    python scripts/editions/book_pdf.py --out my.pdf

The site (build/site/) is served from 127.0.0.1 and the system's Chromium (Playwright; $COURSE_CHROMIUM,
/usr/bin/chromium or `chromium` on PATH), with every outside request refused, opens one page holding
the landing page, the ten chapters in order and the guides (each page's article, its maths typeset
by the site's MathJax, its figures loaded), and prints it with `page.pdf` (A4, page numbers in the
footer). Speaker notes and open questions' model answers stay folded, code model answers stay behind
their toggle, as on the site. Prints the page count and the size.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import sys
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
OUT = ROOT / "build" / "course.pdf"

# Gathers every page's article into the first page, rewriting relative URLs so images still load.
COMBINE_JS = r"""
async (paths) => {
  const main = document.querySelector('#main-content article, article.bd-article, article');
  main.innerHTML = '';
  for (const path of paths) {
    const res = await fetch(path);
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    const base = new URL(path, location.href);
    const art = doc.querySelector('article.bd-article, article');
    art.querySelectorAll('[src]').forEach(e => e.setAttribute('src', new URL(e.getAttribute('src'), base).href));
    art.querySelectorAll('a[href]').forEach(e => e.setAttribute('href', new URL(e.getAttribute('href'), base).href));
    const section = document.createElement('section');
    section.className = 'course-pdf-chapter';
    section.innerHTML = art.innerHTML;
    main.appendChild(section);
  }
  await Promise.all([...main.querySelectorAll('img')].map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  if (window.MathJax && MathJax.typesetPromise) await MathJax.typesetPromise([main]);
  return main.querySelectorAll('section.course-pdf-chapter').length;
}
"""
PRINT_CSS = """
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .header-article, .prev-next-area, .bd-footer,
.bd-footer-content, .bd-footer-article, .headerlink, .copybtn, #pst-back-to-top { display: none !important; }
.bd-main .bd-content .bd-article-container { max-width: 100% !important; }
section.course-pdf-chapter { break-before: page; }
#jb-print-docs-body { display: none !important; }
/* the theme hides an article's first <h1> in print (its own title block shows it once per page); one PDF holds
   every page, so each chapter keeps its own heading */
.bd-main .bd-content .bd-article section.course-pdf-chapter h1:first-of-type { display: block !important; }
section.course-pdf-chapter:first-child { break-before: auto; }
.cell_output img { max-width: 100% !important; break-inside: avoid; }
pre { white-space: pre-wrap !important; word-break: break-word; overflow: visible !important; }
"""


def chapter_paths() -> list[str]:
    """The site's pages in the table of contents' order (site/_toc.yml)."""
    toc = yaml.safe_load((ROOT / "site" / "_toc.yml").read_text())
    files = [toc["root"]] + [ch["file"] for part in toc["parts"] for ch in part["chapters"]]
    return [f"{f}.html" for f in files]


def chromium_path() -> str | None:
    for candidate in (os.environ.get("COURSE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def pdf_pages(data: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", data))


def main(argv: list[str] | None = None) -> int:
    start = time.perf_counter()
    args = argv if argv is not None else sys.argv[1:]
    out = Path(args[args.index("--out") + 1]) if "--out" in args else OUT
    if not (SITE / "index.html").is_file():
        print(f"no built site in {SITE}: run `make site` first")
        return 1
    exe = chromium_path()
    if exe is None:
        print("no Chromium (COURSE_CHROMIUM, /usr/bin/chromium, PATH); Debian: apt-get install chromium")
        return 1
    from playwright.sync_api import sync_playwright

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{httpd.server_port}/"
    paths = chapter_paths()
    refused = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"], headless=True)
            page = browser.new_page(viewport={"width": 1100, "height": 1400})
            page.set_default_timeout(300_000)

            def route(r):
                if r.request.url.startswith(base) or r.request.url.startswith("data:"):
                    r.continue_()
                else:
                    refused.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.goto(base + paths[0], wait_until="load")
            page.evaluate("async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }")
            n = page.evaluate(COMBINE_JS, ["/" + p for p in paths])
            page.add_style_tag(content=PRINT_CSS)
            page.emulate_media(media="print")
            out.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(path=str(out), format="A4", print_background=True, display_header_footer=True,
                     header_template="<span></span>",
                     footer_template='<div style="font-size:8px;width:100%;text-align:center">'
                                     'Attention, from RNNs to Transformers · <span class="pageNumber"></span> / '
                                     '<span class="totalPages"></span></div>',
                     margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"})
            browser.close()
    finally:
        httpd.shutdown()
    data = out.read_bytes()
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: {n} of {len(paths)} pages of the site "
          f"(landing page, 10 chapters, guides), {pdf_pages(data)} PDF pages, {len(data) / 1e6:.1f} MB, "
          f"in {time.perf_counter() - start:.0f} s" + (f"; {len(refused)} outside requests refused" if refused else ""))
    return 0 if n == len(paths) else 1


if __name__ == "__main__":
    sys.exit(main())
