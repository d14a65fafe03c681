"""Print the whole course to one PDF from the built website (`make book-pdf`, after `make site`).

    python -m courseware book-pdf                 # build/course.pdf, and build/site/course.pdf (the site links it)
    python -m courseware book-pdf --out my.pdf

The site (build/site/) is served from 127.0.0.1 and the system's Chromium (Playwright; $COURSE_CHROMIUM,
/usr/bin/chromium or `chromium` on PATH), with every outside request refused, opens one page holding
a contents page, the landing page, the ten chapters (and their appendix pages) in order, the closing page
and the guides (each page's article, its maths typeset by the site's MathJax, its figures loaded), and
prints it with `page.pdf` (A4, page numbers in the footer). The book can be navigated:

* an outline (bookmarks), one top-level entry per page of the site and its sections under it (``finish``);
* a contents page listing every page of the site under its part, each with the PDF page it starts on
  (the book is printed twice: the first print says where each page begins, read back from its named
  destinations, and the second, the book itself, has the numbers filled in; the numbers' space is kept in the
  first, so the layout does not change between the two, and the script fails if a page moved);
* links between the pages of the site are links inside the PDF (each page's ids are prefixed with the
  page's own, ``p3-``, so two chapters' "Exercises" stay apart); a link to anything else the local server
  served (a download, the search page) loses its target, so nothing in the PDF points at the temporary
  server that printed it.

A code line too long for the page wraps under its own indentation (a hanging indent, ``HANG_CODE_JS``). A code
frame is kept whole on a page when it fits (``break-inside: avoid``); a longer one breaks between lines, and its frame
continues on the next page (``box-decoration-break: clone``): no page ends in an empty frame (``empty_code_frames``,
a pixel scan of the printed pages, counts them; the test wants 0).

A printed page cannot open a toggle, so the model answers (the code answers behind "Show the model answer", the
open questions' folded answers) and the printed quizzes' answers are moved to the end of the book (``ANSWERS_JS``),
one entry each under its chapter and exercise, the page it came from in its heading; where each was, a line says
"Model answer: page N" (or "Answers: page N"), a link to it. Those page numbers, like the contents page's, are read
from the first print and filled in for the second. Speaker notes are not on the site.

The book is a tagged PDF (Chromium's ``tagged``: a structure tree of headings, paragraphs, lists, tables and
figures with their alt text, which a screen reader follows; ``/MarkInfo /Marked true``). pikepdf (qpdf) adds the
bookmarks and the metadata to Chromium's print and saves it with object streams (``finish``). Prints the page count,
the bookmarks, the internal links, the model answers moved, the empty code frames and the size.
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
SITE_COPY = SITE / "course.pdf"   # the landing page links it (site/index.md)
BOOK_TITLE = "Attention, from RNNs to Transformers"
BOOK_AUTHOR = "the course's contributors"   # site/_config.yml's author
PLACEHOLDER = "000"               # a page number before the first print has said where the page begins

# Gathers every page's article into the first page, its ids prefixed with the page's ("p3-"), links between
# pages turned into links inside the book, other links to the local server dropped, a contents page first.
COMBINE_JS = r"""
async ({entries, placeholder}) => {
  const main = document.querySelector('#main-content article, article.bd-article, article');
  main.innerHTML = '';
  const index = new Map(entries.map((e, i) => [new URL(e.path, location.href).pathname, i]));
  const sections = [];
  for (const [i, entry] of entries.entries()) {
    const res = await fetch(entry.path);
    const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
    const base = new URL(entry.path, location.href);
    const art = doc.querySelector('article.bd-article, article');
    art.querySelectorAll('[src]').forEach(e => e.setAttribute('src', new URL(e.getAttribute('src'), base).href));
    art.querySelectorAll('[id]').forEach(e => { e.id = `p${i}-${e.id}`; });
    art.querySelectorAll('a[href]').forEach(a => {
      const url = new URL(a.getAttribute('href'), base);
      if (url.origin !== location.origin) return;                       // the repository, Colab, a paper
      const j = index.get(url.pathname);
      if (j === undefined) { a.removeAttribute('href'); a.classList.add('course-pdf-unlinked'); return; }
      const frag = decodeURIComponent(url.hash.slice(1));
      a.setAttribute('href', frag ? `#p${j}-${frag}` : `#p${j}`);
    });
    const section = document.createElement('section');
    section.className = 'course-pdf-chapter';
    section.id = `p${i}`;
    section.innerHTML = art.innerHTML;
    const h1 = section.querySelector('h1');
    entry.title = (h1 ? h1.textContent : entry.path).replace(/[#¶]\s*$/, '').trim();
    sections.push(section);
  }
  // the contents page: every page under its part, with the PDF page it begins on
  const contents = document.createElement('section');
  contents.className = 'course-pdf-chapter course-pdf-contents';
  contents.id = 'pdf-contents';
  contents.innerHTML = '<h1>Contents</h1>';
  let caption = null, list = null;
  for (const [i, entry] of entries.entries()) {
    if (entry.caption !== caption || !list) {
      caption = entry.caption;
      // a part of one page with the part's own title ("After the course") is listed once
      const alone = entries.filter(e => e.caption === caption).length === 1 && entry.title === caption;
      if (caption && !alone) { const p = document.createElement('p'); p.className = 'course-pdf-part'; p.textContent = caption; contents.appendChild(p); }
      list = document.createElement('ul'); contents.appendChild(list);
    }
    const li = document.createElement('li');
    li.className = `course-pdf-level${entry.level}`;
    li.innerHTML = `<a href="#p${i}"></a><span class="course-pdf-dots"></span><span class="course-pdf-page" data-page="p${i}">${placeholder}</span>`;
    li.querySelector('a').textContent = entry.title;
    list.appendChild(li);
  }
  main.appendChild(contents);
  sections.forEach(s => main.appendChild(s));
  // the pages' own ids only: a link to an id the page does not have leads to the page's start
  main.querySelectorAll('a[href^="#p"]').forEach(a => {
    const id = a.getAttribute('href').slice(1);
    if (!document.getElementById(id)) a.setAttribute('href', '#' + id.split('-')[0]);
  });
  await Promise.all([...main.querySelectorAll('img')].map(i => i.complete ? null : new Promise(r => { i.onload = i.onerror = r; })));
  if (window.MathJax && MathJax.typesetPromise) await MathJax.typesetPromise([main]);
  // what the outline (bookmarks) lists: each page's title, and its sections (h2) under it
  const outline = sections.map((s, i) => ({id: `p${i}`, title: entries[i].title,
      sections: [...s.querySelectorAll('section[id] > h2')].map(h => ({id: h.parentElement.id,
          title: h.textContent.replace(/[#¶]\s*$/, '').replace(/\s+/g, ' ').trim()}))}));
  return {pages: sections.length, outline};
}
"""
# The answers at the end of the book: every code model answer (a cell behind "Show the model answer"), every open
# question's folded model answer and every printed quiz's answers, moved to one last section, in the book's order,
# each under its chapter and the heading it sat under; in its place a link "Model answer: page N". The page numbers
# are placeholders (data-page: the id whose page fills them in after the first print). Run after COMBINE_JS.
ANSWERS_JS = r"""
({placeholder, index}) => {
  const main = document.querySelector('#main-content article, article.bd-article, article');
  const chapters = [...main.querySelectorAll('section.course-pdf-chapter:not(.course-pdf-contents)')];
  const clean = (h) => (h ? h.textContent : '').replace(/[#¶]\s*$/, '').replace(/\s+/g, ' ').trim();
  const end = document.createElement('section');
  end.className = 'course-pdf-chapter course-pdf-answers';
  end.id = `p${index}`;
  end.innerHTML = '<h1>Model answers</h1><p>The model answers to the exercises and the answers to the quizzes, ' +
      'in the order of the book. Each heading gives the chapter, the exercise or quiz, and the page it is on; ' +
      'the page numbers in the text lead here.</p>';
  const counts = {code: 0, open: 0, quiz: 0};
  let k = 0;
  for (const chapter of chapters) {
    const title = clean(chapter.querySelector('h1'));
    // the headings, and the exercises' bold first lines ("Exercise 2 — …"), which are not headings
    const headings = [...chapter.querySelectorAll('h2, h3, h4, p > strong:first-child')]
        .filter(h => h.tagName !== 'STRONG' || /^Exercise\b/.test(h.textContent.trim()));
    const under = (el) => {
      let best = null;
      for (const h of headings) { if (h.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) best = h; else break; }
      return best ? clean(best) : title;
    };
    const found = [];
    chapter.querySelectorAll('.cell.tag_hide-cell').forEach(c => found.push(['code', c]));
    chapter.querySelectorAll('details:not(.speaker-notes)').forEach(d => {
      const summary = d.querySelector(':scope > summary');
      if (summary && /Model answer/.test(summary.textContent) && !d.closest('.tag_hide-cell')) found.push(['open', d]);
    });
    chapter.querySelectorAll('.course-quiz-print ol.course-quiz-answers').forEach(o => found.push(['quiz', o]));
    found.sort((a, b) => a[1].compareDocumentPosition(b[1]) & Node.DOCUMENT_POSITION_FOLLOWING ? -1 : 1);
    let group = null;
    for (const [kind, el] of found) {
      k += 1;
      counts[kind] += 1;
      if (!group) {
        group = document.createElement('section');
        group.className = 'course-pdf-answer-chapter';
        group.innerHTML = '<h2></h2>';
        group.querySelector('h2').textContent = title;
        end.appendChild(group);
      }
      const what = kind === 'quiz' ? 'Answers' : 'Model answer';
      const ref = document.createElement('p');
      ref.className = 'course-pdf-answer-ref';
      ref.id = `answer-ref-${k}`;
      ref.innerHTML = `<a href="#answer-${k}">${what}: page <span class="course-pdf-page" data-page="answer-${k}">${placeholder}</span></a>`;
      const entry = document.createElement('div');
      entry.className = 'course-pdf-answer';
      const head = document.createElement('h3');
      head.id = `answer-${k}`;
      const label = kind === 'quiz' ? `${under(el)}: the quiz's answers` : under(el);
      head.innerHTML = `<a href="#answer-ref-${k}"></a> <span class="course-pdf-answer-from">· page <span class="course-pdf-page" data-page="answer-ref-${k}">${placeholder}</span></span>`;
      head.querySelector('a').textContent = label;
      entry.appendChild(head);
      if (kind === 'code') {
        const input = el.querySelector('.cell_input');
        entry.appendChild(input);
        el.replaceWith(ref);
      } else if (kind === 'open') {
        [...el.childNodes].filter(n => !(n.nodeType === 1 && n.tagName === 'SUMMARY')).forEach(n => entry.appendChild(n));
        el.replaceWith(ref);
      } else {
        const label = el.previousElementSibling;
        if (label && /Answers/.test(label.textContent)) label.remove();
        el.replaceWith(ref);
        entry.appendChild(el);
      }
      group.appendChild(entry);
    }
    group = null;
  }
  if (k) {
    main.appendChild(end);
    const contents = main.querySelector('.course-pdf-contents');
    const list = document.createElement('ul');
    list.innerHTML = `<li class="course-pdf-level1"><a href="#p${index}">Model answers</a><span class="course-pdf-dots"></span><span class="course-pdf-page" data-page="p${index}">${placeholder}</span></li>`;
    contents.appendChild(list);
  }
  return {moved: k, counts, outline: k ? {id: `p${index}`, title: 'Model answers',
      sections: [...end.querySelectorAll('section.course-pdf-answer-chapter')].map((s, i) => {
        s.id = `p${index}-chapter-${i}`; return {id: s.id, title: clean(s.querySelector('h2'))}; })} : null};
}
"""
# The page numbers (the contents page's and the answers'): left out of the first print (the space they take is
# kept), filled in for the second (the layout is the same).
HIDE_NUMBERS_JS = r"""
() => { document.body.classList.add('course-pdf-first-print'); }
"""
FILL_PAGES_JS = r"""
(numbers) => {
  document.querySelectorAll('.course-pdf-page').forEach(s => { s.textContent = numbers[s.dataset.page]; });
  document.body.classList.remove('course-pdf-first-print');
}
"""
# A code line too long for the page wraps under its own indentation, four columns in, not at the left margin:
# each line of a code block becomes a block with a hanging indent (the highlighting spans kept, split at
# their newlines), since CSS alone cannot indent the continuation of one line of a <pre>.
HANG_CODE_JS = r"""() => {
  let blocks = 0;
  for (const pre of document.querySelectorAll('div.highlight pre')) {
    const lines = [[]];
    for (const node of Array.from(pre.childNodes)) {
      const text = node.textContent;
      const pieces = text.split('\n');
      pieces.forEach((piece, k) => {
        if (k > 0) lines.push([]);
        if (piece === '') return;
        let part;
        if (node.nodeType === Node.TEXT_NODE) part = document.createTextNode(piece);
        else { part = node.cloneNode(false); part.textContent = piece; }
        lines[lines.length - 1].push(part);
      });
    }
    if (lines.length > 1 && lines[lines.length - 1].length === 0) lines.pop();
    pre.textContent = '';
    for (const parts of lines) {
      const line = document.createElement('span');
      line.className = 'course-pdf-line';
      const text = parts.map(p => p.textContent).join('');
      const indent = text.length - text.trimStart().length + 4;
      line.style.paddingLeft = indent + 'ch';
      line.style.textIndent = (-indent) + 'ch';
      if (parts.length) parts.forEach(p => line.appendChild(p)); else line.textContent = '\u200b';
      pre.appendChild(line);
    }
    blocks++;
  }
  return blocks;
}"""
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
pre .course-pdf-line { display: block; }
div.highlight pre { font-size: 12px !important; }   /* 83 characters, the site's code width, fit an A4 line */
.course-quiz-print { display: block !important; }
/* a code frame whole on one page when it fits; a longer one breaks between its lines (Bootstrap's print styles
   keep a <pre> whole, which left its frame empty at the foot of the page) and its frame continues on the next */
div.cell_input, div.cell_output .output, .course-pdf-answer { box-decoration-break: clone; -webkit-box-decoration-break: clone; }
div.cell_input, div.cell_output .output { break-inside: avoid; }
pre, div.highlight, div.highlight-ipython3, div.highlight-python { break-inside: auto !important; page-break-inside: auto !important; }
/* the bootstrap cell's "Show code cell source" bar opens nothing on paper */
div.cell.tag_hide-input > details.above-input { display: none !important; }
.course-pdf-answer-ref { font-style: italic; margin: 0.3em 0 1em; }
.course-pdf-answer h3 { break-after: avoid; font-size: 1.05em; margin-top: 1.2em; }
.course-pdf-answer-from { font-weight: normal; font-size: 0.85em; }
.course-pdf-answer-ref .course-pdf-page, .course-pdf-answer-from .course-pdf-page { display: inline-block; min-width: 3ch; }
.course-pdf-answers .cell_input { display: block !important; }
a.course-pdf-unlinked { color: inherit; text-decoration: none; }
.course-pdf-contents { font-size: 0.9em; }
.course-pdf-contents h1 { margin: 0 0 0.6em; }
.course-pdf-contents ul { list-style: none; padding-left: 0; margin: 0 0 0.3em; }
.course-pdf-contents li { display: flex; align-items: baseline; margin: 0.05em 0; white-space: nowrap; }
.course-pdf-contents li.course-pdf-level2 { padding-left: 1.5em; font-size: 0.95em; }
.course-pdf-contents li a { overflow: hidden; text-overflow: ellipsis; }
.course-pdf-contents .course-pdf-dots { flex: 1; border-bottom: 1px dotted currentColor; margin: 0 0.4em; min-width: 1em; }
.course-pdf-contents .course-pdf-page { min-width: 2.5em; text-align: right; font-variant-numeric: tabular-nums; }
.course-pdf-contents .course-pdf-part { font-weight: 700; margin: 0.6em 0 0.1em; }
body.course-pdf-first-print .course-pdf-page { visibility: hidden; }
"""


def _toc() -> dict:
    """The table of contents the site was built from (build/site-src/_toc.yml, which lists the appendix
    pages), else site/_toc.yml."""
    built = ROOT / "build" / "site-src" / "_toc.yml"
    return yaml.safe_load((built if built.is_file() else ROOT / "site" / "_toc.yml").read_text())


def toc_entries() -> list[dict]:
    """The site's pages in the table of contents' order: {path, caption (the part's), level (1 a chapter,
    2 a page under it, such as an appendix)}."""
    toc = _toc()
    entries = [{"path": f"{toc['root']}.html", "caption": None, "level": 1}]
    for part in toc["parts"]:
        for ch in part["chapters"]:
            entries.append({"path": f"{ch['file']}.html", "caption": part.get("caption"), "level": 1})
            entries += [{"path": f"{sec['file']}.html", "caption": part.get("caption"), "level": 2}
                        for sec in ch.get("sections", [])]
    return entries


def chapter_paths() -> list[str]:
    """The site's pages in the table of contents' order (the built toc: appendix pages after their chapter)."""
    return [e["path"] for e in toc_entries()]


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


def start_pages(path: Path) -> dict[str, int]:
    """{"p3": 41, ...}: the PDF page (1-based) each page of the site begins on, from the PDF's named
    destinations (Chromium writes one for each id a link inside the document points at)."""
    from pypdf import PdfReader

    reader = PdfReader(path)
    found = {}
    for name, dest in reader.named_destinations.items():
        name = str(name).lstrip("/")
        if re.fullmatch(r"p\d+|answer-(?:ref-)?\d+", name):
            found[name] = reader.get_destination_page_number(dest) + 1
    return found


def finish(out: Path, outline: list[dict]) -> None:
    """The book as Chromium printed it, with its outline (each page of the site, its sections under it) and its
    metadata, saved by qpdf (pikepdf) with its objects in compressed object streams and every stream compressed:
    Skia writes each of a tagged PDF's ~150,000 structure elements as an object of its own, uncompressed (2.3 times
    the size of the untagged print). A stream already compressed (the images, the fonts) is not decoded again; an
    uncompressed one is compressed, losslessly. The structure tree is kept as it is."""
    import pikepdf

    with pikepdf.open(out, allow_overwriting_input=True) as pdf:
        index = {page.objgen: i for i, page in enumerate(pdf.pages)}
        dests = {}
        if "/Dests" in pdf.Root:   # Chromium: one named destination for each id a link points at
            dests.update((str(name).lstrip("/"), dest) for name, dest in pdf.Root.Dests.items())
        if "/Names" in pdf.Root and "/Dests" in pdf.Root.Names:
            dests.update((str(name), dest) for name, dest in pikepdf.NameTree(pdf.Root.Names.Dests).items())

        def page_of(name):
            dest = dests.get(name)
            if isinstance(dest, pikepdf.Dictionary):
                dest = dest.D
            return index.get(dest[0].objgen) if dest is not None else None

        with pdf.open_outline() as book:
            book.root.clear()
            book.root.append(pikepdf.OutlineItem("Contents", 0))
            for entry in outline:
                start = page_of(entry["id"])
                if start is None:
                    continue
                item = pikepdf.OutlineItem(entry["title"], start)
                item.children.extend(pikepdf.OutlineItem(section["title"], at) for section in entry["sections"]
                                     if (at := page_of(section["id"])) is not None)
                book.root.append(item)
        pdf.Root.PageMode = pikepdf.Name.UseOutlines
        pdf.docinfo["/Title"] = BOOK_TITLE
        pdf.docinfo["/Author"] = BOOK_AUTHOR
        pdf.docinfo["/Creator"] = "courseware/editions/book_pdf.py (Chromium)"
        pdf.docinfo["/Subject"] = "The course's website as one book: chapters, appendices, guides, model answers"
        pdf.save(out, object_stream_mode=pikepdf.ObjectStreamMode.generate, compress_streams=True,
                 recompress_flate=False)


def navigation(path: Path) -> dict:
    """What a reader can navigate by: bookmarks (all levels, and top-level), internal links, links to
    127.0.0.1 or localhost."""
    from pypdf import PdfReader

    reader = PdfReader(path)

    def count(items):
        return sum(count(i) if isinstance(i, list) else 1 for i in items)

    internal = local = 0
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            action = annot.get("/A")
            action = action.get_object() if action is not None else {}
            uri = str(action.get("/URI", ""))
            if "/Dest" in annot or action.get("/S") == "/GoTo":
                internal += 1
            elif re.match(r"https?://(127\.0\.0\.1|localhost)", uri):
                local += 1
    outline = reader.outline
    return {"bookmarks": count(outline), "top-level bookmarks": sum(not isinstance(i, list) for i in outline),
            "internal links": internal, "local links": local, "pages": len(reader.pages)}


def code_frames(image) -> list[tuple[int, int, int, int]]:
    """The code frames on one rendered page (a PIL RGB image): boxes (x0, y0, x1, y1), each a vertical run of a
    code cell's green left bar (MyST-NB's source margin colour) at least 6 px high, as wide as the grey background
    that runs right of it (wider than a third of the page: a green mark in a figure is not a frame)."""
    w, h = image.size
    px = image.load()

    def green(p):
        return p[1] > 100 and p[0] < 60 and p[2] < 60

    def grey(p):
        return min(p) >= 232 and max(p) <= 251

    bars = []
    for x in range(w // 3):
        y = 0
        while y < h:
            if green(px[x, y]):
                y0 = y
                while y < h and green(px[x, y]):
                    y += 1
                if y - y0 >= 6 and not any(bx <= x <= bx + 4 and abs(by - y0) < 3 for bx, by, _ in bars):
                    bars.append((x, y0, y))
            y += 1
    boxes = []
    for x, y0, y1 in bars:
        right = x
        for row in range(y0, y1, 2):
            x1 = x + 1
            while x1 < w - 1 and (grey(px[x1, row]) or green(px[x1, row])):
                x1 += 1
            right = max(right, x1)
        if right - x > w // 3:
            boxes.append((x, y0, right, y1))
    return boxes


def has_ink(image, box) -> bool:
    """Whether a frame holds anything drawn (a pixel darker than its grey background and border), its bar aside."""
    x0, y0, x1, y1 = box
    px = image.load()
    return any(min(px[x, y]) < 180 for y in range(y0 + 1, y1 - 1) for x in range(x0 + 4, x1 - 2))


_SCANS: dict[tuple, list] = {}   # the scans made, by file (path, size, time written) and scale


def empty_code_frames(path: Path, scale: float = 1.0) -> list[tuple[int, tuple]] | None:
    """The pixel scan: every page rendered (pypdfium2, 72 dpi), every code frame found (``code_frames``), and the
    frames with no ink in them: [(page number, box)]. None without pypdfium2. A file already scanned, unchanged
    since, is not scanned again (``main`` scans the book it printed; tests/site/test_book_pdf.py asks again)."""
    try:
        import pypdfium2 as pdfium
    except ImportError:
        return None
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns, scale)
    if key in _SCANS:
        return list(_SCANS[key])
    pdf = pdfium.PdfDocument(str(path))
    empty = []
    for i in range(len(pdf)):
        image = pdf[i].render(scale=scale).to_pil().convert("RGB")
        empty += [(i + 1, box) for box in code_frames(image) if not has_ink(image, box)]
    pdf.close()
    _SCANS[key] = list(empty)
    return empty


FOOTER = ('<div style="font-size:8px;width:100%;text-align:center">Attention, from RNNs to Transformers · '
          '<span class="pageNumber"></span> / <span class="totalPages"></span></div>')


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
    entries = toc_entries()
    paths = [e["path"] for e in entries]
    refused, numbers = [], {}
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
            if not page.evaluate("!!window.MathJax"):   # a page with no maths of its own loads no MathJax (build_site.py)
                page.add_script_tag(url=base + "_static/mathjax-3.2.2/es5/tex-chtml-full.js")
                page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
            page.evaluate("async () => { if (window.MathJax && MathJax.startup) await MathJax.startup.promise; }")
            combined = page.evaluate(COMBINE_JS, {"entries": [dict(e, path="/" + e["path"]) for e in entries],
                                                  "placeholder": PLACEHOLDER})
            n = combined["pages"]
            answers = page.evaluate(ANSWERS_JS, {"placeholder": PLACEHOLDER, "index": len(entries)})
            if answers["outline"]:
                combined["outline"].append(answers["outline"])
                n += 1
            page.evaluate(HIDE_NUMBERS_JS)
            page.evaluate(HANG_CODE_JS)
            page.add_style_tag(content=PRINT_CSS)
            page.emulate_media(media="print")
            out.parent.mkdir(parents=True, exist_ok=True)

            def print_pdf(path, tagged):
                page.pdf(path=str(path), format="A4", print_background=True, display_header_footer=True,
                         header_template="<span></span>", footer_template=FOOTER, tagged=tagged,
                         margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"})

            print_pdf(out, tagged=False)   # the first print says where each page begins (the tags change no layout) ...
            numbers = start_pages(out)
            wanted = [f"p{i}" for i in range(n)] + [f"answer-{k}" for k in range(1, answers["moved"] + 1)] + \
                [f"answer-ref-{k}" for k in range(1, answers["moved"] + 1)]
            page.evaluate(FILL_PAGES_JS, {key: str(numbers.get(key, "?")) for key in wanted})
            print_pdf(out, tagged=True)   # ... and the second is the book, those numbers filled in
            browser.close()
        finish(out, combined["outline"])
    finally:
        httpd.shutdown()
    data = out.read_bytes()
    nav = navigation(out)
    moved = {k: v for k, v in start_pages(out).items() if numbers.get(k) != v}
    if out.resolve() != SITE_COPY.resolve():
        shutil.copyfile(out, SITE_COPY)
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}: a contents page, {n - bool(answers['moved'])} of "
          f"{len(paths)} pages of the site and the model answers, {nav['pages']} PDF pages, {nav['bookmarks']} bookmarks "
          f"({nav['top-level bookmarks']} top-level), {nav['internal links']} internal links, {nav['local links']} "
          f"links to a local server, {answers['moved']} answers moved to the end ({answers['counts']}), "
          f"{len(empty_code_frames(out) or [])} empty code frames, {len(data) / 1e6:.1f} MB, in "
          f"{time.perf_counter() - start:.0f} s; copied to "
          f"{SITE_COPY.relative_to(ROOT)}" + (f"; {len(refused)} outside requests refused" if refused else ""))
    if moved:
        print(f"the contents page's numbers moved between the two prints: {moved}")
    pages_found = sum(bool(re.fullmatch(r"p\d+", k)) for k in numbers)
    return 0 if n == len(paths) + bool(answers["moved"]) and pages_found == n and not moved else 1


if __name__ == "__main__":
    sys.exit(main())
