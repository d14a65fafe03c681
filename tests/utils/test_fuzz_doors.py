"""Issue 51: every public door of utils fuzzed from its declared contract (tests/utils/fuzz_doors.py).

For each door, hypothesis draws valid inputs (random sizes per letter, float32 / float64 / bfloat16, bf16 beside
fp32 weights under autocast, no_grad and inference_mode, strided and broadcast tensors, the course's masks): each
must be accepted and agree with its reference. From each it makes every slip of fuzz_doors.slips: each must get an
error naming the argument, unless the door lists it as deliberately accepted, with the reason. A fixed seed and a
small budget here (``FUZZ_EXAMPLES``, default 2 valid inputs per door); ``make test-fuzz`` runs a large one and
prints the per-door table."""

from __future__ import annotations

import os

import pytest

from fuzz_doors import NOT_YET, Tally, all_doors, findings, fuzz, fuzz_numbers

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "2"))
SEED = int(os.environ.get("FUZZ_SEED", "0"))

DOORS = [d.label for d in all_doors()]


@pytest.mark.parametrize("label", DOORS)
def test_a_door_accepts_valid_inputs_and_names_every_slip(label):
    tally: Tally = fuzz(EXAMPLES, SEED, only=label)[label]
    assert tally.valid >= EXAMPLES  # (a draw that hypothesis discards midway is counted too)
    assert not tally.refused, f"valid inputs refused: {tally.refused[:3]}"
    assert not tally.disagree, f"valid inputs that disagree with the reference: {tally.disagree[:3]}"
    assert not tally.silent, f"slips accepted without a word: {tally.silent[:5]}"
    obscure = [o for o in tally.obscure if (label, o[0]) not in NOT_YET]
    assert not obscure, f"slips whose error does not name the argument: {obscure[:5]}"


def test_the_numbers_of_the_other_public_functions_are_named():
    """NaN, inf, -1, 0, a fraction, a bool, None or a str for each number of the schedules, sizes and configs."""
    assert not findings(fuzz_numbers())


def test_the_fuzzer_covers_the_doors_of_the_issue():
    for label in ("attention.MultiHeadAttention", "attention.scaled_dot_product_attention", "gpt.GPT",
                  "transformer.Transformer", "rnn.Seq2Seq", "gpt.split_text", "transformer.beam_search"):
        assert label in DOORS
    assert len(DOORS) >= 40
