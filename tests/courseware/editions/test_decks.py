"""The lecture companion (courseware/editions/build_decks.py): slide decks and hand-outs that open offline,
with test markers and (for students) solutions removed. Builds two small notebooks into tmp_path."""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

from utils.data import _sha256

from notebook_utils import ROOT, read

sys.path.insert(0, str(ROOT))
from courseware.editions import build_decks  # noqa: E402
from courseware.editions.make_student import SOLUTION_DELIMITERS  # noqa: E402
from courseware.authoring.tag_exercises import wrap_notes  # noqa: E402

NB04 = ROOT / "notebooks" / "04_scaled_dot_product_attention.ipynb"
NB06 = ROOT / "notebooks" / "06_positional_encoding.ipynb"
BUILDS = {  # (kind, variant) -> notebooks
    ("slides", "student"): [NB04, NB06],
    ("slides", "instructor"): [NB04],
    ("handouts", "student"): [NB04, NB06],
    ("handouts", "instructor"): [NB04],
}


class Page(HTMLParser):
    """The resources a page loads (tag, attribute, value), its inline styles and its visible text."""

    LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src",
             "audio": "src", "embed": "src", "object": "data", "link": "href"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.refs, self.styles, self.text, self.scripts, self._in = [], [], [], [], None
        self.feed(text)
        self.text = "".join(self.text)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        attr = self.LOADS.get(tag)
        if attr and attrs.get(attr):
            self.refs.append((tag, attr, attrs[attr]))
        if tag in ("script", "style"):
            self._in = tag

    def handle_endtag(self, tag):
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "style":
            self.styles.append(data)
        elif self._in == "script":
            self.scripts.append(data)
        else:
            self.text.append(data)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("decks")
    pages = {}
    for (kind, variant), notebooks in BUILDS.items():
        for page in build_decks.build(kind, variant, notebooks, out / f"{kind}-{variant}"):
            pages[kind, variant, page.name.split(".")[0]] = page
    return pages


def _pages(built):
    return sorted(built.items())


def test_stable_names(built):
    assert {p.name for p in built.values()} == {
        "04_scaled_dot_product_attention.slides.html", "06_positional_encoding.slides.html",
        "04_scaled_dot_product_attention.html", "06_positional_encoding.html"}
    for page in built.values():
        assert (page.parent / "index.html").is_file()


def test_nothing_is_loaded_from_the_network_and_every_local_asset_exists(built):
    for key, page in _pages(built):
        parsed = Page(page.read_text(encoding="utf-8"))
        assert parsed.refs, key
        for tag, attr, value in parsed.refs:
            assert not re.match(r"^\s*(https?:)?//", value, re.I), f"{key}: <{tag} {attr}={value[:80]!r}> needs the network"
            if value.startswith("data:"):
                continue
            assert (page.parent / unquote(value)).is_file(), f"{key}: <{tag} {attr}={value!r}> does not exist"
        for css in parsed.styles:
            assert not re.search(r"@import\s+(url\()?\s*['\"]?(https?:)?//", css), f"{key}: a style imports from the network"
        for js in parsed.scripts:
            assert not re.search(r"(import\(|from)\s*['\"](https?:)?//", js), f"{key}: a script imports from the network"
        # what the linked style sheets load in turn: fonts (at least one existing file per @font-face) and images
        for tag, _, value in parsed.refs:
            if tag == "link" and value.endswith(".css"):
                _check_css(page.parent / value)


def _check_css(css_path: Path):
    css = css_path.read_text(encoding="utf-8")
    assert not re.search(r"url\(\s*['\"]?(https?:)?//", css), f"{css_path} loads from the network"
    for imported in re.findall(r"@import\s+url\(\s*['\"]?([^'\")]+)", css):
        _check_css(css_path.parent / imported)
    for face in re.findall(r"@font-face\s*{[^}]*}", css):
        urls = [u.split("?")[0].split("#")[0] for u in re.findall(r"url\(\s*['\"]?([^'\")]+)", face)]
        assert any((css_path.parent / u).is_file() for u in urls), f"{css_path}: no font file of {urls} exists"
    for other in re.findall(r"url\(\s*['\"]?([^'\")]+)", re.sub(r"@font-face\s*{[^}]*}|@import[^;]*;", "", css)):
        if not other.startswith("data:"):
            assert (css_path.parent / other).is_file(), f"{css_path}: {other} does not exist"


