"""courseware.grading.hidden: the record format, the call detector, hidden_check's three modes and the judge."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import inspect
import types
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import utils.attention
import courseware.grading.hidden as grading
from courseware.grading.hidden import (CANARY_PYTHON, CANARY_TORCH, ForbiddenCall, Watch, check_log, forbidden_names,
                           from_bytes, hidden_check, judge_notebook, tamper_flags, to_bytes)

SDPA = [(F, "scaled_dot_product_attention"), utils.attention.scaled_dot_product_attention]


def test_the_record_format_round_trips_tensors_numbers_and_nesting():
    obj = {"out": torch.randn(2, 3, dtype=torch.float64), "mask": torch.tensor([True, False]),
           "losses": [1.5, 2.0, float("inf")], "n": 3, "big": 2 ** 70, "flags": [True, None, "text"],
           "state": {"W.weight": torch.arange(6.0).reshape(2, 3)}, "pair": (torch.ones(1), 4)}
    back = from_bytes(to_bytes(obj))
    assert back["out"].dtype == torch.float64 and torch.equal(back["out"], obj["out"])
    assert back["mask"].dtype == torch.bool and back["losses"] == [1.5, 2.0, float("inf")]
    assert back["n"] == 3 and isinstance(back["n"], int) and back["big"] == 2 ** 70
    assert back["flags"] == [True, None, "text"] and torch.equal(back["state"]["W.weight"], obj["state"]["W.weight"])
    assert isinstance(back["pair"], list) and back["pair"][1] == 4


def test_the_record_format_refuses_modules_and_other_objects_by_path():
    with pytest.raises(TypeError, match=r"got\.model: record the module's state_dict"):
        to_bytes({"model": nn.Linear(2, 2)})
    with pytest.raises(TypeError, match=r"got\[1\].*lambda|function"):
        to_bytes([1, lambda: 0])


def _log(fn):
    with Watch() as w:
        fn()
        canary = w.canary()
    return w.log[:len(w.log) - len(canary)], canary


q = torch.randn(1, 2, 4)
SDPA_NAMES = forbidden_names(SDPA)


_SDPA = inspect.unwrap(utils.attention.scaled_dot_product_attention)   # the function behind its contract's door


@pytest.mark.parametrize("call", [
    lambda: F.scaled_dot_product_attention(q, q, q),
    lambda: torch.ops.aten.scaled_dot_product_attention(q, q, q),
    lambda: torch._C._nn.scaled_dot_product_attention(q, q, q),
    lambda: torch.ops.aten.scaled_dot_product_attention.default(q, q, q),
    lambda: utils.attention.scaled_dot_product_attention(q, q, q),
    lambda: types.FunctionType(_SDPA.__code__, _SDPA.__globals__, "mine", _SDPA.__defaults__, _SDPA.__closure__)(q, q, q),
], ids=["F", "aten", "C", "aten-overload", "utils", "clone"])
def test_the_detector_sees_a_forbidden_call_under_any_name(call):
    log, canary = _log(call)
    with pytest.raises(ForbiddenCall, match="scaled_dot_product_attention"):
        check_log(log, canary, SDPA_NAMES)


def test_the_detector_sees_a_second_copy_of_a_utils_module():
    spec = importlib.util.spec_from_file_location("copy_of_attention", utils.attention.__file__)
    mine = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mine)
    log, canary = _log(lambda: mine.scaled_dot_product_attention(q, q, q))
    with pytest.raises(ForbiddenCall):
        check_log(log, canary, SDPA_NAMES)


def test_a_forbidden_class_covers_its_private_methods_and_copies_of_its_forward():
    layer = nn.TransformerEncoderLayer(8, 2, batch_first=True, dropout=0.0)
    x = torch.randn(1, 3, 8)
    names = forbidden_names([nn.TransformerEncoderLayer])
    for call in (lambda: layer(x), lambda: layer._sa_block(x, None, None), lambda: layer._ff_block(x)):
        log, canary = _log(call)
        with pytest.raises(ForbiddenCall):
            check_log(log, canary, names)

    class Mine(nn.Module):  # holds a copy of the forbidden forward
        forward = nn.TransformerEncoderLayer.forward
    log, canary = _log(lambda: Mine.forward(layer, x))
    with pytest.raises(ForbiddenCall):
        check_log(log, canary, names)


def test_an_honest_implementation_passes_and_the_canary_is_seen():
    log, canary = _log(lambda: (q @ q.transpose(-2, -1) / math.sqrt(4)).softmax(-1) @ q)
    check_log(log, canary, SDPA_NAMES)
    assert CANARY_TORCH in canary and CANARY_PYTHON in canary


def test_a_detector_switched_off_is_itself_a_failure():
    with pytest.raises(ForbiddenCall, match="switched off"):
        with Watch() as w:
            sys.setprofile(None)                      # what student code that found the watch could do
            w._mode.__exit__(None, None, None)
            canary = w.canary()
        check_log(w.log, canary, SDPA_NAMES)


@pytest.mark.parametrize("switch_off,lost", [
    (lambda w: sys.setprofile(None), CANARY_PYTHON),                # the C profiler's hook removed
    (lambda w: w._mode.__exit__(None, None, None), CANARY_TORCH),   # the torch function mode popped
], ids=["profile", "mode"])
def test_each_channel_switched_off_alone_loses_its_canary(switch_off, lost):
    with Watch() as w:
        switch_off(w)
        canary = w.canary()
    assert lost not in canary and len(canary) == 1
    with pytest.raises(ForbiddenCall, match="switched off"):
        check_log(w.log, canary, SDPA_NAMES)


def test_a_nested_watch_leaves_the_outer_one_armed_and_seeing_what_it_saw():
    with Watch() as outer:
        with Watch() as inner:
            utils.attention.scaled_dot_product_attention(q, q, q)
            inner_canary = inner.canary()
        outer_canary = outer.canary()
    for w, canary in ((inner, inner_canary), (outer, outer_canary)):
        assert canary == [CANARY_TORCH, CANARY_PYTHON]
        with pytest.raises(ForbiddenCall, match="scaled_dot_product_attention"):
            check_log(w.log[:len(w.log) - len(canary)], canary, SDPA_NAMES)


def test_the_python_hook_fallback_sees_calls_and_its_canary(monkeypatch):
    """Where cProfile cannot start (Python 3.12+ with another profiler active) a profile function is used."""
    import cProfile

    def refuse(self, *args, **kwargs):
        raise ValueError("Another profiling tool is already active")

    monkeypatch.setattr(cProfile.Profile, "enable", refuse)
    log, canary = _log(lambda: utils.attention.scaled_dot_product_attention(q, q, q))
    assert canary == [CANARY_TORCH, CANARY_PYTHON] and sys.getprofile() is None
    with pytest.raises(ForbiddenCall):
        check_log(log, canary, SDPA_NAMES)


def test_refuses_targets_it_cannot_recognise():
    with pytest.raises(TypeError, match="pairs, Python functions or classes"):
        forbidden_names([42])
    with pytest.raises(TypeError, match="not a function of utils, torch.nn or sacrebleu"):
        forbidden_names([lambda: 0])


def _check(got_fn, judge, monkeypatch, mode, tmp_path, forbid=()):
    inputs = lambda: {"x": torch.arange(4.0)}  # noqa: E731
    run = lambda x: {"y": got_fn(x["x"])}  # noqa: E731
    if mode == "record":
        monkeypatch.setenv(grading.RECORDS_ENV, str(tmp_path))
    hidden_check("ex9_check", inputs, run, judge, forbid=forbid)


def _judge_double(x, got):
    assert torch.equal(got["y"], 2 * x["x"]), "doubled"


def test_self_check_mode_raises_on_a_wrong_answer_and_passes_a_right_one(monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(grading.RECORDS_ENV, raising=False)
    monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
    _check(lambda t: 2 * t, _judge_double, monkeypatch, "self", tmp_path)
    assert "hidden tests passed" in capsys.readouterr().out
    with pytest.raises(AssertionError, match="doubled"):
        _check(lambda t: 3 * t, _judge_double, monkeypatch, "self", tmp_path)


def test_record_mode_compares_nothing_and_the_judge_decides(monkeypatch, tmp_path):
    monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
    _check(lambda t: 3 * t, _judge_double, monkeypatch, "record", tmp_path)   # wrong, but no error here
    assert (tmp_path / "ex9_check.safetensors").is_file()
    monkeypatch.delenv(grading.RECORDS_ENV)
    monkeypatch.setenv(grading.JUDGE_ENV, str(tmp_path))
    with pytest.raises(AssertionError, match="doubled"):
        hidden_check("ex9_check", lambda: {"x": torch.arange(4.0)}, None, _judge_double)
    (tmp_path / "ex9_check.safetensors").unlink()
    with pytest.raises(AssertionError, match="no record"):
        hidden_check("ex9_check", lambda: {"x": torch.arange(4.0)}, None, _judge_double)


def _notebook(answer: str, check_body: str):
    nb = nbformat.v4.new_notebook()
    grade = {"grade": True, "grade_id": "ex1_check", "points": 1, "solution": False, "locked": True}
    nb.cells = [
        nbformat.v4.new_markdown_cell("## Exercises"),
        nbformat.v4.new_code_cell("import torch"),
        nbformat.v4.new_code_cell(answer, metadata={"nbgrader": {"grade": False, "grade_id": "ex1", "solution": True}}),
        nbformat.v4.new_code_cell("# CHECK · 1 point\n_ = double(torch.ones(1))\n### BEGIN HIDDEN TESTS\n"
                                  + check_body + "\n### END HIDDEN TESTS", metadata={"nbgrader": grade}),
    ]
    return nb


CHECK = '''\
from courseware.grading import hidden_check
def inputs():
    return {"x": torch.arange(5.0)}
def run(x):
    return double(x["x"])
def judge(x, got):
    assert torch.equal(got, double(x["x"])), "the model answer doubles"
hidden_check("ex1_check", inputs, run, judge)'''


def test_the_judge_runs_the_source_and_decides_from_the_records(monkeypatch, tmp_path):
    """The judge process runs the trusted source (its model answer), never the student's code."""
    source = tmp_path / "source.ipynb"
    nbformat.write(_notebook("def double(t):\n    return 2 * t", CHECK), source)
    records = tmp_path / "records"
    records.mkdir()
    monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
    monkeypatch.setenv(grading.RECORDS_ENV, str(records))
    for student, verdict in ((lambda t: 2 * t, None), (lambda t: 2 * t + 1e-3, "the model answer doubles")):
        monkeypatch.setenv(grading.RECORDS_ENV, str(records))
        monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
        exec(CHECK, {"torch": torch, "double": student})   # what the student's kernel runs: record only
        got = judge_notebook(source, records)
        monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
        assert list(got) == ["ex1_check"]
        assert (got["ex1_check"] is None) if verdict is None else (verdict in got["ex1_check"])


