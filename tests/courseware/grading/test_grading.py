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
    with pytest.raises(TypeError, match="not a function of utils or torch.nn"):
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
