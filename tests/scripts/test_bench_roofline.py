"""scripts/benchmarks/bench_roofline.py (issue 54): the FLOPs it counts are exact, the pad positions are counted
apart, every part of a step is accounted for, and the table shows every figure. No timing thresholds."""
import pytest
import torch

from scripts.benchmarks import bench_roofline as bench
from utils.text import collate_pairs
from utils.transformer import Transformer, TransformerConfig, translation_loss


def test_a_linear_layer_step_counts_six_m_k_n():
    """forward 2·m·k·n, backward 2·m·k·n for the input's gradient and 2·m·k·n for the weight's."""
    m, k, n = 8, 16, 4
    layer, x = torch.nn.Linear(k, n), torch.randn(m, k, requires_grad=True)
    assert bench.counted_flops(lambda: layer(x).sum().backward()) == 6 * m * k * n


def tiny_transformer():
    torch.manual_seed(0)
    cfg = TransformerConfig(src_vocab=20, tgt_vocab=20, d_model=16, num_heads=2, d_ff=32, num_encoder_layers=1,
                            num_decoder_layers=1, dropout=0.0)
    return Transformer(cfg)


def test_pad_positions_are_counted_apart():
    model = tiny_transformer()
    even = collate_pairs([([5, 6, 7], [2, 8, 9, 3]), ([7, 6, 5], [2, 9, 8, 3])])
    padded, useful = bench.translation_useful_flops(model, even, translation_loss)
    assert padded == useful > 0                       # no pad: the batch's FLOPs are its pairs' FLOPs
    ragged = collate_pairs([([5, 6, 7, 8, 9, 10], [2, 8, 9, 10, 11, 12, 3]), ([7], [2, 9, 3])])
    padded, useful = bench.translation_useful_flops(model, ragged, translation_loss)
    assert 0 < useful < padded
    assert all(p.grad is None for p in model.parameters())   # counting leaves no gradient behind
    assert bench.translation_flops(model, ragged, translation_loss) == padded
    assert all(p.grad is None for p in model.parameters())


@pytest.mark.parametrize("name, part", [("aten::mm", "matmul"), ("aten::bmm", "matmul"),
                                        ("aten::_log_softmax_backward_data", "softmax and loss"),
                                        ("aten::nll_loss_forward", "softmax and loss"),
                                        ("aten::native_layer_norm_backward", "layer norm"),
                                        ("aten::embedding_dense_backward", "embedding"),
                                        ("Optimizer.step#Adam.step", "optimizer"), ("aten::_foreach_mul_", "optimizer"),
                                        ("aten::bernoulli_", "other operators"), ("aten::add", "other operators")])
def test_operators_fall_in_their_part(name, part):
    assert bench.part_of(name) == part


def test_every_part_of_a_step_is_accounted_for():
    model = tiny_transformer()
    opt = torch.optim.Adam(model.parameters())
    batch = collate_pairs([([5, 6, 7], [2, 8, 9, 3]), ([7, 6], [2, 9, 3])])

    def step():
        loss = translation_loss(model, batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    flops = bench.counted_flops(lambda: translation_loss(model, batch).backward())
    row = bench.roofline("toy", step, flops, flops, peak=10.0, steps=3, profile_steps=2)
    assert set(row["parts"]) == set(bench.PARTS) and all(v >= 0 for v in row["parts"].values())
    assert sum(row["parts"].values()) == pytest.approx(100, abs=0.5)
    assert row["parts"]["matmul"] > 0 and row["parts"]["optimizer"] > 0
    assert row["mfu"] == pytest.approx(100 * row["achieved_gflops"] / 10.0, abs=0.2)
    assert row["pad_share"] == 0 and len(row["top_other_operators"]) <= 5


def test_the_table_shows_every_recipe_and_rate():
    assert bench.matmul_rate(32, 32, 32, min_cpu_s=0.01) > 0
    parts = dict.fromkeys(bench.PARTS, 10.0)
    row = dict(recipe="toy", step_cpu_ms=1.0, counted_gflop=2.0, useful_gflop=1.0, pad_share=50.0,
               achieved_gflops=3.0, peak_gflops=9.0, mfu=33.3, parts=parts, profiled_step_wall_ms=2.0,
               top_other_operators=[["aten::add", 1.0]])
    runs = [dict(kernels=k, rates={"square 1024": 9.0}, recipes=[row]) for k in ("AVX2", "DEFAULT")]
    table = bench.markdown(runs)
    assert table.count("| toy |") == 2 and "| square 1024 | 9.0 | 9.0 |" in table and "33.3 %" in table


def test_the_levers_table_shows_each_lever_or_its_error():
    rows = [dict(lever="base", arm="nb08_nodrop", step_cpu_ms=200.0, first_step_cpu_s=0.3, vs_base=1.0),
            dict(lever="compiled", arm="nb08_nodrop", step_cpu_ms=150.0, first_step_cpu_s=9.5, vs_base=0.75),
            dict(lever="bf16", arm="nb08_nodrop", error="RuntimeError: no kernel")]
    table = bench.levers_markdown(rows)
    assert "| compiled | 150.0 | 0.75 | 9.50 |" in table and "failed: RuntimeError: no kernel" in table
    assert set(bench.LEVERS) >= {"08 as trained (nb08_nodrop)", "torch.compile", "bf16 autocast"}
    from scripts.benchmarks.bench_fast_translation import ARMS
    assert all(arm in ARMS for arm, *_ in bench.LEVERS.values())
    assert all(arm in ARMS for arm in bench.TRANSLATION_ARMS.values())