def test_no_test_or_solution_markers_left(built):
    for key, page in _pages(built):
        html = page.read_text(encoding="utf-8")
        for marker in (*SOLUTION_DELIMITERS, "NBVAL_"):
            assert marker not in html, f"{key} still contains {marker!r}"


def _solution_lines(nb) -> list[str]:
    """Lines of code inside the solution regions that appear nowhere else in the notebook."""
    lines, elsewhere = [], []
    for cell in nb.cells:
        inside = False
        for line in cell.source.split("\n"):
            if "BEGIN SOLUTION" in line:
                inside = True
            elif "END SOLUTION" in line:
                inside = False
            elif inside and cell.cell_type == "code" and len(line.strip()) > 15:
                lines.append(line.strip())
            else:
                elsewhere.append(line)
    return [line for line in lines if not any(line in other for other in elsewhere)]


@pytest.mark.parametrize("kind", ["slides", "handouts"])
def test_student_has_stubs_and_instructor_has_solutions(built, kind):
    solution = _solution_lines(read(NB04))
    assert "scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])" in solution
    student = Page(built[kind, "student", NB04.stem].read_text(encoding="utf-8")).text
    instructor = Page(built[kind, "instructor", NB04.stem].read_text(encoding="utf-8")).text
    for line in solution:
        assert line not in student, f"student {kind} shows solution line {line!r}"
    if kind == "slides":  # the decks skip solution cells (slideshow metadata): the task, not its answer
        return
    for line in solution:
        assert line in instructor, f"instructor {kind} lacks solution line {line!r}"
    assert "# YOUR CODE HERE" in student and "raise NotImplementedError()" in student
    assert "YOUR ANSWER HERE" in student  # the written answer of the markdown exercise
    assert "NotImplementedError" not in instructor and "YOUR ANSWER HERE" not in instructor
    answer = "removes the dependence on the dimension only"  # from the written answer of that exercise
    assert answer in instructor and answer not in student


def test_speaker_notes_in_decks_and_instructors_handouts_not_in_students(built):
    """The notebooks fold their speaker notes in a closed <details> block (out of a reader's way); the
    decks unfold them into reveal.js's speaker view, the instructor's hand-out shows them as text and
    the student's hand-out has none."""
    point = next(line for line in read(NB04).cells[1].source.splitlines() if line.startswith("**Point:**"))
    point = re.sub(r"\*\*Point:\*\*\s*", "", point)[:40]
    deck = built["slides", "student", NB04.stem].read_text(encoding="utf-8")
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', deck, re.S)
    assert notes and all("<details" not in n for n in notes) and any(point in n for n in notes)
    instructor = built["handouts", "instructor", NB04.stem].read_text(encoding="utf-8")
    assert point in Page(instructor).text and 'class="speaker-notes"' not in instructor
    for stem in (NB04.stem, NB06.stem):
        student = built["handouts", "student", stem].read_text(encoding="utf-8")
        assert "Point:" not in Page(student).text and "speaker-notes" not in student, stem


def test_maths_by_katex_and_figures_embedded(built):
    for key, page in _pages(built):
        html = page.read_text(encoding="utf-8")
        srcs = [v for tag, _, v in Page(html).refs if tag == "script"]
        assert any(s.endswith("katex.min.js") for s in srcs) and any(s.endswith("auto-render.min.js") for s in srcs), key
        assert "renderMathInElement" in html, key
        assert not any("mathjax" in s.lower() or "require" in s.lower() for s in srcs), key
        assert "$" in Page(html).text, f"{key}: the maths should reach the page as TeX for KaTeX"
        imgs = [v for tag, _, v in Page(html).refs if tag == "img"]
        assert imgs and all(v.startswith("data:image/png;base64,") for v in imgs), key
        assert "interactive(children=" not in html, f"{key} shows a widget's text repr"


def test_slides_load_reveal_and_its_notes_plugin(built):
    html = built["slides", "student", NB04.stem].read_text(encoding="utf-8")
    srcs = [v for tag, _, v in Page(html).refs if tag in ("script", "link")]
    for asset in ("dist/reveal.js", "plugin/notes/notes.js", "dist/reveal.css", "dist/theme/white.css"):
        assert any(s.endswith(asset) for s in srcs), asset
    assert "Reveal.initialize" in html and "plugins: [RevealNotes]" in html


