"""Build the course website with Jupyter Book 1 from the committed, executed notebooks and the guides.

    python -m courseware site                 # build/site/ (index.html, one page per notebook and guide)
    python -m courseware site --prepare-only  # only assemble the sources in build/site-src/

(`make site` runs this in `.venv-site`, made from the `site` dependency group of pyproject.toml.)
Nothing is executed (`execute_notebooks: off`) and nothing is fetched: MathJax comes from
`vendor/mathjax-3.2.2` and is copied into the site's `_static/`.

The sources are assembled in ``build/site-src/`` laid out as the repository is (``notebooks/``,
the guides at the top, ``site/`` for the landing and licence pages, ``_config.yml`` and ``_toc.yml``
from ``site/``), so each page's "open in Colab", "download" and "view source" buttons point at the
same path in the repository. The committed notebooks are never changed; their copies are made
ready for a reader:

* speaker notes (``notes`` cells) are left out: the site (and the PDF printed from it) is the self-paced
  reader's edition; the notes stay in the notebooks and the decks, and the landing page links the lecturer's
  material (LECTURES.md);
* a code model answer (nbgrader ``solution``) is folded behind a "Show the model answer" toggle
  (MyST-NB's ``hide-cell`` tag, added to the copy), its ``### BEGIN/END SOLUTION`` lines dropped;
  an open question's answer stays in its closed ``<details>`` block, its summary saying "Model answer";
* hidden tests (``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``) and mark schemes
  (``### BEGIN MARK SCHEME`` ... ``### END MARK SCHEME``) are removed, and so are ``# NBVAL_`` lines; so are
  the lines a removed hidden test printed (``ex1_check: hidden tests passed``), which no code shown prints;
* an explorer's output keeps its saved figure (``image/png``) and gets one line saying to open the
  notebook in Jupyter to move its controls (``courseware/editions/build_decks.py``'s widget handling);
* a "Check yourself" quiz cell (``courseware.quiz``) keeps its output, which draws the quiz in the browser with no
  kernel, and gets a plain copy for the printed book (questions, options, then the answers and why), hidden
  on screen (``site/_static/course.css``) and shown by ``make book-pdf``, whose page runs no script;
* a quiz cell shows the quiz, not the ``check_yourself(...)`` call (MyST-NB's ``remove-input``);
* text that points at what this edition lacks says what it has (``SITE_WORDING``: the lecture plan, not "the
  folded speaker notes"; an explorer's note: download the notebook, not ``make lab``);
* each figure gets alt text: the figure's cell's leading comment or the sentence that introduces it;
* links to repository files that are not pages of the site (``scripts/``, ``runs/``, ``utils/``)
  point at the repository;
* a notebook's appendix (``## Appendix: the measurements behind the claims`` and what follows) becomes
  a page of its own, the chapter's sub-page ``NN_name_appendix``, its headings one level up; the main
  line's links to it (``[Appendix A.2](#appendix-a2)``) lead there, and its links back to the
  chapter (``#a-heading``) lead to the chapter's page; it opens with a link back to its chapter.

Each built page is then touched up: the theme's first-visit mode is "auto" (no console error), the download link
saves the notebook, and a page with no maths loads no MathJax (1.3 MB of its 4 MB). The theme's Font Awesome bundle
(1.49 MB, loaded by every page) keeps only the icons the pages and scripts use (``courseware/editions/icon_subset.py``).

**The repository's address** comes from one setting, ``REPO_URL`` (``make site REPO_URL=https://github.com/o/r``,
the environment variable, or ``--repo-url``); ``site/_config.yml``'s ``repository.url`` is used only when it is not
the placeholder the sources carry (``PLACEHOLDER_REPO``). With it, every place that names the repository names it:
the Colab launch buttons, the "Repository" and "Show source" buttons, the links to repository files, and the
placeholder in the notebooks' text and bootstrap cell (the downloads' too) and in the guides. Without it, the build
ships no dead link: it leaves out the Colab launch, repository and source buttons, keeps the text of each link to a
repository file without its link, and says in its log what it left out; a download's text drops its mentions of the
placeholder (``unname_repository``), and its bootstrap cell, where the course is not installed and no
``$COURSE_REPO_URL`` names a repository, stops and says how to get the course's files
(``courseware/authoring/bootstrap_cell.py``'s ``without_repository``) instead of cloning the placeholder.

Those copies are only what the HTML pages are built from. A chapter's "Download .ipynb" gives the student
edition of that chapter (``courseware/editions/nbgrader_course.py``'s ``release``, the notebook ``make student``
writes: no hidden tests, no model answers, no mark schemes, no speaker notes, no outputs, no instructor
metadata), since the site is public and a class may grade the same exercises: ``build`` puts it in
``_sources/notebooks/`` and points an appendix page's download, Colab and source links at its chapter's notebook.
"""