def test_the_static_screen_names_what_reaches_for_the_kernel():
    assert tamper_flags("def f(model):\n    model.eval()\n    return train_retrieval(model)") == []
    assert tamper_flags("get_ipython().ast_transformers.append(x)") == ["get_ipython", "ast_transformers"]
    assert "torch._C" in tamper_flags("with torch._C.DisableTorchFunction(): pass")
    assert "eval(" in tamper_flags("y = eval('1')")


def _graded_cell(gid, outputs):
    cell = nbformat.v4.new_code_cell("# CHECK · 2 points", metadata={"nbgrader": {
        "grade": True, "grade_id": gid, "points": 2, "solution": False, "locked": True}})
    cell.outputs = [nbformat.from_dict(o) for o in outputs]
    return cell


def test_a_check_cell_scores_only_on_a_positive_verdict():
    """apply_verdicts, as nbgrader's own scoring (determine_grade) then reads the cells."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from nbgrader.utils import determine_grade
    from courseware.editions.nbgrader_course import apply_verdicts

    quiet = [{"output_type": "stream", "name": "stdout", "text": "ex_check: recorded for the judge\n"}]
    partial = [{"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": "0.5"}}]
    nb = nbformat.v4.new_notebook()
    nb.cells = [_graded_cell("a", quiet), _graded_cell("b", quiet), _graded_cell("c", partial), _graded_cell("d", quiet)]
    apply_verdicts(nb, {"a": None, "b": "AssertionError: output", "c": None})
    got = {c.metadata.nbgrader.grade_id: determine_grade(c)[0] for c in nb.cells}
    assert got == {"a": 2, "b": 0, "c": 2, "d": 0}           # d: no verdict at all; c: no partial credit read
    assert nb.cells[1].outputs[0].ename == "JudgeFailed" and "output" in nb.cells[1].outputs[0].evalue

    for verdicts, flags in (({"*": "the judge did not finish"}, None), ({"a": None}, {"ex1": ["get_ipython"]})):
        nb.cells = [_graded_cell("a", quiet)]
        apply_verdicts(nb, verdicts, flags)
        assert determine_grade(nb.cells[0])[0] == 0
    assert "flagged for review" in nb.cells[0].outputs[0].evalue and "get_ipython" in nb.cells[0].outputs[0].evalue


def test_the_judge_is_ready_before_the_kernel_and_ignores_later_changes_to_the_source(tmp_path):
    """JudgeProcess reads the source notebook when it starts (before the student's kernel, under
    autograde): a kernel that then rewrites the source file cannot make the judge lenient."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from courseware.editions.nbgrader_course import JudgeProcess

    source = tmp_path / "source.ipynb"
    nbformat.write(_notebook("def double(t):\n    return 2 * t", CHECK), source)
    judge = JudgeProcess(source)
    lenient = CHECK.replace('assert torch.equal(got, double(x["x"])), "the model answer doubles"', "pass")
    nbformat.write(_notebook("def double(t):\n    return 2 * t", lenient), source)   # what a kernel could do
    records = tmp_path / "records"
    records.mkdir()
    (records / "ex1_check.safetensors").write_bytes(to_bytes({"result": torch.zeros(5)}))   # a wrong answer
    verdicts = judge.decide(records, timeout=300)
    assert list(verdicts) == ["ex1_check"] and "the model answer doubles" in verdicts["ex1_check"]