def _cell(kind, source, slide_type=None, outputs=()):
    cell = nbformat.v4.new_code_cell(source) if kind == "code" else nbformat.v4.new_markdown_cell(source)
    if slide_type:
        cell.metadata["slideshow"] = {"slide_type": slide_type}
    if outputs:
        cell.outputs, cell.execution_count = list(outputs), 1
    return cell


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
VIEW = {"model_id": "abc", "version_major": 2, "version_minor": 0}


def test_slideshow_metadata_notes_and_widget_outputs(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    display = nbformat.v4.new_output
    nb.cells = [
        _cell("markdown", "# A title\n\nThe first slide, with $e^{i\\pi} = -1$.", "slide"),
        _cell("markdown", wrap_notes("Say this out loud: SPEAKER-NOTE-TEXT"), "notes"),
        _cell("markdown", "SKIPPED-CELL-TEXT", "skip"),
        _cell("markdown", "A fragment: FRAGMENT-TEXT", "fragment"),
        _cell("code", "# NBVAL_CHECK_OUTPUT\nexplorer()", "subslide", [display(
            "display_data", {"application/vnd.jupyter.widget-view+json": VIEW, "image/png": PNG,
                             "text/plain": "interactive(children=(IntSlider(value=0),))"})]),
        _cell("code", "old_explorer()", "slide", [display(
            "display_data", {"application/vnd.jupyter.widget-view+json": VIEW,
                             "text/plain": "interactive(children=(IntSlider(value=0),))"})]),
        _cell("code", "train()", None, [display(
            "display_data", {"application/vnd.jupyter.widget-view+json": VIEW,
                             "text/plain": "epoch: 100%|##########| 3/3 [00:01<00:00,  2.0it/s]"})]),
    ]
    path = tmp_path / "99_synthetic.ipynb"
    nbformat.write(nb, path)
    [deck] = build_decks.build("slides", "student", [path], tmp_path / "slides")
    html = deck.read_text(encoding="utf-8")
    text = Page(html).text
    assert html.count("<section") >= 4  # two slides, each with its subslide(s)
    notes = re.findall(r'<aside class="notes">(.*?)</aside>', html, re.S)
    assert len(notes) == 1 and "SPEAKER-NOTE-TEXT" in notes[0]
    assert "<details" not in notes[0] and "<summary" not in notes[0], "the speaker view shows the notes unfolded"
    assert "SKIPPED-CELL-TEXT" not in html
    assert re.search(r'class="fragment"[^>]*>.*?FRAGMENT-TEXT', html, re.S)
    assert f"data:image/png;base64,{PNG}" in html  # the explorer's figure
    assert "interactive(children=" not in html and "Interactive explorer: run the notebook in Jupyter" in text
    assert "3/3 [00:01" in text  # a progress bar keeps its text
    assert "NBVAL" not in html and "widget-state+json" not in html and "widget-view+json" not in html
    assert "<title>A title slides</title>" in html


def test_vendored_files_match_their_checksums():
    readme = (ROOT / "vendor" / "README.md").read_text()
    listed = dict(re.findall(r"^\| `([^`]+)` \| [\d,]+ \| `([0-9a-f]{64})` \|$", readme, re.M))
    present = {p.relative_to(ROOT / "vendor").as_posix() for d in (ROOT / "vendor").iterdir() if d.is_dir()
               for p in d.rglob("*") if p.is_file()}
    assert listed and set(listed) == present, f"not listed: {present - set(listed)}; missing: {set(listed) - present}"
    for rel, digest in listed.items():
        assert _sha256(ROOT / "vendor" / rel) == digest, rel


def test_bad_input_gives_a_clear_error(capsys):
    with pytest.raises(SystemExit):
        build_decks.main(["slides", "no_such_notebook"])
    assert "no notebook 'no_such_notebook'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        build_decks.main(["handouts", "--variant", "teacher"])
    assert "invalid choice: 'teacher'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="unknown variant 'teacher'"):
        build_decks.make_exporter("slides", "teacher")
    with pytest.raises(ValueError, match="unknown kind 'pdf'"):
        build_decks.make_exporter("pdf")
    assert build_decks.resolve(["04", "06_positional_encoding"]) == [NB04, NB06]
