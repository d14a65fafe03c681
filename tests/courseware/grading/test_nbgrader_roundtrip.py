"""The nbgrader round trip, as an instructor runs it (INSTRUCTORS.md): a real course directory
is built from the notebooks (source -> release with nbgrader's generate_assignment and the
repository's nbgrader_config.py), students submit, and nbgrader autogrades them, with the judge
deciding every check cell (courseware/grading/hidden.py, courseware/editions/nbgrader_course.py):

- ``stub``: the released notebook as handed out; it must score 0 on every autograded cell;
- ``solution``: the released notebook with the model answers filled in; full marks, and every hidden
  block recorded in the kernel and was passed by the judge;
- ``shortcut``: each exercise with a known one-line shortcut
  (``F.one_hot``, ``utils.attention.scaled_dot_product_attention``, ``return layer(x, memory, ...)``
  ...) is answered with it; it must score 0 on every check cell of that exercise;
- ``attackNN``: the adversarial submissions of ``tests/courseware/grading/grading_attacks`` (silencing the kernel,
  disarming the grading module, reaching a forbidden built-in another way, patching comparisons,
  shadowing helpers, reading expected values); each must score 0 on the cells it attacks.

Autograding runs only each notebook's ``## Exercises`` section (``nbgrader_config.py``), so the
demonstration training is not re-run. ``make test`` grades a representative subset
(``COURSE_GRADING_NOTEBOOKS``, default ``07 10``, with the attacks marked ``fast``);
``make test-grading`` grades every notebook with every attack (``COURSE_GRADING_ATTACKS=all``).
"""

from __future__ import annotations

import os
import sys
import time

import nbformat
import pytest

from notebook_utils import NOTEBOOKS, ROOT

sys.path.insert(0, str(ROOT))
from courseware.editions.make_student import student_version  # noqa: E402
from courseware.editions.nbgrader_course import build_course  # noqa: E402
from grading_attacks import attacks_for  # noqa: E402

HIDDEN = "### BEGIN HIDDEN TESTS"

