"""courseware/measure/run_times.py: the per-notebook "will it run here" table is recorded from test logs, and the table in
README.md and site/index.md is the one runs/notebook_times.json gives."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from courseware.measure import run_times  # noqa: E402

LOG = """\
=========================== notebook execution times ===========================
   35.5 s  notebooks/01_tokens_and_embeddings.ipynb
  373.5 s  notebooks/03_additive_attention.ipynb
================= 1812 passed, 7 warnings in 840.72s (0:14:00) =================
"""


def test_parse_log_reads_the_conftest_section():
    assert run_times.parse_log("collected 3 items\n" + LOG) == {"01": 35.5, "03": 373.5}


def test_a_log_without_the_section_says_what_to_give():
    with pytest.raises(ValueError, match="notebook execution times"):
        run_times.parse_log("1812 passed")


def test_record_refuses_a_log_missing_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(run_times, "TIMES", tmp_path / "times.json")
    (tmp_path / "log").write_text(LOG)
    with pytest.raises(ValueError, match="no time for notebook"):
        run_times.record(tmp_path / "log", "cpu", None, None, None)
    assert not (tmp_path / "times.json").exists()  # nothing partial written
    with pytest.raises(ValueError, match="--as must be one of"):
        run_times.record(tmp_path / "log", "tpu", None, None, None)


def test_record_and_table_round_trip(tmp_path, monkeypatch):
    monkeypatch.setattr(run_times, "TIMES", tmp_path / "times.json")
    lines = "".join(f"  {10.0 * int(k):.1f} s  notebooks/{p.name}\n" for k, p in run_times.notebooks().items())
    (tmp_path / "log").write_text("notebook execution times\n" + lines)
    run_times.record(tmp_path / "log", "gpu", "test GPU", "2026-01-01", "abc1234")
    data = json.loads((tmp_path / "times.json").read_text())
    assert data["gpu"]["seconds"]["10"] == 100.0 and data["gpu"]["commit"] == "abc1234"
    text = run_times.table(data)
    assert "| 1.7 min |" in text and "not measured" in text  # 10: 100 s on the GPU; the CPU column empty
    assert "GPU, `make test`: test GPU, commit abc1234, 2026-01-01" in text


def test_full_change_comes_from_the_settings_cell():
    assert run_times.full_change(ROOT / "notebooks" / "09_gpt_language_model.ipynb").startswith("6 layers of 6 heads, 384 dimensions")
    assert run_times.full_change(ROOT / "notebooks" / "04_scaled_dot_product_attention.ipynb") == "— (no `FULL` switch)"


def test_committed_pages_hold_the_committed_table():
    assert run_times.TIMES.exists(), "runs/notebook_times.json is missing: record a `make test` log"
    data = json.loads(run_times.TIMES.read_text())
    assert set(data["cpu"]["seconds"]) == set(run_times.notebooks()), "a notebook has no recorded time"
    for page, prefix in run_times.PAGES.items():
        text = page.read_text()
        assert run_times.table(data, prefix) in text, (
            f"{page.relative_to(ROOT)}'s run-time table is stale: run `python -m courseware run-times write`")
