"""No notebook assert may depend on how fast this computer happens to be (issue 55).

``courseware/measure/timing_asserts.py`` reads the notebooks' syntax trees and lists every assert whose
operands come from a measured time or memory; this test keeps that list (tests/timing_asserts.json) and
allows none of the forms that flake: one measured time against a fixed number, or a condition on every
single doubling's ratio. What remains (two arms of one cell, a fit over all lengths, counted bytes) has
its margins measured by ``make test-flaky`` (courseware/measure/flaky.py), whose instrumentation is
checked here too, without a kernel.
"""
import json
from pathlib import Path

import pytest

from courseware.measure import flaky
from courseware.measure.timing_asserts import FORBIDDEN_FORMS, scan_all, scan_cells

ROOT = Path(__file__).resolve().parents[3]
KEPT = ROOT / "tests" / "timing_asserts.json"


def _cells(*sources):
    return [{"cell_type": "code", "source": s, "id": f"c{i}"} for i, s in enumerate(sources)]


def _forms(*sources):
    return [(a.form, a.source) for a in scan_cells(_cells(*sources), "t.ipynb")]


def test_the_list_of_timing_asserts_is_kept():
    found = [{"notebook": a.notebook, "cell_id": a.cell_id, "source": a.source, "form": a.form}
             for a in scan_all()]
    kept = json.loads(KEPT.read_text(encoding="utf-8"))
    assert found == kept, (
        "the notebooks' timing asserts changed: check each new one against the rules in "
        "courseware/measure/timing_asserts.py, then rewrite the list with\n"
        "  python -m courseware timing-asserts --kept > tests/timing_asserts.json\n"
        f"found: {json.dumps(found, indent=1, ensure_ascii=False)}")


def test_no_notebook_assert_compares_a_time_with_a_fixed_bound():
    bad = [f"{a.notebook} cell {a.cell}: {a.source} ({a.form})" for a in scan_all() if a.form in FORBIDDEN_FORMS]
    assert not bad, "asserts that flake with load, kernels or caches:\n" + "\n".join(bad)


# -- the scanner finds what it must -----------------------------------------------------------------------------

@pytest.mark.parametrize("sources, form", [
    (["import time\nt0 = time.perf_counter()\nf()\ndt = time.perf_counter() - t0\nassert dt < 0.5"],
     "time vs bound"),
    (["from time import process_time as clock\nc = clock()\nf()\nassert clock() - c < 2"], "time vs bound"),
    (["import time as T\nstart = T.time()\n", "elapsed = T.time() - start\n", "assert elapsed < 60"],
     "time vs bound"),
    (["hist = fit(m, loss, batches, opt)\nassert hist.seconds < 30"], "time vs bound"),
    (["out = train_gpt(m, data, steps=10)\nassert out['cpu_seconds'] < 5"], "time vs bound"),
    # a function of the notebook's own that times its argument
    (["import time\ndef best(fn, n=3):\n    ts = []\n    for _ in range(n):\n        t0 = time.perf_counter()\n"
      "        fn()\n        ts.append(time.perf_counter() - t0)\n    return min(ts)\n",
      "a = best(f)\nb = best(g)\nassert a < b\nassert a < 0.01"], "time vs bound"),
    # every doubling's ratio against fixed bounds: the flake of issue 55
    (["import time\nt = []\nfor T in (1, 2, 4):\n    t0 = time.process_time()\n    f(T)\n"
      "    t.append(time.process_time() - t0)\ngrowth = [t[i + 1] / t[i] for i in range(2)]\n"
      "assert all(1.5 < g < 2.7 for g in growth)"], "per-step ratios"),
    (["import time\nruns = {(n, T): [] for n in 'ab' for T in (1, 2)}\nfor n, T in runs:\n"
      "    t0 = time.process_time()\n    runs[n, T].append(time.process_time() - t0)\n"
      "timing = {n: [float(np.median(runs[n, T])) for T in (1, 2)] for n in 'ab'}\n"
      "g = {n: [t[i + 1] / t[i] for i in range(1)] for n, t in timing.items()}\n"
      "assert all(g_ > 2 for g_ in g['a'])"], "per-step ratios"),
    (["records = []\nfor s in range(3):\n    h = fit(m, l, b, o)\n    records.append(dict(loss=h.loss, seconds=h.seconds))\n"
      "assert all(r['seconds'] < 9 for r in records)"], "time vs bound"),
    # what is allowed, and named so
    (["import time\nt0 = time.perf_counter(); f(); a = time.perf_counter() - t0\n"
      "t0 = time.perf_counter(); g(); b = time.perf_counter() - t0\nassert a > 2 * b"], "two arms"),
    (["import time\nts = []\nfor T in (1, 2, 4):\n    t0 = time.thread_time(); f(T)\n"
      "    ts.append(time.thread_time() - t0)\nk = np.polyfit(np.log([1, 2, 4]), np.log(ts), 1)[0]\nassert k > 1.5"],
     "fit"),
    (["from utils.scale import peak_memory\nm = [peak_memory(f)[1] for f in fs]\nassert m[1] < m[0] / 5"], "bytes"),
])
def test_the_scanner_finds_a_timing_assert(sources, form):
    found = _forms(*sources)
    assert found and form in [f for f, _ in found], found