def test_the_visible_forbid_names_the_call_lets_honest_code_through_and_keeps_the_blocks_error():
    from courseware.grading import forbid

    with pytest.raises(ForbiddenCall, match="functional.scaled_dot_product_attention"):
        with forbid(SDPA):
            F.scaled_dot_product_attention(q, q, q)
    with pytest.raises(ForbiddenCall, match="scaled_dot_product_attention"):
        with forbid(SDPA):
            utils.attention.scaled_dot_product_attention(q, q, q)
    with forbid(SDPA):
        (q @ q.transpose(-2, -1)).softmax(-1) @ q
    with pytest.raises(ZeroDivisionError):   # the block's own error comes first, not a detector message
        with forbid(SDPA):
            1 / 0
    assert sys.getprofile() is None


def test_code_reached_through_a_symbolic_link_is_recognised(tmp_path):
    """A virtual environment reached through a link names torch's files by the link, not their real path."""
    link = tmp_path / "linked_utils"
    link.symlink_to(Path(utils.attention.__file__).resolve().parent)
    code = compile("def scaled_dot_product_attention():\n    pass\n", str(link / "attention.py"), "exec")
    inner = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    assert grading._where(inner) == "utils/attention.py:scaled_dot_product_attention"


def test_a_judge_leaves_no_judge_mode_behind_for_what_the_process_starts_next(tmp_path, monkeypatch):
    """A judge used inside a longer-lived process (a test worker that then starts nbval kernels) must
    restore the environment: a kernel that inherits COURSE_GRADING_JUDGE judges instead of recording."""
    import nbformat

    monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
    monkeypatch.setenv(grading.RECORDS_ENV, str(tmp_path / "mine"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("## Exercises"),
                                         nbformat.v4.new_code_cell("x = 1")])
    judge = grading.Judge(nb)
    assert os.environ[grading.RECORDS_ENV] == str(tmp_path / "mine")
    judge.decide(tmp_path)
    assert grading.JUDGE_ENV not in os.environ