from __future__ import annotations

import time

_STARTED = time.perf_counter()

import argparse  # noqa: E402
import copy  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import nbformat  # noqa: E402
import yaml  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT)]
from courseware.editions.build_decks import NBVAL_LINE, WIDGET_VIEW, _drop_lines, _static_widget_output, all_notebooks  # noqa: E402
from courseware.editions.make_student import SOLUTION_DELIMITERS  # noqa: E402
from courseware.authoring.bootstrap_cell import is_bootstrap, without_repository  # noqa: E402
from courseware.authoring.tag_exercises import is_solution  # noqa: E402
from courseware.editions import icon_subset  # noqa: E402
from courseware.editions.vendor_assets import vendored_dir  # noqa: E402
from courseware.sections import appendix_start  # noqa: E402

SITE = ROOT / "site"
SRC = ROOT / "build" / "site-src"
OUT = ROOT / "build" / "site"
GUIDES = ["README.md", "SETUP.md", "RESULTS.md", "TESTING.md", "LECTURES.md", "INSTRUCTORS.md", "NOTATION.md",
          "CONTRIBUTING.md", "LAYOUT.md"]
BEGIN_SOLUTION, END_SOLUTION, BEGIN_MARK, END_MARK, BEGIN_HIDDEN, END_HIDDEN = SOLUTION_DELIMITERS
WIDGET_LINE = ("<p class=\"course-widget-note\"><em>Interactive explorer: this is its saved figure; download the "
               "notebook (the download button at the top of the page) and run it in Jupyter to move its controls.</em></p>")
# What the committed text says of things this edition does not have, and what the site says instead.
SITE_WORDING = [
    ("A lecturer's minutes for presenting it are in the folded speaker notes.",
     "A lecturer's minutes for presenting it are in the [lecture plan](../LECTURES.md)."),
]
APPENDIX_WORDING = [("Nothing above depends on these cells", "Nothing in the chapter depends on these cells")]
README_TITLE = "The repository's front page (README)"   # not a second page titled as the landing page (search)
ANSWER_PROMPTS = {"code_prompt_show": "Show the model answer", "code_prompt_hide": "Hide the model answer"}
# a markdown link or image: [text](target) / ![alt](target), target without spaces
MD_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
HTML_LINK = re.compile(r"""((?:href|src)=")([^"]+)(")""")


def config() -> dict:
    return yaml.safe_load((SITE / "_config.yml").read_text())


PLACEHOLDER_REPO = "https://github.com/attention-course/attention-course"   # pyproject.toml's, until published


def repository(cfg: dict, given: str | None = None) -> str | None:
    """The repository's address: ``given`` (``--repo-url``), else ``$REPO_URL``, else ``site/_config.yml``'s when it
    is not the placeholder; None when none is named."""
    url = (given or os.environ.get("REPO_URL") or cfg.get("repository", {}).get("url") or "").strip().rstrip("/")
    return url if url and url != PLACEHOLDER_REPO else None


def repo_url(cfg: dict, repo: str | None) -> str | None:
    """The base of links to the repository's files (``<repo>/blob/<branch>``), or None."""
    return f"{repo}/blob/{cfg.get('repository', {}).get('branch', 'main')}" if repo else None


def book_config(cfg: dict, repo: str | None) -> tuple[dict, list[str]]:
    """The book's _config.yml for this build, and what it left out (without a repository, the buttons that would
    lead to it; Colab's launch button only opens a GitHub repository)."""
    cfg, left_out = copy.deepcopy(cfg), []
    cfg.setdefault("repository", {})["url"] = repo or ""
    theme = cfg.setdefault("sphinx", {}).setdefault("config", {}).setdefault("html_theme_options", {})
    if not repo:
        cfg.setdefault("html", {})["use_repository_button"] = False
        theme["use_source_button"] = False
        left_out += ["the Repository button", "the Show source buttons"]
    if not repo or not repo.startswith("https://github.com/"):
        if cfg.get("launch_buttons", {}).get("colab_url"):
            cfg["launch_buttons"]["colab_url"] = ""
            left_out.append("the Colab launch buttons" + ("" if not repo else " (Colab opens GitHub repositories only)"))
    return cfg, left_out