@pytest.mark.parametrize("sources", [
    # the outputs of two timed arms, compared: not a time
    ["import time\nouts, secs = {}, {}\nfor c in (True, False):\n    t0 = time.perf_counter()\n"
     "    outs[c] = decode(c)\n    secs[c] = time.perf_counter() - t0\nassert outs[True] == outs[False]"],
    # the other fields of a record that holds a time
    ["runs = []\nfor s in range(3):\n    h = fit(m, l, b, o)\n    runs.append(dict(loss=h.loss, seconds=h.seconds))\n"
     "assert all(r['loss'] < 1 for r in runs)"],
    # a time recorded in a saved run is fixed: it cannot flake
    ["r = load_run_results('attention')\nassert r['seconds'] > 10 * r['epochs']"],
    # counted work
    ["from torch.utils.flop_counter import FlopCounterMode\nwith FlopCounterMode(display=False) as c:\n    f()\n"
     "assert c.get_total_flops() > 10"],
])
def test_the_scanner_leaves_other_asserts_alone(sources):
    assert _forms(*sources) == []


# -- make test-flaky's instrumentation --------------------------------------------------------------------------

def test_the_instrumented_notebook_records_margins_and_failures(tmp_path, monkeypatch):
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": _cells(
        "import time\nt0 = time.perf_counter(); a = 10.0 + 0 * (time.perf_counter() - t0)\n"
        "t0 = time.perf_counter(); b = 2.0 + 0 * (time.perf_counter() - t0)\n"
        "assert a > 2 * b\n"
        "if True:\n    assert b < a\n",
        "import numpy as np\nts = [1.0 + 0 * time.perf_counter(), 2.0, 4.0]\n"
        "k = np.polyfit(np.log([1, 2, 4]), np.log(ts), 1)[0]\nassert 0.5 < k < 1.5, 'slope'\n"
        "assert k > 3  # fails: recorded, not raised\n"
        "x = 1\nassert x == 1\n")}
    path = tmp_path / "t.ipynb"
    path.write_text(json.dumps(nb))
    instrumented, found = flaky.instrument(path)
    assert len(found) == 4
    log = tmp_path / "records.jsonl"
    monkeypatch.setenv(flaky.RECORDS_ENV, str(log))
    namespace = {}
    for cell in instrumented["cells"]:
        exec(cell["source"], namespace)                           # noqa: S102 - the test's own cells
    records = [json.loads(line) for line in log.read_text().splitlines()]
    margins = {r["key"]: (r["ok"], r["margin"]) for r in records}
    assert margins == {
        "t. cell 0 line 4": (True, pytest.approx(2.5)),
        "t. cell 0 line 6": (True, pytest.approx(5.0)),
        "t. cell 1 line 4": (True, pytest.approx(1.5)),
        "t. cell 1 line 5": (False, pytest.approx(1 / 3)),
    }