def test_the_judge_reads_only_regular_files_the_kernel_wrote_never_through_a_link(tmp_path):
    """The kernel writes the records folder, the judge reads it with the grader's rights: a link there
    must not open the gradebook, the grading secret or any host file (issue 48, item 5)."""
    import os

    from courseware.grading.hidden import MAX_RECORD_BYTES, read_record, record_path, to_bytes

    secret = tmp_path / "gradebook.db"
    secret.write_bytes(to_bytes({"result": torch.ones(2)}))   # even a file that would parse
    records = tmp_path / "records"
    records.mkdir()
    good = record_path(records, "ex1")
    good.write_bytes(to_bytes({"result": torch.arange(3)}))
    assert torch.equal(read_record(good)["result"], torch.arange(3))
    assert read_record(record_path(records, "missing")) is None
    os.symlink(secret, record_path(records, "link"))
    os.link(secret, record_path(records, "hard"))
    os.mkfifo(record_path(records, "fifo"))                  # would block a reader that waits for a writer
    big = record_path(records, "big")
    with open(big, "wb") as f:
        f.truncate(MAX_RECORD_BYTES + 1)
    for name in ("link", "hard", "fifo", "big"):
        with pytest.raises(AssertionError, match="record"):
            read_record(record_path(records, name))


# ---------------------------------------------------------------------------------------------
# Issue 48: the kernel holds nothing that decides or reveals a grade; the judge hands the inputs in.