def name_repository(text: str, repo: str | None) -> str:
    """The placeholder address replaced by the repository's, when one is named."""
    return text.replace(PLACEHOLDER_REPO, repo) if repo else text


# ---------------------------------------------------------------- notebooks


def drop_region(source: str, begin: str, end: str) -> str:
    """Remove every region from a line containing ``begin`` to the line containing ``end`` (both included)."""
    out, inside = [], False
    for line in source.split("\n"):
        if begin in line:
            inside = True
        elif end in line and inside:
            inside = False
        elif not inside:
            out.append(line)
    if inside:
        raise ValueError(f"{begin!r} without {end!r}")
    return "\n".join(out).rstrip("\n") + ("\n" if source.endswith("\n") else "")


def _plain_math(tex: str) -> str:
    """A formula as plain words for alt text: \\sqrt{d_k} -> √d_k, \\frac{a}{b} -> a/b, \\mathrm{x} -> x."""
    tex = tex.replace("^\\top", "ᵀ").replace("^T", "ᵀ")
    tex = re.sub(r"\\sqrt\{([^{}]*)\}", r"√\1", tex)
    tex = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"(\1)/(\2)", tex)
    tex = re.sub(r"\\(?:mathrm|text|mathbf|operatorname|left|right|,|!|;)", "", tex)
    tex = re.sub(r"\\([A-Za-z]+)", r"\1", tex)
    return tex.replace("{", "").replace("}", "")