# Known one-line shortcuts: notebook number -> {exercise grade_id: the answer cell's source}.
SHORTCUTS = {
    "01": {
        "ex1": ("def one_hot(ids, num_classes):\n"
                "    if (ids < 0).any() or (ids >= num_classes).any():\n"
                "        raise ValueError('id out of range')\n"
                "    return F.one_hot(ids, num_classes).float()\n"),
        "ex3": ("def cosine_similarities(E):\n"
                "    return F.cosine_similarity(E[:, None, :], E[None, :, :], dim=-1)\n"),
        "ex4": ("from torch import nn\n"
                "from utils.text import masked_mean\n\n\n"
                "class BagOfEmbeddings(nn.Module):\n"
                "    def __init__(self, vocab_size, dim, num_classes):\n"
                "        super().__init__()\n"
                "        self.embed = nn.Embedding(vocab_size, dim)\n"
                "        self.out = nn.Linear(dim, num_classes)\n\n"
                "    def forward(self, ids, mask):\n"
                "        return self.out(masked_mean(self.embed(ids), mask))\n\n\n"
                "def train_classifier(model, ids, mask, labels, steps=200, lr=0.05):\n"
                "    optimizer = torch.optim.Adam(model.parameters(), lr=lr)\n"
                "    losses = []\n"
                "    for _ in range(steps):\n"
                "        loss = F.cross_entropy(model(ids, mask), labels)\n"
                "        optimizer.zero_grad(); loss.backward(); optimizer.step()\n"
                "        losses.append(loss.item())\n"
                "    return losses\n"),
    },
    "02": {
        # Exercise 4 with nn.GRU's own (packed) forward instead of the student's masked_encode
        "ex4": ("class TinySeq2Seq(nn.Module):\n"
                "    def __init__(self, vocab_size, emb=16, hidden=32):\n"
                "        super().__init__()\n"
                "        self.emb, self.encoder = nn.Embedding(vocab_size, emb), nn.GRU(emb, hidden, batch_first=True)\n"
                "        self.decoder, self.out = nn.GRUCell(emb + hidden, hidden), nn.Linear(2 * hidden, vocab_size)\n\n"
                "    def forward(self, src, src_mask, tgt_in):\n"
                "        packed = nn.utils.rnn.pack_padded_sequence(self.emb(src), src_mask.sum(1), batch_first=True,\n"
                "                                                   enforce_sorted=False)\n"
                "        c = s = self.encoder(packed)[1][0]\n"
                "        logits = []\n"
                "        for t in range(tgt_in.shape[1]):\n"
                "            s = self.decoder(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)\n"
                "            logits.append(self.out(torch.cat([s, c], -1)))\n"
                "        return torch.stack(logits, 1)\n"),
        # Exercise 5 with sacreBLEU's own BLEU
        "ex5": ("import sacrebleu\n\n\n"
                "def multi_ref_bleu(hyps, refs):\n"
                "    slots = max(len(rs) for rs in refs)\n"
                "    streams = [[' '.join(rs[k]) if k < len(rs) else None for rs in refs] for k in range(slots)]\n"
                "    return sacrebleu.corpus_bleu([' '.join(h) for h in hyps], streams, tokenize='none',\n"
                "                                 smooth_method='none', force=True).score\n"),
    },
    "03": {
        "ex2": ("from utils.rnn import masked_softmax\n\n\n"
                "def context_vector(e, h, mask):\n"
                "    weights = masked_softmax(e, mask)\n"
                "    return weights, (weights[..., None] * h).sum(1)\n"),
        # Exercise 4 with utils.rnn's AdditiveScore and attend instead of the student's Exercises 1-2
        "ex4": ("from utils.rnn import AdditiveScore, attend\n\n\n"
                "class AttentionDecoder(nn.Module):\n"
                "    def __init__(self, vocab_size, emb=16, hidden=32):\n"
                "        super().__init__()\n"
                "        self.emb, self.cell = nn.Embedding(vocab_size, emb), nn.GRUCell(emb + hidden, hidden)\n"
                "        self.out, self.score = nn.Linear(2 * hidden, vocab_size), AdditiveScore(hidden, hidden)\n\n"
                "    def forward(self, H, mask, tgt_in):\n"
                "        s = H[torch.arange(H.shape[0]), mask.sum(1) - 1]\n"
                "        logits, weights = [], []\n"
                "        for t in range(tgt_in.shape[1]):\n"
                "            c, a = attend(self.score, s, H, mask)\n"
                "            s = self.cell(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)\n"
                "            logits.append(self.out(torch.cat([s, c], -1)))\n"
                "            weights.append(a)\n"
                "        self.weights = torch.stack(weights, 1)\n"
                "        return torch.stack(logits, 1)\n"),
    },
    "04": {
        "ex1": ("from utils.attention import scaled_dot_product_attention\n\n\n"
                "def attention(q, k, v, mask=None):\n"
                "    return scaled_dot_product_attention(q, k, v, mask)\n"),
        "ex4": ("import math\n"
                "from torch import nn\n"
                "from utils.attention import scaled_dot_product_attention\n\n\n"
                "class RetrievalAttention(nn.Module):\n"
                "    def __init__(self, d, d_k, scaled=True):\n"
                "        super().__init__()\n"
                "        self.W_q = nn.Linear(d, d_k, bias=False)\n"
                "        self.W_k = nn.Linear(d, d_k, bias=False)\n"
                "        self.scaled = scaled\n\n"
                "    def forward(self, query, keys, values):\n"
                "        q = self.W_q(query)[:, None, :] * (1.0 if self.scaled else math.sqrt(self.W_q.out_features))\n"
                "        out, w = scaled_dot_product_attention(q, self.W_k(keys), values[..., None])\n"
                "        return out[:, 0, 0], w[:, 0]\n\n\n"
                "def train_retrieval(model, steps=200, lr=1.0, batch=64, seed=0):\n"
                "    g = torch.Generator().manual_seed(seed)\n"
                "    optimizer = torch.optim.SGD(model.parameters(), lr=lr)\n"
                "    losses = []\n"
                "    for _ in range(steps):\n"
                "        query, keys, values, target = retrieval_batch(batch, g, d=model.W_q.in_features)\n"
                "        loss = F.mse_loss(model(query, keys, values)[0], target)\n"
                "        optimizer.zero_grad(); loss.backward(); optimizer.step()\n"
                "        losses.append(loss.item())\n"
                "    return losses\n"),
    },
    "06": {
        "ex1": ("import utils.positional\n\n\n"
                "def sinusoidal(max_len, d_model):\n"
                "    return utils.positional.sinusoidal_encoding(max_len, d_model, dtype=torch.float64)\n"),

        # the library's module in place of one's own (the training function is the model answer's)
        "ex4": ("import utils.positional\n"
                "from torch import nn\n"
                "import torch.nn.functional as F\n\n\n"
                "def AddPositions(d_model, max_len=64):\n"
                "    return utils.positional.SinusoidalPositionalEncoding(d_model, max_len=max_len)\n\n\n"
                "def lookback_accuracy(use_positions, k, seed, steps=300):\n"
                "    V, T, D = 8, 12, 32\n"
                "    torch.manual_seed(seed)\n"
                "    emb, attn, out = nn.Embedding(V, D), nn.MultiheadAttention(D, 2, batch_first=True), nn.Linear(D, V)\n"
                "    pos = AddPositions(D) if use_positions else nn.Identity()\n"
                "    def logits(x):\n"
                "        z = pos(emb(x))\n"
                "        return out(attn(z, z, z, need_weights=False)[0])\n"
                "    opt = torch.optim.Adam([*emb.parameters(), *attn.parameters(), *out.parameters()], lr=3e-3)\n"
                "    g = torch.Generator().manual_seed(seed)\n"
                "    for _ in range(steps):\n"
                "        x = torch.randint(V, (64, T), generator=g)\n"
                "        loss = F.cross_entropy(logits(x)[:, k:].reshape(-1, V), x[:, :-k].reshape(-1))\n"
                "        opt.zero_grad()\n"
                "        loss.backward()\n"
                "        opt.step()\n"
                "    x = torch.randint(V, (500, T), generator=torch.Generator().manual_seed(seed + 1000))\n"
                "    with torch.no_grad():\n"
                "        return (logits(x)[:, k:].argmax(-1) == x[:, :-k]).float().mean().item()\n"),
    },
    "07": {
        "ex1": ("from utils.attention import causal_mask, key_padding_mask\n\n\n"
                "def decoder_self_mask(tgt, pad_id=0):\n"
                "    return causal_mask(tgt.shape[1]) & key_padding_mask(tgt, pad_id)\n"),
        "ex2": ("def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):\n"
                "    return layer(x, memory, tgt_mask=tgt_mask, memory_key_padding_mask=memory_key_padding_mask)\n"),
    },
    "08": {
        "ex1": ("from utils.transformer import beam_search\n\n\n"
                "def beam_search_lp(model, src, beam_size, max_len, bos_id, eos_id, alpha=0.6):\n"
                "    tokens = beam_search(model, src, beam_size, max_len, bos_id, eos_id, length_penalty=alpha)[0]\n"
                "    return tokens, model_score(model, src, tokens, bos_id, eos_id, alpha, ended=len(tokens) < max_len)\n"),
        "ex2": ("def smoothed_loss(logits, target, eps, pad_id=0):\n"
                "    return F.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=eps)\n"),
    },
    "09": {
        "ex1": ("import utils.gpt\n\n\n"
                "def keep_top_k(logits, k):\n"
                "    return utils.gpt.top_k_filter(logits, k)\n"),
    },
    "10": {
        "ex1": ("from utils.scale import online_softmax_update\n\n\n"
                "def online_update(m, l, acc, scores, v):\n"
                "    return online_softmax_update(m, l, acc, scores, v)\n"),
        "ex3": ("def repeat_heads(k, n_rep):\n"
                "    return k.repeat_interleave(n_rep, dim=1)\n"),
    },
}