def test_hidden_inputs_reach_the_kernel_as_the_judge_drew_them():
    """pack_inputs / unpack_inputs keep what a hidden block's inputs() returns to the bit: strides (a
    non-contiguous case stays one), dtypes, requires_grad, tuples, cases, ordered and non-str-keyed dicts, and
    nn.Modules made during the draw (class, arguments, state, training flags); same_inputs says where two differ."""
    from collections import OrderedDict

    from courseware.grading import cases
    from courseware.grading.hidden import made_with, pack_inputs, same_inputs, unpack_inputs

    g = torch.Generator().manual_seed(0)
    with made_with():
        layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True).double().eval()
        gru = nn.GRU(3, 5, batch_first=True)
    x = {"k": cases.layout(torch.randn(2, 3, 4, generator=g), "non-contiguous"),
         "t": cases.layout(torch.randn(3, 4, generator=g), "transposed in memory"),
         "w": torch.randn(3, generator=g).requires_grad_(), "ids": torch.tensor([1, 2]), "dtype": torch.float64,
         "pair": (1, 2.5), "none": None, "text": "a", "drawn": cases.vary(lambda g, n: torch.randn(n, generator=g),
                                                                         {"n": 3}, n={"one": 1}),
         "scripts": {(): {4: 0.4}, (4,): {3: 0.5}}, "state": OrderedDict(a=torch.ones(1)), "layer": layer, "gru": gru}
    got = unpack_inputs(pack_inputs(x))
    assert same_inputs(x, got) is None, same_inputs(x, got)
    assert not got["k"].is_contiguous() and got["k"].stride() == x["k"].stride() and got["w"].requires_grad
    assert isinstance(got["drawn"][0], cases.Case) and type(got["pair"]) is tuple and type(got["state"]) is OrderedDict
    assert got["layer"].linear1.weight.dtype == torch.float64 and not got["layer"].training
    with torch.no_grad():
        a, b = torch.randn(1, 3, 8, dtype=torch.float64), torch.randn(1, 4, 8, dtype=torch.float64)
        assert torch.equal(layer(a, b), got["layer"](a, b))
    # where two differ, it says so
    other = dict(x, k=x["k"].contiguous())
    assert "strides" in same_inputs(x, other)
    assert "values differ" in same_inputs(x, dict(x, ids=torch.tensor([1, 3])))
    with pytest.raises(TypeError, match="made outside"):
        pack_inputs({"m": nn.Linear(2, 2)})   # a module the draw did not see made: the kernel could not make it


