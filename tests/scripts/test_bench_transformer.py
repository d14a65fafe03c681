"""Smoke test of scripts/benchmarks/bench_transformer.py: it runs end to end on a tiny config, reports every
figure, and refuses to time models that do not compute the same thing. No timing thresholds here."""

import json
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.benchmarks import bench_transformer as bench  # noqa: E402

TINY = ["--config", "tiny", "--steps", "2", "--warmup", "1", "--batch", "4", "--gen-len", "5",
        "--gen-batch", "2", "--gen-repeats", "1", "--threads", "1", "--device", "cpu"]


def test_main_reports_every_figure(tmp_path, capsys):
    threads = torch.get_num_threads()
    out = tmp_path / "bench.json"
    res = bench.main(TINY + ["--json", str(out)])
    assert torch.get_num_threads() == threads  # main() restores the thread count it changed
    assert {"torch", "device", "threads", "config", "max_logit_diff", "train", "generation"} <= set(res)
    assert res["threads"] == 1 and res["device"] == "cpu" and res["max_logit_diff"] <= 1e-4
    train, gen = res["train"], res["generation"]
    assert {"ours_ms", "torch_ms", "ratio", "paired_ratio", "goal", "meets_goal"} <= set(train)
    assert train["ours_ms"] > 0 and train["torch_ms"] > 0
    assert train["ratio"] == pytest.approx(train["ours_ms"] / train["torch_ms"])
    assert {"cached_tok_s", "uncached_tok_s", "speedup", "identical_tokens"} <= set(gen)
    assert gen["identical_tokens"] and gen["tokens_per_sequence"] == 5
    assert gen["speedup"] == pytest.approx(gen["cached_tok_s"] / gen["uncached_tok_s"])
    assert json.loads(out.read_text()) == json.loads(json.dumps(res))
    printed = capsys.readouterr().out
    for text in ("torch 2", "threads 1", "same logits as nn.Transformer", "ms/step", "ratio ours/torch",
                 "tokens/s", "speed-up"):
        assert text in printed


def test_main_refuses_models_with_different_weights(monkeypatch):
    monkeypatch.setattr(bench, "load_from_torch", lambda model, ref: model)  # the stacks keep their own random weights
    with pytest.raises(RuntimeError, match="disagree"):
        bench.main(TINY)


@pytest.mark.parametrize("pre_norm", [False, True])
def test_reference_matches_ours_and_the_check_catches_a_change(pre_norm):
    torch.manual_seed(0)
    cfg = bench.TransformerConfig(**bench.CONFIGS["tiny"], pre_norm=pre_norm)
    ours, ref = bench.build_models(cfg, torch.device("cpu"))
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in ref.parameters())
    src, tgt = bench.random_batch(3, cfg, (2, 6), torch.Generator().manual_seed(0))
    assert (src == bench.PAD).any()  # the padding masks are exercised
    assert bench.check_same_outputs(ours, ref, src, tgt[:, :-1], atol=1e-5) <= 1e-5
    assert ours.training and ref.training  # back in training mode afterwards
    with torch.no_grad():
        ref.transformer.decoder.layers[0].linear2.bias[0] += 0.1
    with pytest.raises(RuntimeError, match="disagree"):
        bench.check_same_outputs(ours, ref, src, tgt[:, :-1], atol=1e-4)