def chosen_attacks(path, source):
    """The adversarial submissions for a notebook: all under `make test-grading`
    (COURSE_GRADING_ATTACKS=all), the ones marked fast otherwise, none with COURSE_GRADING_ATTACKS=none, classes 7-13
    with =sandbox, classes 14 and up (written from the trust boundary's design) with =design."""
    first = next(grade_id(c) for c in source.cells
                 if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution"))
    every = attacks_for(path.name[:2], first, SHORTCUTS.get(path.name[:2], {}).get(first))
    from courseware.grading.sandbox import probe

    if probe() is not None:   # no sandbox here: autograde runs unsandboxed, and the attacks only it stops are left out
        every = [a for a in every if a.kind < 7]
    chosen = os.environ.get("COURSE_GRADING_ATTACKS", "fast")
    if chosen == "all":
        return every
    if chosen == "none":  # stubs, solutions and shortcuts only (for timing autograde)
        return []
    if chosen == "sandbox":  # the attacks only the sandbox and the registry's removal stop (classes 7-13)
        return [a for a in every if a.kind >= 7]
    if chosen == "design":   # those written from the trust boundary's design (classes 14-17, issue 48)
        return [a for a in every if a.kind >= 14]
    return [a for a in every if a.fast]


def attack_submission(released, attack):
    nb = nbformat.from_dict(released)
    known = {grade_id(c) for c in nb.cells}
    assert set(attack.answers) <= known, f"{attack.name}: no answer cell {set(attack.answers) - known}"
    for cell in nb.cells:
        if grade_id(cell) in attack.answers:
            cell.source = attack.answers[grade_id(cell)]
    for gid, source in attack.added.items():   # a cell of the student's own, inserted before gid's cell
        i = next(i for i, c in enumerate(nb.cells) if grade_id(c) == gid)
        nb.cells.insert(i, nbformat.v4.new_code_cell(source))
    return nb


def chosen_notebooks():
    names = os.environ.get("COURSE_GRADING_NOTEBOOKS", "07 10").split()
    if names == ["all"]:
        return NOTEBOOKS
    return [p for p in NOTEBOOKS if p.name[:2] in names]


def grade_id(cell) -> str | None:
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def submission(released, source, shortcuts=None):
    """The released notebook answered with the source's solutions or, given ``shortcuts``, with
    those shortcuts only (the other exercises left as stubs, so grading them costs nothing)."""
    answers = {grade_id(c): c.source for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")}
    nb = nbformat.from_dict(released)
    for cell in nb.cells:
        gid = grade_id(cell)
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        if shortcuts is not None:
            if gid in shortcuts:
                cell.source = shortcuts[gid]
        elif cell.cell_type == "code":
            cell.source = answers[gid]
        else:
            cell.source = "An answer in my own words."
    return nb


def earlier_release(nb):
    """``nb`` with the Exercises section's set-up cells laid out as an earlier release had them: the same syntax
    tree, another text (``ast.unparse``: no comments, long strings joined again where a later release split them by
    implicit concatenation, other quotes and line breaks; issue 48, item 8). None when the section has no set-up
    cell whose text that changes."""
    import ast

    from courseware.editions.nbgrader_course import exercise_section_end, exercise_section_start

    nb = nbformat.from_dict(nb)
    changed = 0
    for cell in nb.cells[exercise_section_start(nb) or 0:exercise_section_end(nb)]:
        if cell.cell_type != "code" or cell.metadata.get("nbgrader"):
            continue
        try:
            text = "# as an earlier release laid it out\n" + ast.unparse(ast.parse(cell.source))
        except SyntaxError:
            continue
        if text != cell.source:
            cell.source, changed = text, changed + 1
    return nb if changed else None


def check_ids(nb, exercise):
    """grade_ids of an exercise's check cells: ex1 -> ex1_check, ex1_check2, ..."""
    return [g for g in map(grade_id, nb.cells) if g and (g == f"{exercise}_check" or g.startswith(f"{exercise}_check"))]


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    paths = chosen_notebooks()
    if not paths:
        pytest.skip("COURSE_GRADING_NOTEBOOKS names no notebook")
    from courseware.grading.sandbox import SANDBOX_ENV, bwrap, probe

    if probe() is not None:
        if bwrap() is not None:   # installed, yet no sandbox: a defect to see, not a reason to grade without one
            pytest.fail(f"bubblewrap is installed but autograde's sandbox cannot start: {probe()}")
        print(f"\nautograde without its sandbox ({probe()}): the attacks only the sandbox stops are skipped")
        os.environ[SANDBOX_ENV] = "off"
    root = tmp_path_factory.mktemp("course")
    start = time.time()
    api = build_course(root, paths)
    graded = {}
    for p in paths:
        aid = p.stem
        released = nbformat.read(root / "release" / aid / p.name, as_version=4)
        source = nbformat.read(p, as_version=4)
        students = {"stub": released, "solution": submission(released, source)}
        earlier = earlier_release(students["solution"])
        if earlier is not None:
            students["earlier"] = earlier
        if p.name[:2] in SHORTCUTS:
            students["shortcut"] = submission(released, source, SHORTCUTS[p.name[:2]])
        scan = {}
        for i, attack in enumerate(chosen_attacks(p, source)):
            students[f"attack{i:02d}"] = attack_submission(released, attack)
            scan[f"attack{i:02d}"] = attack.scan
        for student, nb in students.items():
            folder = root / "submitted" / student / aid
            folder.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, folder / p.name)
            t = time.time()
            os.environ["COURSE_GRADING_SCAN"] = "on" if scan.get(student, True) else "off"
            try:
                result = api.autograde(aid, student, force=True, create=True)
            finally:
                os.environ.pop("COURSE_GRADING_SCAN", None)
            assert result["success"], f"autograde {aid} {student} failed:\n{result.get('error')}\n{result.get('log')}"
            graded[aid, student] = time.time() - t
            LOGS[aid, student] = result.get("log") or ""
    for (aid, student), s in graded.items():
        print(f"autograde {aid} {student}: {s:.1f} s")
    print(f"round trip ({len(paths)} notebooks, build + autograde): {time.time() - start:.1f} s")
    return root, paths


LOGS: dict[tuple[str, str], str] = {}   # (assignment, student) -> autograde's log


def scores(root, aid, nb_name, student, review=False):
    """grade_id -> (auto score, max score, cell type), and whether it needs a manual grade if ``review``."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        nb = gb.find_submission_notebook(nb_name, aid, student)
        return {g.name: (g.auto_score, g.max_score, g.cell_type) + ((g.needs_manual_grade,) if review else ())
                for g in nb.grades}


def autograded(root, aid, student, name):
    return nbformat.read(root / "autograded" / student / aid / name, as_version=4)


def test_make_student_is_the_nbgrader_release(course):
    root, paths = course
    for p in paths:
        released = nbformat.read(root / "release" / p.stem / p.name, as_version=4)
        assert student_version(nbformat.read(p, as_version=4)) == released, p.name
        text = nbformat.writes(released)
        for leak in ("### BEGIN SOLUTION", HIDDEN, "### BEGIN MARK SCHEME", '"widgets"', '"execution"', "source_hidden"):
            assert leak not in text, f"{p.name}: the release carries {leak}"
        graded = [c for c in released.cells if c.metadata.get("nbgrader", {}).get("grade")]
        assert graded and all("checksum" in c.metadata.nbgrader and "cell_type" in c.metadata.nbgrader for c in graded)
        assert all(c.metadata.nbgrader["locked"] for c in graded if c.cell_type == "code")


def test_untouched_check_cells_grade_without_a_checksum_warning(course):
    """Issue 50: nbgrader keeps a check cell's checksum with its hidden tests (jupyter/nbgrader#1961), so every
    honest autograde warned "Attribute 'checksum' ... has changed!" for each check cell with a hidden block;
    ``OverwriteReleasedCells`` (nbgrader_config.py) tells an untouched cell from an edited one."""
    honest = {k: log for k, log in LOGS.items() if k[1] in ("stub", "solution")}
    assert honest, "no honest submission was graded"
    for (aid, student), log in honest.items():
        warned = [line for line in log.splitlines() if "Attribute 'checksum'" in line]
        assert not warned, f"autograde {aid} {student}, check cells untouched:\n" + "\n".join(warned)


def test_stubs_score_zero(course):
    root, paths = course
    for p in paths:
        got = scores(root, p.stem, p.stem, "stub")
        auto = {k: v for k, v in got.items() if v[2] == "code"}
        assert auto and all(score == 0 for score, _, _ in auto.values()), (p.name, auto)


def test_solutions_score_full_marks_and_hidden_tests_ran(course):
    root, paths = course
    for p in paths:
        got = scores(root, p.stem, p.stem, "solution")
        auto = {k: v for k, v in got.items() if v[2] == "code"}
        nb = autograded(root, p.stem, "solution", p.name)
        if not all(score == top for score, top, _ in auto.values()):
            why = [f"{grade_id(c)}: {o.ename}: {o.evalue[:1500]}" for c in nb.cells if c.cell_type == "code"
                   for o in c.outputs if o.output_type == "error"][:3]
            raise AssertionError(f"{p.name}: the solution lost points {auto}; first errors: {why}")
        hidden = [c for c in nb.cells if c.cell_type == "code" and HIDDEN in c.source]
        assert hidden, f"{p.name}: no hidden tests in the autograded notebook"
        for cell in hidden:
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            assert "recorded for the judge" in text and "judge: passed" in text, cell.source[:200]
            assert not any(o.output_type == "error" for o in cell.outputs), cell.source[:200]


def test_honest_work_on_an_earlier_release_keeps_full_marks(course):
    """The model answers in a notebook whose set-up cells an earlier release laid out otherwise (``earlier_release``):
    autograde gives them the source's text back (``restore_setup_cells``), so they run as the course's own, and no
    point is lost (issue 48, item 8: 02's own set-up code was charged to the student as a forbidden GRU.forward)."""
    root, paths = course
    tried = 0
    for p in paths:
        if not (root / "submitted" / "earlier" / p.stem).is_dir():
            continue
        got = scores(root, p.stem, p.stem, "earlier", review=True)
        solution = scores(root, p.stem, p.stem, "solution", review=True)
        auto = {k: v for k, v in got.items() if v[2] == "code"}
        assert auto and all(score == top for score, top, _, _ in auto.values()), (p.name, auto)
        assert got == solution, (p.name, got, solution)   # marked for a person exactly where the model answers are
        tried += 1
    assert tried or not any(earlier_release(nbformat.read(p, as_version=4)) for p in paths), "no earlier release graded"


def test_rules_only_the_watch_checks_are_shown_to_the_instructor(course):
    """An exercise whose "write it yourself" rule removal cannot settle (courseware.grading.registry.review): its
    check cells keep their points, are marked "needs manual grade", and say which answer cell to read; no
    other check cell is marked."""
    from courseware.grading.registry import exercise_of, review

    root, paths = course
    for p in paths:
        todo = review(p.name[:2])
        got = scores(root, p.stem, p.stem, "solution", review=True)
        nb = autograded(root, p.stem, "solution", p.name)
        for cell in nb.cells:
            gid = grade_id(cell)
            if cell.cell_type != "code" or gid not in got or got[gid][2] != "code":
                continue
            text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
            reviewed = exercise_of(gid) in todo
            assert got[gid][3] == reviewed, (p.name, gid, got[gid])
            assert (f"read answer cell {exercise_of(gid)}" in text) == reviewed, (p.name, gid, text[-300:])
            assert got[gid][0] == got[gid][1], (p.name, gid, got[gid])


def test_points_that_wait_for_a_person_count_zero_and_the_export_says_how_many(course, tmp_path):
    """A check cell marked "needs manual grade" counts 0 in the gradebook's total and in nbgrader export
    until an instructor grades it; the export's points_waiting column holds its automatic points."""
    import csv

    from nbgrader.api import Gradebook

    from courseware.editions.nbgrader_course import WaitingCsvExport
    from courseware.grading.registry import exercise_of, review

    root, paths = course
    dest = tmp_path / "grades.csv"
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        WaitingCsvExport(to=str(dest)).export(gb)
        rows = {(r["assignment"], r["student_id"]): r for r in csv.DictReader(dest.open())}
        for p in paths:
            sub = gb.find_submission(p.stem, "solution")
            marked = [g for nb in sub.notebooks for g in nb.grades if g.needs_manual_grade and g.auto_score]
            todo = review(p.name[:2])
            assert all(exercise_of(g.name) in todo for g in marked), p.name
            assert all(g.score == 0 for g in marked), p.name
            waiting = sum(g.auto_score for g in marked)
            row = rows[p.stem, "solution"]
            assert float(row["points_waiting"]) == waiting, (p.name, row)
            automatic = sum(g.auto_score or 0 for nb in sub.notebooks for g in nb.grades)
            assert float(row["raw_score"]) == sub.score == automatic - waiting, (p.name, row, automatic)


def test_every_adversarial_submission_scores_zero_on_what_it_attacks(course):
    """Each attack scores 0 on the cells it is aimed at, with the static screen off unless the attack
    is one only the screen can see; where the kernel itself raised no error on an attacked cell, the
    attack got past the kernel and only the judge stopped it (that is reported, and must be most)."""
    root, paths = course
    tried = judged = 0
    for p in paths:
        source = nbformat.read(p, as_version=4)
        for i, attack in enumerate(chosen_attacks(p, source)):
            student = f"attack{i:02d}"
            got = scores(root, p.stem, p.stem, student)
            auto = {k: v for k, v in got.items() if v[2] == "code"}
            aimed = list(auto) if attack.attacked == ["*"] else attack.attacked
            assert set(aimed) <= set(auto), f"{p.name} {attack.name}: unknown cells {set(aimed) - set(auto)}"
            for cid in aimed:
                assert auto[cid][0] == 0, f"{p.name} {attack.name}: scores {auto[cid][0]}/{auto[cid][1]} on {cid}"
            for cid in attack.honest:
                assert auto[cid][0] == auto[cid][1], f"{p.name} {attack.name}: the honest part {cid} lost its points"
            if attack.scan and attack.kind >= 14:   # the allowlist, read outside the kernel: every check cell waits for a person
                marked = scores(root, p.stem, p.stem, student, review=True)
                assert all(v[3] for v in marked.values() if v[2] == "code"), (p.name, attack.name, marked)
            nb = autograded(root, p.stem, student, p.name)
            for cell in nb.cells:
                if grade_id(cell) in aimed and cell.cell_type == "code":
                    errors = [o for o in cell.outputs if o.output_type == "error"]
                    assert errors and errors[0].ename == "JudgeFailed", (p.name, attack.name, grade_id(cell))
                    judged += len(errors) == 1
            tried += 1
            print(f"{p.name} class {attack.kind}: {attack.name}: 0 on {len(aimed)} cells")
    print(f"{tried} adversarial submissions; {judged} attacked cells where the kernel showed no error")


def test_every_known_shortcut_scores_zero_on_the_hidden_tests(course):
    root, paths = course
    tried = 0
    for p in paths:
        shortcuts = SHORTCUTS.get(p.name[:2], {})
        if not shortcuts:
            continue
        got = scores(root, p.stem, p.stem, "shortcut")
        source = nbformat.read(p, as_version=4)
        for exercise in shortcuts:
            hidden = {grade_id(c) for c in source.cells if HIDDEN in c.source}
            checks = check_ids(source, exercise)
            assert checks and set(checks) <= hidden, f"{p.name} {exercise}: a check cell without a hidden check"
            for cid in checks:
                score, top, _ = got[cid]
                assert score == 0, f"{p.name} {exercise}: the shortcut scores {score}/{top} on {cid}"
            tried += 1
    assert tried == sum(len(SHORTCUTS.get(p.name[:2], {})) for p in paths)