BLOCK = '''\
from courseware.grading import hidden_check
SIZES = [3, 5]
DRAWN = torch.randn(2, generator=torch.Generator().manual_seed(5))   # drawn at the block's top level
REFERENCE_ONLY = "a value only the judge uses"
def reference(t):
    return 2 * t
def both(t):
    return double(t)
def inputs():
    g = torch.Generator().manual_seed(14)
    return {"x": torch.randn(4, generator=g), "d": DRAWN}
def run(x):
    return {"y": both(x["x"]), "n": SIZES}
def judge(x, got):
    assert torch.equal(got["y"], reference(x["x"])), REFERENCE_ONLY
hidden_check("ex1_check", inputs, run, judge)'''


def test_the_kernel_runs_run_and_its_helpers_only():
    from courseware.grading.hidden import kernel_block

    kept = kernel_block(BLOCK)
    assert "def run(" in kept and "def both(" in kept and "SIZES = [3, 5]" in kept
    assert kept.rstrip().endswith("record_run('ex1_check', run)")
    for judge_only in ("def inputs", "def judge", "def reference", "REFERENCE_ONLY", "manual_seed", "hidden_check(",
                       "DRAWN"):
        assert judge_only not in kept, judge_only
    with pytest.raises(ValueError, match="hidden_check"):
        kernel_block("def run(x):\n    return x")