def _plain(text: str) -> str:
    text = re.sub(r"\$\$?([^$]+)\$\$?", lambda m: _plain_math(m.group(1)), text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[*`$\\]", "", text)
    return " ".join(text.split())


def _last_sentence(markdown: str) -> str:
    markdown = re.sub(r"(?ms)^```.*?^```", "", markdown)  # code blocks are not the sentence
    lines = [ln for ln in markdown.split("\n") if ln.strip() and not ln.lstrip().startswith(("<", "*≈"))]
    text = _plain(" ".join(lines))
    sentences = [s for s in re.split(r"(?<=[.:;!?])\s+", text) if len(s) >= 25 and not s.startswith("(")]
    return sentences[-1] if sentences else text


def alt_text(cell, previous_markdown: str | None, heading: str) -> str:
    """What a figure shows, for its alt text: the code cell's leading comment, else the sentence before it."""
    first = cell.source.lstrip().split("\n", 1)[0].strip()
    if first.startswith("#") and not first.startswith(("# NBVAL", "#%", "# CHECK")) and len(first) > 12:
        what = first.lstrip("# ").strip()
    elif previous_markdown:
        what = _last_sentence(previous_markdown)
    else:
        what = heading
    what = what.rstrip(":").strip()
    if len(what) > 220:
        what = what[:217].rsplit(" ", 1)[0] + "…"
    return f"Figure ({heading}): {what}" if heading and heading not in what else f"Figure: {what}"


def is_speaker_notes(cell) -> bool:
    return cell.metadata.get("slideshow", {}).get("slide_type") == "notes"


HIDDEN_CHECK = re.compile(r"""hidden_check\(\s*["']([^"']+)["']""")


def drop_printed_by(outputs: list, names: list[str]) -> list:
    """The outputs without the stream lines ``<name>: ...`` that ``hidden_check(name, ...)`` printed."""
    if not names:
        return outputs
    printed = re.compile(r"^(?:%s): " % "|".join(map(re.escape, names)))
    kept = []
    for output in outputs:
        if output.get("output_type") == "stream":
            lines = [ln for ln in output.get("text", "").splitlines(keepends=True) if not printed.match(ln)]
            if not lines:
                continue
            output["text"] = "".join(lines)
        kept.append(output)
    return kept


QUIZ_CALL = re.compile(r'check_yourself\("(\d\d)", (\d+)\)')


def quiz_for_print(notebook: str, part: str) -> str:
    """A quiz part as plain HTML for the printed book (``make book-pdf``), where the page's scripts do not run:
    each question with its options, then the right answer and why. Hidden on screen (site/_static/course.css)."""
    import html

    from courseware.quiz import questions

    items, answers = [], []
    for k, q in enumerate(questions(notebook, int(part)), start=1):
        if q["type"] == "multiple_choice":
            options = "".join(f"<li>{a['answer']}</li>" for a in q["answers"])
            right = next(a for a in q["answers"] if a["correct"])
            items.append(f"<li>{q['question']}<ol type=\"a\">{options}</ol></li>")
            letter = "abcdefgh"[q["answers"].index(right)]
            answers.append(f"<li>({letter}) {right['feedback']}</li>")
        else:
            right = next(a for a in q["answers"] if a.get("correct"))
            value = html.escape(f"{right['value']:g}")
            items.append(f"<li>{q['question']} <em>(a number)</em></li>")
            answers.append(f"<li>{value}: {right['feedback']}</li>")
    return (f'<div class="course-quiz-print"><p><strong>Check yourself</strong></p><ol>{"".join(items)}</ol>'
            f'<p><em>Answers</em></p><ol class="course-quiz-answers">{"".join(answers)}</ol></div>')


def is_answer(cell) -> bool:
    return bool(cell.metadata.get("nbgrader", {}).get("solution")) or is_solution(cell)


def prepare_notebook(nb):
    """The reader's copy of a committed notebook (see the module docstring)."""
    nb = copy.deepcopy(nb)
    nb.cells = [c for c in nb.cells if not is_speaker_notes(c)]
    heading, previous_md = nb.cells[0].source.split("\n", 1)[0].lstrip("# ").strip(), None
    for cell in nb.cells:
        tags = list(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown":
            for old, new in SITE_WORDING:
                cell.source = cell.source.replace(old, new)
            if is_answer(cell):  # an open question: the answer in its closed <details>, the mark scheme out
                cell.source = drop_region(cell.source, BEGIN_MARK, END_MARK)
                cell.source = _drop_lines(cell.source, lambda ln: BEGIN_SOLUTION in ln or END_SOLUTION in ln)
                cell.source = cell.source.replace("<b>Model answer and mark scheme</b>", "<b>Model answer</b>")
            m = re.search(r"(?m)^#{1,3} (.+)$", cell.source)
            if m:
                heading = _plain(m.group(1))
            previous_md = cell.source
            continue
        if cell.cell_type != "code":
            continue
        hidden = "\n".join(re.findall(rf"(?s){re.escape(BEGIN_HIDDEN)}.*?{re.escape(END_HIDDEN)}", cell.source))
        cell.source = drop_region(cell.source, BEGIN_HIDDEN, END_HIDDEN)
        cell.outputs = drop_printed_by(cell.get("outputs", []), HIDDEN_CHECK.findall(hidden))
        cell.source = _drop_lines(cell.source, NBVAL_LINE.match)
        if is_answer(cell):
            cell.source = _drop_lines(cell.source, lambda ln: BEGIN_SOLUTION in ln or END_SOLUTION in ln)
            tags.append("hide-cell")
            cell.metadata.setdefault("mystnb", {}).update(ANSWER_PROMPTS)
        outputs = []
        for output in cell.get("outputs", []):
            was_widget = WIDGET_VIEW in output.get("data", {})
            _static_widget_output(output)
            outputs.append(output)
            if was_widget and "image/png" in output.get("data", {}):
                outputs.append(nbformat.v4.new_output("display_data", data={"text/html": WIDGET_LINE}))
        quiz = QUIZ_CALL.search(cell.source)
        if quiz:   # the reader sees the quiz, not the call that shows it (MyST-NB's remove-input)
            tags.append("remove-input")
            outputs.append(nbformat.v4.new_output("display_data", data={"text/html": quiz_for_print(*quiz.groups())}))
        cell.outputs = outputs
        if any("image/png" in o.get("data", {}) for o in outputs):
            cell.metadata.setdefault("mystnb", {})["image"] = {"alt": alt_text(cell, previous_md, heading)}
        if tags:
            cell.metadata["tags"] = tags
        cell.metadata.get("jupyter", {}).pop("source_hidden", None)
    nb.metadata.pop("widgets", None)
    return nb


def html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)


ANCHOR_LINK = re.compile(r"\[([^\]]+)\]\(#([^)\s]+)\)")


def split_appendix(nb, name: str):
    """(chapter, appendix page or None) of a reader's copy: the appendix becomes the chapter's sub-page
    ``<name>_appendix``. Same-page links that cross the cut become links to the other page (raw HTML,
    which MyST passes through, so the ``<a id>`` anchors of the appendix are the targets)."""
    start = appendix_start(nb.cells)
    if start is None:
        return nb, None
    chapter, appendix = copy.deepcopy(nb), copy.deepcopy(nb)
    chapter.cells, appendix.cells = chapter.cells[:start], appendix.cells[start:]
    title = next((c.source.split("\n", 1)[0].lstrip("# ").strip() for c in nb.cells if c.cell_type == "markdown"), name)

    def across(page: str, keep_here, here: str = ""):
        """Markdown links to ``#anchor`` -> raw HTML: to ``page`` when the anchor is on the other side of the
        cut; on this page (``here``) when it is one of the appendix's own ``<a id>`` anchors, which MyST does
        not know as targets; left alone otherwise (a heading's anchor, which MyST resolves)."""
        def fix(m):
            text, anchor = m.group(1), m.group(2)
            if keep_here(anchor):
                return f'<a href="{here}#{anchor}">{text}</a>' if here is not None and anchor.startswith("appendix") \
                    else m.group(0)
            return f'<a href="{page}.html#{anchor}">{text}</a>'
        return fix

    for cell in chapter.cells:
        if cell.cell_type == "markdown":
            cell.source = ANCHOR_LINK.sub(across(f"{name}_appendix", lambda a: not a.startswith("appendix"), None),
                                          cell.source)
    for i, cell in enumerate(appendix.cells):
        if cell.cell_type != "markdown":
            continue
        source = ANCHOR_LINK.sub(across(name, lambda a: a.startswith("appendix")), cell.source)
        source = re.sub(r"(?m)^#(#{1,5}) ", r"\1 ", source)   # ## -> #, ### -> ##: the page's own title first
        if i == 0:   # "Appendix to 02: ...": unique in search, short enough for the PDF's contents line
            source = re.sub(r"(?m)^# Appendix: ", f"# Appendix to {title.split(' · ')[0]}: ", source, count=1)
            back = f'<p class="course-appendix-back">← Back to the chapter: <a href="{name}.html">{html_escape(title)}</a></p>'
            source = re.sub(r"(?m)^(# .*)$", lambda m: m.group(1) + "\n\n" + back, source, count=1)
        for old, new in APPENDIX_WORDING:
            source = source.replace(old, new)
        cell.source = source
    return chapter, appendix


def with_appendix_pages(toc: dict, names: list[str]) -> dict:
    """The table of contents with each ``notebooks/<name>_appendix`` page under its chapter."""
    toc = copy.deepcopy(toc)
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            name = chapter.get("file", "").removeprefix("notebooks/")
            if name in names:
                chapter.setdefault("sections", []).append({"file": f"notebooks/{name}_appendix"})
    return toc


# ---------------------------------------------------------------- markdown and links


def site_files() -> set[str]:
    """Repository paths that are pages of the site (links to them stay relative)."""
    return {f"notebooks/{p.name}" for p in all_notebooks()} | set(GUIDES) | {f"site/{p.name}" for p in SITE.glob("*.md")}


HTML_ANCHOR = re.compile(r"""<a\s+href="([^"]+)"[^>]*>(.*?)</a>""", re.S)


def rewrite_links(text: str, rel_dir: str, pages: set[str], base: str | None, copies: set[str],
                  unlinked: list | None = None) -> str:
    """Relative links to repository files that are not pages of the site go to the repository (``base``);
    with no repository (``base`` None) they lose their link and keep their text (each is added to ``unlinked``);
    images and other files the pages show (``copies``, filled here) are copied next to them."""

    def to_repository(target: str) -> str | None:
        """The repository path a relative link leads to when it is a repository file not on the site, else None."""
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            return None
        repo_path = os.path.normpath(os.path.join(rel_dir, target.partition("#")[0])).replace(os.sep, "/")
        if repo_path in pages or repo_path.startswith("..") or not (ROOT / repo_path).exists():
            return None
        return repo_path

    if base is None:
        def drop_md(m):
            if m.group(1).startswith("!") or to_repository(m.group(2)) is None:
                return m.group(0)
            unlinked is not None and unlinked.append(m.group(2))
            return m.group(1)[1:-2]

        def drop_html(m):
            if to_repository(m.group(1)) is None:
                return m.group(0)
            unlinked is not None and unlinked.append(m.group(1))
            return m.group(2)

        text = HTML_ANCHOR.sub(drop_html, MD_LINK.sub(drop_md, text))

    def fix(m):
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith(("#", "/")):
            return m.group(0)
        path, _, anchor = target.partition("#")
        repo_path = os.path.normpath(os.path.join(rel_dir, path)).replace(os.sep, "/")
        if repo_path in pages:
            return m.group(0)
        if m.group(1).startswith("!") or 'src="' in m.group(1):
            if (ROOT / repo_path).is_file():
                copies.add(repo_path)
                return m.group(0)
        if repo_path.startswith("..") or not (ROOT / repo_path).exists() or base is None:
            return m.group(0)  # left for Sphinx to report (or, with no repository, already unlinked)
        kind = "tree" if (ROOT / repo_path).is_dir() else "blob"
        url = base.replace("/blob/", f"/{kind}/") + "/" + repo_path + (f"#{anchor}" if anchor else "")
        return m.group(1) + url + m.group(3)

    return HTML_LINK.sub(fix, MD_LINK.sub(fix, text))


def assemble(src: Path = SRC, repo: str | None = None) -> dict:
    """Write the book's sources into ``src`` for the repository ``repo`` (None: none named); return counts for the
    summary line, and what was left out for want of a repository."""
    cfg = config()
    base, pages, copies, unlinked = repo_url(cfg, repo), site_files(), set(), []
    if src.exists():
        shutil.rmtree(src)
    (src / "notebooks").mkdir(parents=True)
    book, left_out = book_config(cfg, repo)
    (src / "_config.yml").write_text(yaml.safe_dump(book, sort_keys=False, allow_unicode=True))
    for page in SITE.glob("*.md"):
        (src / "site").mkdir(exist_ok=True)
        (src / "site" / page.name).write_text(
            rewrite_links(name_repository(page.read_text(), repo), "site", pages, base, copies, unlinked))
    shutil.copytree(SITE / "_static", src / "_static")
    mathjax = vendored_dir("mathjax")
    shutil.copytree(mathjax, src / "_static" / mathjax.name)
    for guide in GUIDES:
        text = (ROOT / guide).read_text()
        if guide == "README.md":
            text = re.sub(r"\A# .*", f"# {README_TITLE}", text, count=1)
        (src / guide).write_text(rewrite_links(name_repository(text, repo), "", pages, base, copies, unlinked))
    figures, appendices, notes = 0, [], 0
    for path in all_notebooks():
        committed = nbformat.read(path, as_version=4)
        notes += sum(map(is_speaker_notes, committed.cells))
        chapter, appendix = split_appendix(prepare_notebook(committed), path.stem)
        for nb, target in ((chapter, path.name), (appendix, f"{path.stem}_appendix.ipynb")):
            if nb is None:
                continue
            for cell in nb.cells:
                cell.source = name_repository(cell.source, repo)
                if cell.cell_type == "markdown":
                    cell.source = rewrite_links(cell.source, "notebooks", pages, base, copies, unlinked)
                else:
                    figures += sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
            nbformat.write(nb, src / "notebooks" / target)
        if appendix is not None:
            appendices.append(path.stem)
    toc = yaml.safe_load((SITE / "_toc.yml").read_text())
    (src / "_toc.yml").write_text(yaml.safe_dump(with_appendix_pages(toc, appendices), sort_keys=False))
    for rel in sorted(copies):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    if unlinked:
        left_out.append(f"the links of {len(unlinked)} mentions of repository files (their text kept)")
    return {"notebooks": len(all_notebooks()), "appendix pages": len(appendices), "figures": figures,
            "copied": len(copies), "speaker notes": notes, "left out": left_out}


# ---------------------------------------------------------------- build


def jupyter_book() -> list[str]:
    exe = Path(sys.executable).with_name("jupyter-book")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "jupyter_book.cli.main"]


def build(src: Path = SRC, out: Path = OUT, strict: bool = True, repo: str | None = None) -> int:
    work = out.with_name(out.name + "-jb")
    cmd = jupyter_book() + ["build", str(src), "--path-output", str(work), "--builder", "html", "--keep-going"]
    if strict:
        cmd.append("--warningiserror")
    log = out.with_name(out.name + "-build.log")
    with open(log, "w") as f:
        proc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT)
    text = log.read_text()
    warnings = [ln for ln in text.splitlines() if "WARNING" in ln or "ERROR" in ln]
    for line in warnings:
        print(line)
    if proc.returncode != 0:
        print(text[-4000:])
        print(f"jupyter-book failed ({proc.returncode}); the whole log is in {log.relative_to(ROOT)}")
        return proc.returncode
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(work / "_build" / "html", out)
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        fixed = mathjax_where_needed(theme_mode(download_links(name_toc_toggles(dedupe_scripts(text)))))
        if page.parent.name == "notebooks" and page.stem.endswith("_appendix"):
            fixed = whole_notebook_links(fixed, page.stem)
        if fixed != text:
            page.write_text(fixed, encoding="utf-8")
    learners_downloads(out, repo)
    icons = icon_subset.subset(out)
    if icons["kept"]:
        print(f"icons: fontawesome.js {icons['before'] / 1e6:.2f} MB -> {icons['after'] / 1e6:.3f} MB, the "
              f"{len(icons['used'])} icons the pages use ({', '.join(icons['used'])})"
              + (f"; not in Font Awesome: {icons['unknown']}" if icons["unknown"] else ""))
    return 0


TOC_TOGGLE = '<summary><span class="toctree-toggle" role="presentation">'


def name_toc_toggles(html: str) -> str:
    """The chapter menu's expand button (a chapter with an appendix page under it) is an icon alone, a
    <summary> with no name for a screen reader (axe: summary-name); give it one."""
    return html.replace(TOC_TOGGLE, '<summary aria-label="Show or hide the pages under this chapter">'
                                    '<span class="toctree-toggle" role="presentation">')


def theme_mode(html: str) -> str:
    """A first visit has no stored mode, and pydata-sphinx-theme 0.17.1 then sets an empty one and logs "Got invalid
    theme mode: . Resetting to auto." on every page: start from "auto" instead."""
    return html.replace('dataset.mode = localStorage.getItem("mode") || "";',
                        'dataset.mode = localStorage.getItem("mode") || "auto";')


MATHJAX_TAG = re.compile(r'^\s*<script\b[^>]*(?:mathjax|MathJax)[^>]*>.*?</script>\s*$\n?', re.M)


def mathjax_where_needed(html: str) -> str:
    """MathJax (1.3 MB) only on a page with maths (MyST's ``math`` elements, or TeX delimiters in a quiz's output)."""
    if 'class="math' in html or "\\(" in html or "$$" in html:
        return html
    return MATHJAX_TAG.sub("", html)


DOWNLOAD_LINK = re.compile(r'<a (href="[^"]*\.ipynb") target="_blank"(\s+class="btn btn-sm btn-download-source-button)')


def download_links(html: str) -> str:
    """The "Download .ipynb" link saves the notebook (``download``), rather than opening its JSON in a new tab,
    which is what a browser does with it from file://."""
    return DOWNLOAD_LINK.sub(r'<a \1 download\2', html)


def whole_notebook_links(html: str, stem: str) -> str:
    """An appendix page's download, Colab and source links: its chapter's notebook (the repository has no
    ``NN_name_appendix.ipynb``)."""
    chapter = stem.removesuffix("_appendix")
    return re.sub(r'((?:href|src)="[^"]*)' + re.escape(f"{stem}.ipynb"), rf"\g<1>{chapter}.ipynb", html)


def download_edition(path: Path, repo: str | None = None):
    """What a chapter's "Download .ipynb" gives: the student edition of the committed notebook (nbgrader's
    release, as ``make student`` writes it), the repository named where the placeholder was (``repo``)."""
    from courseware.editions.nbgrader_course import release

    nb = release(nbformat.read(path, as_version=4))
    for cell in nb.cells:
        if repo:
            cell.source = name_repository(cell.source, repo)
        elif is_bootstrap(cell):
            cell.source = without_repository(cell.source)
        else:
            cell.source = unname_repository(cell.source)
    return nb


# A mention of the placeholder address in the text (the student edition's "in the course's repository (<URL>)",
# "..., <URL>;"), the words around it kept.
PLACEHOLDER_MENTION = re.compile(r" \(<?%s/?>?\)|, <?%s/?>?" % ((re.escape(PLACEHOLDER_REPO),) * 2))
PLACEHOLDER_LINK = re.compile(r"\[([^\]]+)\]\(%s[^)\s]*\)" % re.escape(PLACEHOLDER_REPO))   # [text](<address>/...)


def unname_repository(text: str) -> str:
    """The text without its mentions of the placeholder address, for an edition built with no repository named:
    "in the course's repository (<URL>)" says "in the course's repository". A mention in any other form fails
    the build (a dead link is not shipped). A Markdown link into it, "[NOTATION.md](<URL>/blob/main/NOTATION.md) in
    the course's repository", keeps its text: "NOTATION.md in the course's repository"."""
    text = PLACEHOLDER_MENTION.sub("", text)
    text = PLACEHOLDER_LINK.sub(r"\1", text)
    if PLACEHOLDER_REPO in text:
        at = text.index(PLACEHOLDER_REPO)
        raise ValueError(f"a mention of {PLACEHOLDER_REPO} that unname_repository does not know: "
                         f"{text[max(0, at - 80):at + 60]!r}")
    return text


def learners_downloads(out: Path = OUT, repo: str | None = None) -> int:
    """Each chapter's "Download .ipynb" (``_sources/notebooks/<name>.ipynb``): the student edition of the
    chapter (:func:`download_edition`); an appendix page's own copy is left out (its links go to the chapter's)."""
    sources = out / "_sources" / "notebooks"
    sources.mkdir(parents=True, exist_ok=True)
    for stale in sources.glob("*_appendix.ipynb"):
        stale.unlink()
    for path in all_notebooks():
        nbformat.write(download_edition(path, repo), sources / path.name)
    return len(all_notebooks())


SCRIPT_TAG = re.compile(r"^\s*<script\b[^>]*>.*?</script>\s*$", re.M)


def dedupe_scripts(html: str) -> str:
    """Drop a <script> line that repeats an earlier one (the same src, whatever its defer, or the same body).

    Jupyter Book 1.0.4 on Sphinx 7.4 writes some page assets twice: sphinx-thebe's and
    sphinx-togglebutton's inline configuration (a second `const THEBE_JS_URL` is a script error) and
    MathJax (a second copy fails with "Cannot set property Package")."""
    seen, out = set(), []
    for line in html.split("\n"):
        if SCRIPT_TAG.match(line):
            src = re.search(r'src="([^"?]+)', line)
            key = src.group(1) if src else line.strip()
            if key in seen:
                continue
            seen.add(key)
        out.append(line)
    return "\n".join(out)


def placeholder_links(out: Path = OUT) -> int:
    """Links (``href``) in the built pages that lead to the placeholder repository (Colab's launch links included)."""
    path = PLACEHOLDER_REPO.removeprefix("https://")
    return sum(len(re.findall(r'href="[^"]*' + re.escape(path), p.read_text(encoding="utf-8")))
               for p in out.rglob("*.html"))


def site_size(out: Path = OUT) -> tuple[int, int, int]:
    files = [p for p in out.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files), sum(1 for p in files if p.suffix == ".html")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepare-only", action="store_true", help="only assemble build/site-src/")
    parser.add_argument("--no-strict", action="store_true", help="do not turn Sphinx warnings into errors")
    parser.add_argument("--repo-url", default=None,
                        help="the repository's address (default: $REPO_URL; none: no launch or repository buttons)")
    parser.add_argument("--out", type=Path, default=OUT, help=f"the built site (default {OUT.relative_to(ROOT)}); "
                        "its sources go beside it, in <out>-src")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    out = args.out.resolve()
    src = SRC if out == OUT else out.with_name(out.name + "-src")
    repo = repository(config(), args.repo_url)
    counts = assemble(src, repo)
    print(f"assembled {src.relative_to(ROOT) if src.is_relative_to(ROOT) else src}: {counts['notebooks']} notebooks "
          f"({counts['figures']} figures, {counts['speaker notes']} speaker notes left out), {len(GUIDES)} guides, "
          f"{counts['copied']} other files, in {time.perf_counter() - start:.1f} s")
    if repo:
        print(f"repository: {repo} (Colab launch, Repository and Show source buttons, links to its files)")
    else:
        print("repository: none named (set `make site REPO_URL=https://github.com/OWNER/NAME` or $REPO_URL); left out "
              + "; ".join(counts["left out"]) + "; the downloads' mentions of it (their bootstrap cell says how to get "
              "the course's files instead).")
    if args.prepare_only:
        return 0
    rc = build(src, out, strict=not args.no_strict, repo=repo)
    if rc:
        return rc
    n, size, html_pages = site_size(out)
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f"site: {shown} holds {html_pages} HTML pages, {n} files, {size / 1e6:.1f} MB, "
          f"{placeholder_links(out)} links to the placeholder repository; built in "
          f"{time.perf_counter() - _STARTED:.0f} s (open {shown}/index.html)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