def test_every_notebooks_hidden_inputs_are_handed_in_and_its_kernel_blocks_hold_no_judge(tmp_path, monkeypatch):
    """For every notebook: the judge draws every check's inputs and writes them for the kernel (each read back
    equal to what it drew), and what the kernel runs of each hidden block defines neither inputs nor judge."""
    from courseware.grading.hidden import INPUTS_DONE, hidden_block, inputs_path, kernel_block

    monkeypatch.setenv("COURSE_DATA_MIRROR", os.environ.get("COURSE_DATA_MIRROR", "/work/shared/data"))
    monkeypatch.setenv(grading.KEY_ENV, "ab" * 32)
    checked = 0
    for path in sorted((Path(__file__).resolve().parents[3] / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        monkeypatch.setenv("COURSE_GRADING_NOTEBOOK", path.name[:2])
        folder = tmp_path / path.name[:2]
        folder.mkdir()
        judge = grading.Judge(nb, inputs_dir=folder)
        assert judge.not_drawn == {}, (path.name, judge.not_drawn)
        assert (folder / INPUTS_DONE).is_file()
        for gid, code, _ in judge.checks:
            if code is None:
                continue
            assert inputs_path(folder, gid).is_file(), (path.name, gid)
            kept = kernel_block(code)
            assert "def judge(" not in kept and "def inputs(" not in kept, (path.name, gid)
            checked += 1
        assert all(hidden_block(c.source) is None or c.metadata.get("nbgrader", {}).get("grade")
                   for c in nb.cells if c.cell_type == "code")
    assert checked >= 50, checked


def test_the_kernel_records_on_the_judges_inputs_and_the_judge_decides(tmp_path, monkeypatch):
    """record_run reads the inputs the judge handed in (it never draws them) and writes what run returned; the
    judge compares that with its own reference on the same inputs."""
    from courseware.grading.hidden import INPUTS_ENV, kernel_block

    source = _notebook("def double(t):\n    return 2 * t", BLOCK)
    for student, verdict in ((lambda t: 2 * t, None), (lambda t: 2 * t + 1e-3, "a value only the judge uses")):
        inputs, records = tmp_path / "inputs", tmp_path / "records"
        for d in (inputs, records):
            d.mkdir(exist_ok=True)
            for f in d.iterdir():
                f.unlink()
        monkeypatch.delenv(grading.JUDGE_ENV, raising=False)
        monkeypatch.setenv(grading.KEY_ENV, "cd" * 32)
        judge = grading.Judge(source, inputs_dir=inputs)
        monkeypatch.delenv(grading.KEY_ENV)
        monkeypatch.setenv(grading.RECORDS_ENV, str(records))
        monkeypatch.setenv(INPUTS_ENV, str(inputs))
        exec(kernel_block(BLOCK), {"torch": torch, "double": student})   # what the student's kernel runs
        monkeypatch.delenv(grading.RECORDS_ENV)
        got = judge.decide(records)
        assert (got["ex1_check"] is None) if verdict is None else (verdict in got["ex1_check"]), got


def test_each_grading_run_draws_other_hidden_inputs_and_hands_them_in(tmp_path):
    """The judge process makes its own key for each run (autograde passes none): two runs on the same source
    hand in other inputs, neither the published ones."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from courseware.editions.nbgrader_course import JudgeProcess
    from courseware.grading.hidden import INPUTS_DONE, inputs_path, unpack_inputs

    source = tmp_path / "source.ipynb"
    nbformat.write(_notebook("def double(t):\n    return 2 * t", BLOCK), source)
    drawn = []
    for run in ("a", "b"):
        folder = tmp_path / run
        folder.mkdir()
        judge = JudgeProcess(source, inputs=folder)
        (tmp_path / f"records_{run}").mkdir()
        judge.decide(tmp_path / f"records_{run}", timeout=300)
        assert (folder / INPUTS_DONE).is_file()
        drawn.append(unpack_inputs(inputs_path(folder, "ex1_check").read_bytes()))
    published = {"x": torch.randn(4, generator=torch.Generator().manual_seed(14)),
                 "d": torch.randn(2, generator=torch.Generator().manual_seed(5))}
    for name in ("x", "d"):   # d: drawn at the block's top level, outside inputs(), keyed all the same
        assert not torch.equal(drawn[0][name], drawn[1][name]), name
        assert not torch.equal(drawn[0][name], published[name]) and not torch.equal(drawn[1][name], published[name])


def test_a_judge_that_dies_stops_the_kernel_waiting_for_its_inputs(tmp_path):
    """The kernel waits for each check's inputs while the judge prepares; a judge that dies first leaves the
    mark that ends the wait (INPUTS_DONE), so the kernel's check fails at once instead of at the cell timeout."""
    import time

    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from courseware.editions.nbgrader_course import JudgeProcess
    from courseware.grading.hidden import INPUTS_DONE, handed_inputs

    source = tmp_path / "source.ipynb"
    nbformat.write(_notebook("import time\ntime.sleep(600)\ndef double(t):\n    return 2 * t", BLOCK), source)
    folder = tmp_path / "inputs"
    folder.mkdir()
    judge = JudgeProcess(source, inputs=folder)
    time.sleep(1)
    assert not (folder / INPUTS_DONE).exists()   # still preparing (the model answer sleeps)
    judge.proc.kill()
    start = time.monotonic()
    with pytest.raises(RuntimeError, match="drew no inputs"):
        handed_inputs("ex1_check", str(folder), wait=60)
    assert time.monotonic() - start < 30
