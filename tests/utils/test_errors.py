"""Issue 30: every slip a learner makes with the public API gets an error that names it.

Property tests over the entry points: the mask convention (each mask the course builds is accepted,
its inverse, nn.MultiheadAttention's True = blocked convention, is refused at every entry point that
takes a mask), wrong Python types (named in the message), workflow slips and degenerate sizes.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from utils import checks
from utils.attention import (AdditiveAttention, MultiHeadAttention, causal_mask, combine_masks, key_padding_mask,
                             scaled_dot_product_attention)
from utils.gpt import GPT, GPTConfig, generate, get_batch
from utils.rnn import Seq2Seq
from utils.rnn import beam_search as rnn_beam
from utils.rnn import greedy_decode as rnn_greedy
from utils.scale import GroupedQueryAttention, block_attention
from utils.schedule import transformer_adam
from utils.text import Vocab
from utils.training import fit
from utils.transformer import (EncoderTagger, Transformer, TransformerConfig, beam_search, greedy_decode,
                               make_decode_fn)
from utils.translation import translate

D, H = 8, 2
CONVENTION = r"True = may attend"


def right_padded(lengths: list[int], T: int, V: int = 20, seed: int = 0) -> torch.Tensor:
    """(B, T) ids, right-padded with 0, the first sentence unpadded (as pad_sequences pads to the longest)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, V, (len(lengths), T), generator=g)
    return ids.masked_fill(torch.arange(T)[None] >= torch.tensor(lengths)[:, None], 0)


def entry_points():
    """(name, call(mask, ids)) for every public entry point that takes an attention mask over (B, T, T)."""
    torch.manual_seed(0)
    mha, add = MultiHeadAttention(D, H), AdditiveAttention(D, D, 4)
    gqa = GroupedQueryAttention(D, H, 1)
    cfg = TransformerConfig(20, 20, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1, num_decoder_layers=1,
                            dropout=0.0, max_len=32)
    tf, tagger = Transformer(cfg), EncoderTagger(cfg)

    def x_of(ids):
        return torch.randn(ids.shape[0], ids.shape[1], D)

    def heads(ids):
        return torch.randn(ids.shape[0], H, ids.shape[1], D)

    return {
        "scaled_dot_product_attention": lambda m, ids: scaled_dot_product_attention(*(heads(ids),) * 3, m),
        "AdditiveAttention": lambda m, ids: add(*(heads(ids),) * 3, m),
        "MultiHeadAttention": lambda m, ids: mha(*(x_of(ids),) * 3, m),
        "MultiHeadAttention(need_weights=False)": lambda m, ids: mha(*(x_of(ids),) * 3, m, need_weights=False),
        "block_attention": lambda m, ids: block_attention(*(heads(ids),) * 3, m, block_size=2),
        "GroupedQueryAttention": lambda m, ids: gqa(x_of(ids), m),
        "Transformer.encode": lambda m, ids: tf.encode(ids, m),
        "EncoderTagger": lambda m, ids: tagger(ids, m),
    }


ENTRY = entry_points()
ENCODER_ONLY = {"Transformer.encode", "EncoderTagger"}  # their masks are source padding (B, 1, 1, S)


@settings(max_examples=25, deadline=None)
@given(lengths=st.lists(st.integers(1, 7), min_size=1, max_size=4), extra=st.integers(0, 3),
       kind=st.sampled_from(["padding", "causal", "both"]), entry=st.sampled_from(sorted(ENTRY)),
       seed=st.integers(0, 1000))
def test_each_mask_accepted_and_its_inverse_refused(lengths, extra, kind, entry, seed):
    T = max(lengths) + extra
    lengths = [T] + lengths  # the longest sentence has no padding
    ids = right_padded(lengths, T, seed=seed)
    if entry in ENCODER_ONLY:
        kind = "padding"
    if T == 1 and kind != "padding":
        kind = "padding"
    ours = {"padding": key_padding_mask(ids), "causal": causal_mask(T),
            "both": combine_masks(key_padding_mask(ids), causal_mask(T))}[kind]
    if ours.dim() == 2:
        ours = ours[None, None]  # a pattern shared by the batch, unambiguous for any B
    ENTRY[entry](ours, ids)  # the course's convention: accepted
    with pytest.raises(ValueError, match=CONVENTION) as e:
        ENTRY[entry](~ours, ids)  # nn.MultiheadAttention's convention (True = blocked): refused
    assert "~causal_mask" in str(e.value) and "ids == pad" in str(e.value)  # says which slips it means


@pytest.mark.parametrize("entry", sorted(ENTRY))
@pytest.mark.parametrize("T", [1, 2, 5])
def test_the_learners_spellings_of_the_other_convention(entry, T):
    """~causal_mask(T) and ids == pad, written as a learner writes them for nn.MultiheadAttention."""
    ids = right_padded([T, max(1, T - 1)], T)
    inverted = [(ids == 0)[:, None, None, :]]
    if entry not in ENCODER_ONLY:
        inverted.append(~causal_mask(T))
        inverted.append(~causal_mask(T)[None, None] | (ids == 0)[:, None, None, :])  # nn.MHA's combined mask
    for m in inverted:
        if m.dim() == 2 and ids.shape[0] == T:
            m = m[None, None]
        with pytest.raises(ValueError, match=CONVENTION):
            ENTRY[entry](m, ids)


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 6), min_size=1, max_size=4), seed=st.integers(0, 100))
def test_key_padding_mask_refuses_ids_eq_pad(lengths, seed):
    T = max(lengths)
    ids = right_padded(lengths, T, seed=seed)
    assert torch.equal(key_padding_mask(ids != 0), key_padding_mask(ids))
    with pytest.raises(ValueError, match=r"ids == pad.*ids != pad"):
        key_padding_mask(ids == 0)


def test_masks_the_course_builds_elsewhere_are_accepted():
    """Decoding steps (one query over a cache) and cross-attention with Tq > Tk keep working."""
    q = torch.randn(2, H, 1, D)
    kv = torch.randn(2, H, 6, D)
    scaled_dot_product_attention(q, kv, kv, causal_mask(1, 6))
    q = torch.randn(2, H, 9, D)  # 9 target positions over 6 source tokens
    kv = torch.randn(2, H, 6, D)
    scaled_dot_product_attention(q, kv, kv, key_padding_mask(right_padded([6, 3], 6)))
    m = torch.ones(3, 3, dtype=torch.bool)
    m[1] = False  # one fully masked row is still a documented result (zeros), not an error
    out, w = scaled_dot_product_attention(*(torch.randn(1, 3, 4),) * 3, m)
    assert (w[0, 1] == 0).all()


# --------------------------------------------------------------------------- wrong types at the door

BAD = {"None": None, "list": [[4, 5, 6]], "ndarray": np.array([[4, 5, 6]]), "str": "ein hund", "float": 1.5}


def _tiny_transformer():
    cfg = TransformerConfig(20, 20, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1, num_decoder_layers=1,
                            dropout=0.0, max_len=32)
    return Transformer(cfg)


def _tiny_gpt():
    return GPT(GPTConfig(vocab_size=20, block_size=16, n_layer=1, n_head=H, d_model=D))


def tensor_args():
    """(entry point, argument name, call(bad)) for the tensor arguments of the public API."""
    torch.manual_seed(0)
    x = torch.randn(2, 3, D)
    ids = torch.tensor([[4, 5, 6], [7, 8, 0]])
    tf, gpt, mha = _tiny_transformer(), _tiny_gpt(), MultiHeadAttention(D, H)
    rnn = Seq2Seq(20, 20, 8, 8, 8)
    mask = ids != 0
    return [
        ("sdpa", "q", lambda b: scaled_dot_product_attention(b, x, x)),
        ("sdpa", "k", lambda b: scaled_dot_product_attention(x, b, x)),
        ("sdpa", "v", lambda b: scaled_dot_product_attention(x, x, b)),
        ("sdpa", "mask", lambda b: scaled_dot_product_attention(x, x, x, b)),
        ("MultiHeadAttention", "query", lambda b: mha(b, x, x)),
        ("MultiHeadAttention", "key", lambda b: mha(x, b, x)),
        ("block_attention", "q", lambda b: block_attention(b, x, x)),
        ("key_padding_mask", "ids_or_bool", lambda b: key_padding_mask(b)),
        ("Transformer", "src", lambda b: tf(b, ids)),
        ("Transformer", "tgt_in", lambda b: tf(ids, b)),
        ("greedy_decode", "src", lambda b: greedy_decode(tf, b, 5, 2, 3)),
        ("GPT", "idx", lambda b: gpt(b)),
        ("generate", "idx", lambda b: generate(gpt, b, 2)),
        ("get_batch", "data", lambda b: get_batch(b, 4, 2)),
        ("rnn.greedy_decode", "src", lambda b: rnn_greedy(rnn, b, mask)),
        ("rnn.greedy_decode", "src_mask", lambda b: rnn_greedy(rnn, ids, b)),
    ]


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("entry,arg,call", tensor_args(), ids=lambda v: v if isinstance(v, str) else "")
def test_non_tensors_are_named(entry, arg, call, bad):
    if arg == "mask" and bad == "None":
        return  # no mask is a valid call
    with pytest.raises(TypeError, match=rf"\b{arg}\b.*must be a torch\.Tensor.*got") as e:
        call(BAD[bad])
    hint = {"list": "torch.tensor", "ndarray": "torch.from_numpy", "None": "None"}.get(bad)
    if hint:
        assert hint in str(e.value)


def int_args():
    """(entry point, argument name, call(value)) for the whole-number arguments."""
    tf, gpt = _tiny_transformer(), _tiny_gpt()
    rnn = Seq2Seq(20, 20, 8, 8, 8)
    src = torch.tensor([[4, 5, 6]])
    return [
        ("causal_mask", "T_q", lambda n: causal_mask(n)),
        ("greedy_decode", "max_len", lambda n: greedy_decode(tf, src, n, 2, 3)),
        ("beam_search", "max_len", lambda n: beam_search(tf, src, 2, n, 2, 3)),
        ("beam_search", "beam_size", lambda n: beam_search(tf, src, n, 5, 2, 3)),
        ("make_decode_fn", "beam_size", lambda n: make_decode_fn(tf, "beam", beam_size=n)),
        ("rnn.greedy_decode", "max_len", lambda n: rnn_greedy(rnn, src, src != 0, n)),
        ("rnn.beam_search", "beam_size", lambda n: rnn_beam(rnn, src, src != 0, n)),
        ("generate", "max_new_tokens", lambda n: generate(gpt, src, n)),
        ("generate", "top_k", lambda n: generate(gpt, src, 2, top_k=n)),
        ("get_batch", "block_size", lambda n: get_batch(torch.arange(50) % 20, n, 2)),
        ("block_attention", "block_size", lambda n: block_attention(*(torch.randn(1, 3, 4),) * 3, block_size=n)),
        ("TransformerConfig", "num_encoder_layers", lambda n: TransformerConfig(20, 20, num_encoder_layers=n)),
    ]


@pytest.mark.parametrize("value", [1.5 * 3, 2.5, "3", None, True])
@pytest.mark.parametrize("entry,arg,call", int_args(), ids=lambda v: v if isinstance(v, str) else "")
def test_non_integers_are_named(entry, arg, call, value):
    if value is None and arg in ("top_k",) or value is None and entry.startswith("rnn") and arg == "max_len":
        return  # None is documented there: no top-k filter, the default length
    with pytest.raises(TypeError, match=rf"^{arg} must be an int") as e:
        call(value)
    if isinstance(value, float):
        assert "round it" in str(e.value)


@pytest.mark.parametrize("entry,arg,call", int_args(), ids=lambda v: v if isinstance(v, str) else "")
def test_whole_numbers_of_other_types_are_accepted(entry, arg, call):
    call(2), call(np.int64(2)), call(torch.tensor(2))


@pytest.mark.parametrize("arg,value", [("num_encoder_layers", -1), ("num_decoder_layers", -2), ("d_model", 0),
                                       ("pad_id", 20), ("pad_id", -1), ("dropout", 1.0)])
def test_degenerate_sizes_are_refused(arg, value):
    with pytest.raises(ValueError, match=arg):
        TransformerConfig(20, 20, **{"d_model": 8, "num_heads": 2, arg: value})


# --------------------------------------------------------------------------- workflow slips


def _loader(n=3):
    g = torch.Generator().manual_seed(0)
    return [torch.randn(4, 3, generator=g) for _ in range(n)]


def _loss(model, x):
    return model(x).pow(2).mean()


def test_fit_refuses_an_optimizer_of_another_model():
    old = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(old.parameters(), lr=0.1)
    new = torch.nn.Linear(3, 1)  # a re-run cell built the model again
    with pytest.raises(ValueError, match="none of this model's parameters.*another model"):
        fit(new, _loss, _loader(), opt, progress=False)
    before = new.weight.detach().clone()
    fit(new, _loss, _loader(), torch.optim.SGD(new.parameters(), lr=0.1), progress=False)
    assert not torch.equal(before, new.weight)  # the right optimizer does train


def test_fit_refuses_an_optimizer_scheduler_pair():
    model = torch.nn.Linear(8, 1)
    pair = transformer_adam(model.parameters(), d_model=8, warmup=4)
    with pytest.raises(TypeError, match=r"tuple.*unpack it.*scheduler=sched"):
        fit(model, lambda m, x: m(x).mean(), [torch.randn(2, 8)], pair, progress=False)
    with pytest.raises(TypeError, match="optimizer must be a torch.optim.Optimizer"):
        fit(model, lambda m, x: m(x).mean(), [torch.randn(2, 8)], None, progress=False)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_nan_in_the_data_at_the_first_step_is_not_blamed_on_the_learning_rate(bad):
    model = torch.nn.Linear(3, 1)
    data = _loader()
    data[0][1, 2] = bad
    with pytest.raises(FloatingPointError, match="first step, before any update.*not the cause.*check the batch"):
        fit(model, _loss, data, torch.optim.SGD(model.parameters(), lr=0.1), progress=False)
    data = _loader()
    data[1][0, 0] = bad  # later: an update happened, the learning rate is one suspect
    with pytest.raises(FloatingPointError, match="lower the learning rate"):
        fit(model, _loss, data, torch.optim.SGD(model.parameters(), lr=0.1), progress=False)


@pytest.mark.parametrize("i", [0, 5, 10_000])
def test_vocab_refuses_an_int(i):
    vocab = Vocab.build([["ein", "hund"]])
    assert vocab["hund"] == vocab.itos.index("hund") and vocab["katze"] == vocab.unk_id
    with pytest.raises(TypeError, match=rf"vocab\[\.\.\.\] looks up a token.*vocab\.itos\[{i}\]"):
        vocab[i]


def test_translate_refuses_a_model_for_decode_fn():
    tf = _tiny_transformer()
    with pytest.raises(TypeError, match=r"decode_fn must be a function.*make_decode_fn\(model\)"):
        translate(tf, None)
    with pytest.raises(TypeError, match="utils.rnn's greedy_decode"):
        greedy_decode(Seq2Seq(20, 20, 8, 8, 8), torch.tensor([[4, 5]]), 3, 2, 3)


@pytest.mark.parametrize("use", ["greedy", "beam"])
@pytest.mark.parametrize("training", [True, False])
def test_transformer_decoders_restore_the_mode(use, training):
    tf = _tiny_transformer().train(training)
    src = torch.tensor([[4, 5, 6]])
    greedy_decode(tf, src, 3, 2, 3) if use == "greedy" else beam_search(tf, src, 2, 3, 2, 3)
    assert tf.training == training and all(m.training == training for m in tf.modules())


def test_targets_outside_the_vocabulary_are_named():
    gpt = _tiny_gpt()
    idx = torch.tensor([[1, 2, 3]])
    with pytest.raises(ValueError, match="targets: id 20 is outside the vocabulary of size 20"):
        gpt(idx, torch.tensor([[1, 2, 20]]))


def test_devices_are_compared_and_named():
    tf = _tiny_transformer()
    meta = torch.tensor([[4, 5, 6]], device="meta")
    with pytest.raises(ValueError, match=r"src is on meta but the model's weights are on cpu.*src\.to\('cpu'\)"):
        tf(meta, torch.tensor([[2, 4]]))
    mha = MultiHeadAttention(D, H)
    with pytest.raises(ValueError, match=r"query is on meta"):
        mha(*(torch.randn(1, 3, D, device="meta"),) * 3)
    x = torch.randn(1, 3, D)
    with pytest.raises(ValueError, match=r"mask is on meta but q is on cpu.*mask\.to\(.cpu.\)"):
        scaled_dot_product_attention(x, x, x, torch.ones(3, 3, dtype=torch.bool, device="meta"))


def test_the_helpers_refuse_what_they_document():
    assert checks.integer(np.int32(3), "n") == 3 and checks.integer(torch.tensor(4), "n") == 4
    for bad in (3.0, True, None, "3", torch.tensor(2.0)):
        with pytest.raises(TypeError, match="n must be an int"):
            checks.integer(bad, "n")
    with pytest.raises(ValueError, match="n must be >= 1, got 0"):
        checks.integer(0, "n", minimum=1)
    with pytest.raises(ValueError, match=r"x must be .*\(3 dims\), got shape \(2, 4\).*x\[None\]"):
        checks.tensor(torch.zeros(2, 4), "x", "(B, T, D)", dims=3)
    with pytest.raises(TypeError, match="must hold integer token ids, got a tensor of dtype torch.float32"):
        checks.tensor(torch.zeros(2), "ids", kind="ids")


# --------------------------------------------------------------------------- one rule for token ids: any integer dtype

INT_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8]


def id_entry_points():
    """(entry point, argument name, call(ids)) for every public entry point that takes token ids;
    ``ids`` is a (2, 4) batch, right-padded, with ids < 20."""
    from utils.embeddings import CBOW
    from utils.gpt import sampling_distribution  # noqa: F401  (imported for the module under test)
    from utils.rnn import Encoder, seq2seq_loss
    from utils.text import PairBatch, padding_mask
    from utils.transformer import translation_loss

    torch.manual_seed(0)
    tf, gpt = _tiny_transformer().eval(), _tiny_gpt().eval()
    tagger = EncoderTagger(tf.cfg).eval()
    rnn = Seq2Seq(20, 20, 8, 8, 8, attention="additive").eval()
    enc, cbow = Encoder(20, 8, 8).eval(), CBOW(20, 8)
    long = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0]])

    def batch(ids):
        mask = long != 0
        return PairBatch(ids, mask.sum(1), mask, ids, mask.sum(1), mask)

    return [
        ("Transformer", "src", lambda i: tf(i, long)),
        ("Transformer", "tgt_in", lambda i: tf(long, i)),
        ("Transformer.encode", "src", lambda i: tf.encode(i)),
        ("Transformer.decode", "tgt", lambda i: tf.decode(i, tf.encode(long), tf.src_mask(long))),
        ("transformer.greedy_decode", "src", lambda i: greedy_decode(tf, i, 3, 2, 3)),
        ("transformer.beam_search", "src", lambda i: beam_search(tf, i, 2, 3, 2, 3)),
        ("translation_loss", "batch.tgt", lambda i: translation_loss(tf, batch(i))),
        ("EncoderTagger", "src", lambda i: tagger(i)),
        ("GPT", "idx", lambda i: gpt(i)),
        ("GPT", "targets", lambda i: gpt(long, i)),
        ("generate", "idx", lambda i: generate(gpt, i, 2, temperature=0)),
        ("get_batch", "data", lambda i: gpt(*get_batch(i.flatten(), 3, 2, torch.Generator().manual_seed(0)))),
        ("rnn.Encoder", "src", lambda i: enc(i, long != 0)),
        ("Seq2Seq", "src", lambda i: rnn(i, long != 0, long)),
        ("Seq2Seq", "tgt_in", lambda i: rnn(long, long != 0, i)),
        ("rnn.greedy_decode", "src", lambda i: rnn_greedy(rnn, i, long != 0, 3)),
        ("rnn.beam_search", "src", lambda i: rnn_beam(rnn, i, long != 0, 2, 3)),
        ("seq2seq_loss", "batch.tgt", lambda i: seq2seq_loss(rnn, batch(i))),
        ("CBOW", "context", lambda i: cbow(i)),
        ("padding_mask", "ids", lambda i: padding_mask(i)),
        ("key_padding_mask", "ids_or_bool", lambda i: key_padding_mask(i)),
    ]


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return torch.equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("entry,arg,call", id_entry_points(), ids=lambda v: v if isinstance(v, str) else "")
def test_any_integer_dtype_of_ids_gives_the_long_result_everywhere(entry, arg, call):
    """The one rule: token ids of any integer dtype (int32 from NumPy, uint8, ...) are the same ids."""
    long = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0]])
    with torch.no_grad():
        want = call(long)
        for dtype in INT_DTYPES[1:]:
            torch.manual_seed(0)
            assert _same(call(long.to(dtype)), want), (entry, dtype)


@pytest.mark.parametrize("bad", [torch.float32, torch.bool])
@pytest.mark.parametrize("entry,arg,call", id_entry_points(), ids=lambda v: v if isinstance(v, str) else "")
def test_ids_that_are_not_whole_numbers_are_refused_by_name(entry, arg, call, bad):
    long = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0]])
    if entry == "key_padding_mask":
        if bad == torch.float32:  # a bool mask is its other documented input
            with pytest.raises(TypeError, match=r"ids_or_bool must hold integer token ids or bool values.*float32"):
                call(long.to(bad))
        return
    with pytest.raises(TypeError, match=rf"{arg.split('.')[-1]}\b.*must hold integer token ids, got a tensor of dtype {bad}"):
        call(long.to(bad))


# --------------------------------------------------------------------------- one rule for temperature=0: greedy


@settings(max_examples=25, deadline=None)
@given(V=st.integers(2, 30), B=st.integers(1, 4), top_k=st.sampled_from([None, 1, 3]), seed=st.integers(0, 1000))
def test_temperature_zero_is_greedy_in_every_entry_point(V, B, top_k, seed):
    from utils.gpt import sampling_distribution

    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(B, V, generator=g)
    p = sampling_distribution(logits, 0, top_k)
    assert torch.equal(p, torch.nn.functional.one_hot(logits.argmax(-1), V).float())  # all on the argmax
    assert torch.equal(p, sampling_distribution(logits, 1e-3, top_k).round())  # the limit of small temperatures


def test_generate_at_temperature_zero_follows_the_greedy_distribution():
    from utils.gpt import sampling_distribution

    gpt = _tiny_gpt().eval()
    out = generate(gpt, torch.tensor([[1, 2]]), 5, temperature=0)
    for t in range(2, out.shape[1]):
        with torch.no_grad():
            p = sampling_distribution(gpt(out[:, :t])[0][:, -1], 0)
        assert p[0, out[0, t]] == 1


@pytest.mark.parametrize("bad", [-1.0, float("nan"), float("inf"), -1e-9])
def test_bad_temperatures_get_one_message_everywhere(bad):
    from utils.gpt import sampling_distribution

    messages = []
    for call in (lambda: sampling_distribution(torch.randn(5), bad), lambda: generate(_tiny_gpt(), torch.tensor([[1]]), 2, temperature=bad)):
        with pytest.raises(ValueError, match=r"temperature must be a finite number >= 0 \(0 = greedy") as e:
            call()
        messages.append(str(e.value))
    assert messages[0] == messages[1]
    for call in (lambda: sampling_distribution(torch.randn(5), "0"), lambda: generate(_tiny_gpt(), torch.tensor([[1]]), 2, temperature=None)):
        with pytest.raises(TypeError, match="temperature must be a number >= 0"):
            call()


# --------------------------------------------------------------------------- BPE merges in the wrong form


def _bpe_calls():
    from utils.text import bpe_apply_in_order, bpe_segment

    return {"bpe_segment": lambda m: bpe_segment("lowest", m),
            "bpe_apply_in_order": lambda m: bpe_apply_in_order("lowest", m)}


@pytest.mark.parametrize("entry", ["bpe_segment", "bpe_apply_in_order"])
@pytest.mark.parametrize("merges,where", [(["e s", "es t"], "'e s' at index 0.*\\('e', 's'\\).*split"),
                                          (["es", "est"], "'es' at index 0"),
                                          ([("e", "s"), "es t"], "'es t' at index 1"),
                                          ("e s es t", "got str"),
                                          ([("e", "s", "t")], "at index 0"),
                                          ([("e", 5)], "at index 0"),
                                          ([("", "s")], "at index 0"),
                                          (None, "got NoneType")])
def test_bpe_merges_in_the_wrong_form_are_named(entry, merges, where):
    with pytest.raises(TypeError, match=rf"{entry}\(\): merges must be a list of \(a, b\) pairs.*learn_bpe.*{where}"):
        _bpe_calls()[entry](merges)


@settings(max_examples=20, deadline=None)
@given(n=st.integers(0, 12))
def test_bpe_merges_as_lists_from_json_are_the_same_merges(n):
    from utils.text import bpe_apply_in_order, bpe_segment, learn_bpe

    merges = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, n)
    as_lists = [list(m) for m in merges]  # json.loads(json.dumps(merges))
    for w in ("lowest", "newer", "wider", "x"):
        assert bpe_segment(w, as_lists) == bpe_segment(w, merges) == bpe_apply_in_order(w, as_lists)


def test_bpe_ranks_keyed_by_strings_are_refused():
    from utils.text import bpe_segment

    with pytest.raises(TypeError, match=r"the keys of ranks.*'e s'"):
        bpe_segment("lowest", [], {"e s": 0})
    with pytest.raises(TypeError, match=r"ranks must be a dict"):
        bpe_segment("lowest", [], [("e", "s")])


# --------------------------------------------------------------------------- degenerate sizes at every constructor


def size_args():
    """(constructor, argument, build(value)) for the sizes of every model constructor."""
    from utils.embeddings import CBOW
    from utils.positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding
    from utils.rnn import AdditiveScore, Decoder, DotScore, Encoder

    out = [("Seq2Seq", a, lambda v, a=a: Seq2Seq(**{**dict(src_vocab_size=20, tgt_vocab_size=20, emb_dim=8,
                                                              enc_hidden=8, dec_hidden=8), a: v}))
           for a in ("src_vocab_size", "tgt_vocab_size", "emb_dim", "enc_hidden", "dec_hidden")]
    out += [("rnn.Encoder", a, lambda v, a=a: Encoder(**{**dict(vocab_size=20, emb_dim=8, hidden_dim=8), a: v}))
            for a in ("vocab_size", "emb_dim", "hidden_dim")]
    out += [("rnn.Decoder", a, lambda v, a=a: Decoder(**{**dict(vocab_size=20, emb_dim=8, hidden_dim=8, enc_dim=8), a: v}))
            for a in ("vocab_size", "emb_dim", "hidden_dim", "enc_dim")]
    out += [("AdditiveScore", a, lambda v, a=a: AdditiveScore(**{**dict(query_dim=8, key_dim=8, attn_dim=4), a: v}))
            for a in ("query_dim", "key_dim", "attn_dim")]
    out += [("DotScore", "query_dim", lambda v: DotScore(v, v))]
    out += [("CBOW", a, lambda v, a=a: CBOW(**{**dict(vocab_size=20, dim=8), a: v})) for a in ("vocab_size", "dim")]
    out += [("MultiHeadAttention", a, lambda v, a=a: MultiHeadAttention(**{**dict(d_model=8, num_heads=2), a: v}))
            for a in ("d_model", "num_heads")]
    out += [("AdditiveAttention", a, lambda v, a=a: AdditiveAttention(**{**dict(d_q=8, d_k=8, d_hidden=4), a: v}))
            for a in ("d_q", "d_k", "d_hidden")]
    out += [("GroupedQueryAttention", a, lambda v, a=a: GroupedQueryAttention(**{**dict(d_model=8, num_heads=2,
                                                                                       num_kv_heads=1), a: v}))
            for a in ("d_model", "num_heads", "num_kv_heads")]
    out += [(cls.__name__, a, lambda v, a=a, cls=cls: cls(**{**dict(d_model=8, max_len=16), a: v}))
            for cls in (SinusoidalPositionalEncoding, LearnedPositionalEmbedding) for a in ("d_model", "max_len")]
    out += [("GPTConfig", a, lambda v, a=a: GPTConfig(**{**dict(vocab_size=20, block_size=8, n_layer=1, n_head=2,
                                                                d_model=8), a: v}))
            for a in ("vocab_size", "block_size", "n_layer", "n_head", "d_model")]
    out += [("TransformerConfig", a, lambda v, a=a: TransformerConfig(**{**dict(src_vocab=20, tgt_vocab=20, d_model=8,
                                                                              num_heads=2, d_ff=16), a: v}))
            for a in ("src_vocab", "tgt_vocab", "d_model", "num_heads", "d_ff", "max_len")]
    return out


@pytest.mark.parametrize("value", [0, -1, -64])
@pytest.mark.parametrize("entry,arg,build", size_args(), ids=lambda v: v if isinstance(v, str) else "")
def test_sizes_below_one_are_refused_by_name(entry, arg, build, value):
    with pytest.raises(ValueError, match=rf"^{arg} must be >= 1, got {value}$"):
        build(value)


@pytest.mark.parametrize("value", [8.0, 2.5, "8", None])
@pytest.mark.parametrize("entry,arg,build", size_args(), ids=lambda v: v if isinstance(v, str) else "")
def test_sizes_that_are_not_whole_numbers_are_refused_by_name(entry, arg, build, value):
    if value is None and arg in ("attn_dim", "num_kv_heads"):
        return  # None is documented there: the query's size, one key/value head per query head
    with pytest.raises(TypeError, match=rf"^{arg} must be an int"):
        build(value)


def pad_id_args():
    from utils.embeddings import CBOW
    from utils.rnn import Decoder, Encoder

    return [("rnn.Encoder", lambda p: Encoder(20, 8, 8, pad_id=p)), ("rnn.Decoder", lambda p: Decoder(20, 8, 8, 8, pad_id=p)),
            ("CBOW", lambda p: CBOW(20, 8, pad_id=p)),
            ("TransformerConfig", lambda p: TransformerConfig(20, 20, d_model=8, num_heads=2, pad_id=p))]


@pytest.mark.parametrize("pad_id", [20, 21, 1000, -1, -20])
@pytest.mark.parametrize("entry,build", pad_id_args(), ids=lambda v: v if isinstance(v, str) else "")
def test_pad_id_outside_the_vocabulary_is_refused_by_name(entry, build, pad_id):
    with pytest.raises(ValueError, match=rf"pad_id={pad_id} is outside the vocabular(y|ies).* size 20 \(valid ids: 0..19\)"):
        build(pad_id)
    build(19), build(0)  # the edges of the vocabulary are fine


@pytest.mark.parametrize("value", [1.0, 1.5, -0.1])
@pytest.mark.parametrize("build", [lambda p: Seq2Seq(20, 20, 8, 8, 8, dropout=p), lambda p: MultiHeadAttention(8, 2, p),
                                   lambda p: GPTConfig(20, dropout=p), lambda p: GroupedQueryAttention(8, 2, 1, p),
                                   lambda p: TransformerConfig(20, 20, d_model=8, num_heads=2, dropout=p)])
def test_dropout_outside_zero_one_is_refused_by_name(build, value):
    with pytest.raises(ValueError, match=rf"^dropout must be a probability in \[0, 1\), got {value}"):
        build(value)


# --------------------------------------------------------------------------- a too-long max_len names max_len


@settings(max_examples=15, deadline=None)
@given(model_len=st.integers(2, 12), over=st.integers(1, 20), method=st.sampled_from(["greedy", "beam", "make_decode_fn"]))
def test_a_max_len_past_the_models_positions_names_max_len(model_len, over, method):
    cfg = TransformerConfig(20, 20, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1, num_decoder_layers=1,
                            dropout=0.0, max_len=model_len)
    tf, src = Transformer(cfg), torch.tensor([[4, 5]])
    run = {"greedy": lambda n: greedy_decode(tf, src, n, 2, 99),
           "beam": lambda n: beam_search(tf, src, 2, n, 2, 99),
           "make_decode_fn": lambda n: make_decode_fn(tf, "beam", beam_size=2, max_len=n, eos_id=99)}[method]
    with pytest.raises(ValueError, match=rf"^max_len={model_len + over} \(the most tokens to generate\).*positions for "
                                         rf"{model_len} tokens \(TransformerConfig\(max_len={model_len}\)\); pass max_len <= {model_len}$"):
        run(model_len + over)
    out = run(model_len)  # eos_id 99 never comes: exactly max_len tokens, every position of the model used
    if method != "make_decode_fn":
        assert len(out[0]) == model_len


@pytest.mark.parametrize("T", [9, 10, 40])
def test_inputs_longer_than_the_models_positions_name_the_argument(T):
    tf = Transformer(TransformerConfig(20, 20, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1,
                                       num_decoder_layers=1, max_len=8))
    long, short = torch.full((1, T), 4), torch.tensor([[2, 4]])
    for call, arg in ((lambda: tf(long, short), "src"), (lambda: tf(short, long), "tgt_in"), (lambda: tf.encode(long), "src"),
                      (lambda: greedy_decode(tf, long, 3, 2, 3), "src"), (lambda: EncoderTagger(tf.cfg)(long), "src")):
        with pytest.raises(ValueError, match=rf"^{arg} has {T} tokens, but this model has positions for at most 8 tokens "
                                             rf"\(TransformerConfig\(max_len=8\)\); shorten {arg}"):
            call()


def test_the_default_length_of_make_decode_fn_stays_inside_the_models_positions():
    from utils.text import PairBatch

    tf = Transformer(TransformerConfig(20, 20, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1,
                                       num_decoder_layers=1, max_len=12))
    src = torch.full((1, 6), 4)  # 2 × 6 + 10 = 22 > 12: capped, not refused
    mask = src != 0
    out = make_decode_fn(tf, eos_id=99)(PairBatch(src, mask.sum(1), mask, src, mask.sum(1), mask))
    assert len(out[0]) == 12


# --------------------------------------------------------------------------- RNN attention: the other mask convention


def rnn_mask_entry_points():
    from utils.rnn import AdditiveScore, attend, masked_softmax

    torch.manual_seed(0)
    score = AdditiveScore(D, D)
    return {"masked_softmax": lambda m: masked_softmax(torch.randn(*m.shape), m),
            "attend": lambda m: attend(score, torch.randn(m.shape[0], D), torch.randn(m.shape[0], m.shape[1], D), m)}


RNN_ENTRY = rnn_mask_entry_points()


@settings(max_examples=40, deadline=None)
@given(lengths=st.lists(st.integers(1, 7), min_size=1, max_size=5), extra=st.integers(0, 2),
       entry=st.sampled_from(sorted(RNN_ENTRY)))
def test_rnn_attention_accepts_real_token_masks_and_refuses_ids_eq_pad(lengths, extra, entry):
    T = max(lengths) + extra
    ids = right_padded(lengths, T)
    RNN_ENTRY[entry](ids != 0)  # True at real tokens: the course's convention
    with pytest.raises(ValueError, match=rf"{CONVENTION}.*ids == pad.*src != pad.*~mask"):
        RNN_ENTRY[entry](ids == 0)  # nn.MultiheadAttention's key_padding_mask: True at padding


def test_rnn_attention_keeps_its_documented_all_false_row():
    from utils.rnn import masked_softmax

    mask = torch.tensor([[True, True, False], [False, False, False]])  # one empty row among real ones: zeros
    assert torch.equal(masked_softmax(torch.randn(2, 3), mask)[1], torch.zeros(3))


def test_masked_mean_accepts_windows_that_start_with_padding():
    """No inverted-mask rule for masked_mean: CBOW's windows legitimately start (and end) with <pad>."""
    from utils.embeddings import CBOW, context_windows
    from utils.text import masked_mean

    ctx, _ = context_windows([[4, 5], [6]], window=2)
    x = torch.randn(*ctx.shape, D)
    real = ctx != 0
    assert not real[:, 0].any()  # every window here starts with padding, as the first words' do
    out = masked_mean(x, real)
    torch.testing.assert_close(out[0], x[0][real[0]].mean(0))
    CBOW(20, D)(ctx)


# --------------------------------------------------------------------------- issue 51: cases from the docstrings, by kind
#
# Written from the public docstrings (and the issue's kinds) before the doors were changed. A case with ``arg``
# is a slip: it must get an error (or a warning) raised from utils/ whose message names ``arg`` (and, with
# ``says``, also matches that pattern: the question asked first); tests/utils/bad_inputs.py's ``classify`` sorts
# it clear / obscure / silent. A case without ``arg`` is a valid input: it must be accepted.
# NOT_YET_51 lists the cases that fail today, with what they get; it only shrinks (strict).


class Case51:
    __slots__ = ("kind", "name", "arg", "call", "says")

    def __init__(self, kind, name, arg, call, says=None):
        self.kind, self.name, self.arg, self.call, self.says = kind, name, arg, call, says


def _autocast(fn):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return fn()


def _inference(fn):
    with torch.inference_mode():
        return fn()


def _nan_at(x, index, value=float("nan")):
    x = x.clone()
    x[index] = value
    return x


def _tmpdir():
    import tempfile
    from pathlib import Path

    return Path(tempfile.mkdtemp(prefix="errors51_"))


def _saved(model, **kw):
    from utils.training import save_checkpoint

    return save_checkpoint(_tmpdir() / "m.pt", model, **kw)


def _char_gpt(tok):
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=len(tok), block_size=16, n_layer=1, n_head=H, d_model=D))


def _read_with_another_tokenizer():
    """A character GPT saved with its tokenizer, loaded into a fresh model, then shown another text's tokenizer."""
    from utils.explorers.gpt import plot_next_char
    from utils.gpt import CharTokenizer
    from utils.training import load_checkpoint

    import matplotlib.pyplot as plt

    tok, other = CharTokenizer("abcdef"), CharTokenizer("uvwxyz")
    path = _saved(_char_gpt(tok), vocab=tok)
    model = _char_gpt(tok)
    load_checkpoint(path, model)  # the learner loads without vocab=
    try:
        return plot_next_char(model, other, prompt="uv", length=2)
    finally:
        plt.close("all")


def _translate_with(swap: bool, via_checkpoint: bool):
    """A tiny Transformer whose vocabularies were given when it was saved, translated with them (or swapped)."""
    from utils.explorers.transformer import translate_sentence
    from utils.text import Vocab, tokenize
    from utils.training import load_checkpoint

    src = Vocab.build([tokenize("ein hund läuft . ein mann und ein hund .")])
    tgt = Vocab.build([tokenize("a dog runs . a man and a cat .")])
    cfg = TransformerConfig(len(src), len(tgt), d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1,
                            num_decoder_layers=1, dropout=0.0, max_len=32)
    torch.manual_seed(0)
    model = Transformer(cfg)
    if via_checkpoint:
        from utils.training import save_checkpoint

        path = save_checkpoint(_tmpdir() / "tf.pt", model, vocab=tgt, src_vocab=src.to_list())
        model = Transformer(cfg)
        load_checkpoint(path, model)
    a, b = (tgt, src) if swap else (src, tgt)
    return translate_sentence(model, a, b, "ein hund", max_len=4)


def _compiled_checkpoint(into_compiled: bool):
    from utils.training import load_checkpoint

    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 2)
    if into_compiled:
        path = _saved(lin)
        target = torch.compile(torch.nn.Linear(3, 2))
    else:
        path = _saved(torch.compile(lin))  # compiled lazily: nothing is compiled before a call
        target = torch.nn.Linear(3, 2)
    load_checkpoint(path, target)
    got = target._orig_mod if into_compiled else target
    assert torch.equal(got.weight, lin.weight)


def _compiled_agrees(fn, *args):
    """``torch.compile(fn)`` (the eager backend: seconds, no C++ compiler) gives what ``fn`` gives."""
    import torch._dynamo

    torch._dynamo.reset()
    got, want = torch.compile(fn, backend="eager")(*args), fn(*args)
    assert torch.allclose(got[1] if isinstance(got, tuple) and got[1].dim() == 0 else got[0],
                          want[1] if isinstance(want, tuple) and want[1].dim() == 0 else want[0], atol=1e-6)


def _fit_scheduler(which: str):
    from utils.schedule import warmup_decay, warmup_scheduler

    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if which == "another optimizer":  # the cell that built the optimizer was run again, the scheduler's was not
        old = torch.optim.SGD(model.parameters(), lr=0.1)
        sched = warmup_scheduler(old, 8, 4)
    elif which == "plateau":
        sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt)
    elif which == "a factor function":
        sched = warmup_decay(10)
    else:
        sched = warmup_scheduler(opt, 8, 4)
    return fit(model, lambda m, x: m(x).mean(), _loader(), opt, scheduler=sched, progress=False)


def cases_51() -> list[Case51]:
    from utils.embeddings import CBOW, nearest_neighbours
    from utils.gpt import CharTokenizer, get_batch, sampling_distribution, split_text, top_k_filter
    from utils.plotting import plot_loss
    from utils.positional import SinusoidalPositionalEncoding, sinusoidal_encoding
    from utils.rnn import Seq2Seq as RNN
    from utils.scale import apply_rotary, online_softmax_update, rope_angles
    from utils.schedule import transformer_adam, warmup_decay, warmup_scheduler
    from utils.text import masked_mean, pad_sequences
    from utils.training import evaluate, load_checkpoint, perplexity, save_checkpoint
    from utils.transformer import DecoderLayer, Encoder, EncoderLayer

    torch.manual_seed(0)
    x = torch.randn(2, 5, D)
    q = torch.randn(2, H, 5, 4)
    ids = right_padded([5, 3], 5)
    tf, gpt, mha = _tiny_transformer(), _tiny_gpt(), MultiHeadAttention(D, H)
    gqa = GroupedQueryAttention(D, H, 1)
    lin = torch.nn.Linear(3, 1)
    cases: list[Case51] = []

    def add(kind, name, arg, call, says=None):
        cases.append(Case51(kind, name, arg, call, says))

    # ---- valid inputs: autocast, inference_mode, no_grad, non-contiguous and broadcast tensors
    k = "valid input"
    add(k, "MultiHeadAttention, bf16 activations beside fp32 weights under autocast", None,
        lambda: _autocast(lambda: mha(*(x.bfloat16(),) * 3)))
    add(k, "MultiHeadAttention, fp32 activations under autocast", None, lambda: _autocast(lambda: mha(x, x, x)))
    add(k, "sdpa, bf16 q beside fp32 k and v under autocast", None,
        lambda: _autocast(lambda: scaled_dot_product_attention(q.bfloat16(), q, q)))
    add(k, "sdpa, all bf16 under autocast", None,
        lambda: _autocast(lambda: scaled_dot_product_attention(*(q.bfloat16(),) * 3)))
    add(k, "block_attention, bf16 q beside fp32 k and v under autocast", None,
        lambda: _autocast(lambda: block_attention(q.bfloat16(), q, q, block_size=2)))
    add(k, "GroupedQueryAttention, bf16 x under autocast", None, lambda: _autocast(lambda: gqa(x.bfloat16())))
    add(k, "EncoderLayer, bf16 x under autocast", None,
        lambda: _autocast(lambda: EncoderLayer(D, H, 16, 0.0)(x.bfloat16())))
    add(k, "DecoderLayer, bf16 x beside fp32 memory under autocast", None,
        lambda: _autocast(lambda: DecoderLayer(D, H, 16, 0.0)(x.bfloat16(), x)))
    add(k, "Transformer under autocast", None, lambda: _autocast(lambda: tf(ids, ids)))
    add(k, "GPT with targets under autocast", None, lambda: _autocast(lambda: gpt(ids, ids)))
    add(k, "GPT under inference_mode", None, lambda: _inference(lambda: gpt(ids)))
    add(k, "MultiHeadAttention under inference_mode", None, lambda: _inference(lambda: mha(x, x, x)))
    add(k, "greedy_decode under inference_mode", None, lambda: _inference(lambda: greedy_decode(tf, ids, 4, 2, 3)))
    add(k, "generate under no_grad", None, lambda: torch.no_grad()(lambda: generate(gpt, ids, 2))())
    add(k, "GPT under torch.compile (eager backend: dynamo traces the door)", None,
        lambda: _compiled_agrees(gpt, ids, ids))
    add(k, "sdpa under torch.compile (eager backend)", None,
        lambda: _compiled_agrees(scaled_dot_product_attention, q, q, q, causal_mask(5)))
    add(k, "MultiHeadAttention, a non-contiguous query", None,
        lambda: mha(x.transpose(1, 2).contiguous().transpose(1, 2), x, x))
    add(k, "Transformer, non-contiguous src", None, lambda: tf(ids.T.contiguous().T, ids))
    add(k, "sdpa, expanded (stride 0) k, v and a broadcast mask", None,
        lambda: scaled_dot_product_attention(q, q[:1].expand(2, -1, -1, -1), q[:1].expand(2, -1, -1, -1),
                                             causal_mask(5)[None, None].expand(2, 1, 5, 5)))
    add(k, "online_softmax_update, the first block (m = -inf)", None,
        lambda: online_softmax_update(torch.full((2, 1), float("-inf")), torch.zeros(2, 1), torch.zeros(2, 3),
                                      torch.randn(2, 4), torch.randn(4, 3)))
    add(k, "sampling_distribution of top_k_filter's output (-inf logits)", None,
        lambda: sampling_distribution(top_k_filter(torch.randn(2, 20), 3)))
    add(k, "perplexity of a 0-dim loss tensor", None, lambda: perplexity(torch.tensor(2.0)))
    add(k, "perplexity of a NumPy float", None, lambda: perplexity(np.float64(2.0)))
    add(k, "greedy_decode, an empty batch (decodes to [])", None, lambda: greedy_decode(tf, ids[:0], 4, 2, 3))
    add(k, "fit, scheduler built on the optimizer given", None, lambda: _fit_scheduler("same"))
    add(k, "load_checkpoint, saved from torch.compile(model), loaded into the plain model", None,
        lambda: _compiled_checkpoint(into_compiled=False))
    add(k, "load_checkpoint, saved from the plain model, loaded into torch.compile(model)", None,
        lambda: _compiled_checkpoint(into_compiled=True))
    add(k, "translate_sentence with the vocabularies the model was saved with", None,
        lambda: _translate_with(swap=False, via_checkpoint=True))

    # ---- the order of the questions: type, dtype, rank, sizes, values
    k = "question order"
    dtype_first = r"dtype"  # the dtype is named (asked before the number of dims)
    add(k, "transformer.Encoder given token ids (embed them first)", "x", lambda: Encoder(tf.cfg)(ids), dtype_first)
    add(k, "MultiHeadAttention, ids (T,) as query", "query", lambda: mha(ids[0], x, x), dtype_first)
    add(k, "sdpa, an int q of one dim", "q", lambda: scaled_dot_product_attention(ids[0], q, q), dtype_first)
    add(k, "GPT, embeddings (B, T, D) given as idx", "idx", lambda: gpt(x), dtype_first)
    add(k, "CBOW, one window of float scores", "context", lambda: CBOW(20, D)(torch.rand(4)), dtype_first)
    add(k, "key_padding_mask, float embeddings (B, T, D)", "ids_or_bool", lambda: key_padding_mask(x), dtype_first)
    add(k, "rope_angles, float positions (T, 1)", "positions",
        lambda: rope_angles(torch.arange(5.0)[:, None], 8), dtype_first)
    add(k, "get_batch, a float (B, T) text", "data", lambda: get_batch(torch.rand(3, 40), 4, 2), dtype_first)
    add(k, "masked_mean, token ids (B, T) as x", "x", lambda: masked_mean(ids, ids != 0), dtype_first)
    add(k, "apply_rotary, ids of one dim as x", "x",
        lambda: apply_rotary(ids[0], *rope_angles(torch.arange(5), 8)), dtype_first)
    add(k, "SinusoidalPositionalEncoding, token ids (B, T)", "x",
        lambda: SinusoidalPositionalEncoding(D, 32)(ids), dtype_first)

    # ---- plain Python where a course object goes
    k = "Python type"
    add(k, "perplexity, a list of losses", "loss", lambda: perplexity([2.0, 1.5]))
    add(k, "perplexity, a str", "loss", lambda: perplexity("2.0"))
    add(k, "perplexity, a tensor of per-token losses", "loss", lambda: perplexity(torch.tensor([2.0, 1.5])))
    add(k, "plot_loss, a list of losses", "history", lambda: plot_loss([2.0, 1.5]))
    add(k, "plot_loss, a dict", "history", lambda: plot_loss({"train_loss": [2.0]}))
    add(k, "Transformer, a dict for cfg", "cfg", lambda: Transformer(dict(src_vocab=20, tgt_vocab=20)))
    add(k, "Transformer, an int for cfg", "cfg", lambda: Transformer(20))
    add(k, "GPT, an int for cfg", "cfg", lambda: GPT(20))
    add(k, "GPT, a dict for cfg", "cfg", lambda: GPT(dict(vocab_size=20)))
    add(k, "EncoderTagger, a dict for cfg", "cfg", lambda: EncoderTagger(dict(src_vocab=20, tgt_vocab=20)))
    add(k, "CharTokenizer.encode, bytes", "bytes", lambda: CharTokenizer("abc").encode(b"ab"))
    add(k, "CharTokenizer.decode, a (1, T) tensor", "ids", lambda: CharTokenizer("abc").decode(torch.tensor([[0, 1]])))
    add(k, "CharTokenizer, bytes for text", "text", lambda: CharTokenizer(b"abc"))
    add(k, "save_checkpoint, model and path swapped", "path", lambda: save_checkpoint(lin, _tmpdir() / "a.pt"))
    add(k, "load_checkpoint, model and path swapped", "path", lambda: load_checkpoint(lin, _saved(lin)))
    add(k, "Seq2Seq.forward without src_mask", "src_mask", lambda: RNN(20, 20, 8, 8, 8)(ids, ids))
    add(k, "nearest_neighbours, word and vocab swapped", "vocab",
        lambda: nearest_neighbours(torch.randn(20, D), "hund", Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "hund"])))
    add(k, "fit, train_loader and loss_fn swapped", "loss_fn",
        lambda: fit(lin, _loader(), lambda m, b: m(b).mean(), torch.optim.SGD(lin.parameters(), lr=0.1),
                    progress=False))
    add(k, "evaluate, loader and loss_fn swapped", "loader", lambda: evaluate(lin, lambda m, b: m(b).mean(), _loader()))
    add(k, "warmup_scheduler, the model for optimizer", "optimizer", lambda: warmup_scheduler(lin, 8, 4))
    add(k, "transformer_adam, the model for params", "params", lambda: transformer_adam(lin, 8, 4))
    add(k, "split_text, a str", "ids", lambda: split_text("some text"))
    add(k, "pad_sequences, a str", "seqs", lambda: pad_sequences("hello"))

    # ---- workflow slips
    k = "workflow"
    add(k, "fit, a scheduler built on an earlier optimizer", "scheduler", lambda: _fit_scheduler("another optimizer"))
    add(k, "fit, ReduceLROnPlateau (steps on a metric)", "scheduler", lambda: _fit_scheduler("plateau"))
    add(k, "fit, warmup_decay's factor function as the scheduler", "scheduler", lambda: _fit_scheduler("a factor function"))
    add(k, "load_checkpoint, the optimizer of another model", "optimizer",
        lambda: load_checkpoint(_saved(lin, optimizer=torch.optim.SGD(lin.parameters(), lr=0.1)), lin,
                                torch.optim.SGD(torch.nn.Linear(4, 4).parameters(), lr=0.1)))

    # ---- vocabularies that meet a model
    k = "vocabulary"
    add(k, "plot_next_char, a character GPT read with another text's tokenizer", "tok", _read_with_another_tokenizer)
    add(k, "translate_sentence, src and tgt vocabularies swapped (saved with the model)", "src_vocab",
        lambda: _translate_with(swap=True, via_checkpoint=True))

    # ---- values that poison quietly
    k = "value"
    add(k, "MultiHeadAttention, NaN in a real query position", "query", lambda: mha(_nan_at(x, (0, 1, 2)), x, x))
    add(k, "sdpa, inf in a real key position", "k", lambda: scaled_dot_product_attention(q, _nan_at(q, (1, 0, 2, 1), float("inf")), q))
    add(k, "sdpa, NaN in a value at a masked key position", "v",
        lambda: scaled_dot_product_attention(q, q, _nan_at(q, (0, 0, 4, 0)), causal_mask(5)))
    add(k, "EncoderLayer, NaN in x", "x", lambda: EncoderLayer(D, H, 16, 0.0)(_nan_at(x, (1, 4, 0))))
    add(k, "GroupedQueryAttention, -inf in x", "x", lambda: gqa(_nan_at(x, (0, 0, 0), float("-inf"))))
    add(k, "masked_mean, NaN at a real position", "x", lambda: masked_mean(_nan_at(x, (0, 0, 0)), ids != 0))
    add(k, "sampling_distribution, NaN logits", "logits", lambda: sampling_distribution(_nan_at(torch.randn(2, 20), (0, 3))))
    add(k, "warmup_decay, floor = 0", "floor", lambda: warmup_decay(100, floor=0.0))
    add(k, "warmup_decay, floor above the peak", "floor", lambda: warmup_decay(100, floor=2.0))
    add(k, "rope_angles, base = 0", "base", lambda: rope_angles(torch.arange(5), 8, base=0.0))
    add(k, "sinusoidal_encoding, base = 0", "base", lambda: sinusoidal_encoding(8, D, base=0.0))
    add(k, "warmup_scheduler, factor = 0 (trains at lr 0)", "factor",
        lambda: warmup_scheduler(torch.optim.SGD(lin.parameters(), lr=0.1), 8, 4, factor=0.0))
    add(k, "split_text, a text too short for a validation part", "val", lambda: split_text(torch.arange(5)))
    add(k, "beam_search, length_penalty = NaN", "length_penalty",
        lambda: beam_search(tf, ids, 2, 4, 2, 3, length_penalty=float("nan")))
    add(k, "make_decode_fn, length_penalty = NaN", "length_penalty",
        lambda: make_decode_fn(tf, "beam", length_penalty=float("nan")))
    add(k, "beam_search, sentences of no tokens (S = 0)", "src", lambda: beam_search(tf, ids[:, :0], 2, 4, 2, 3))
    return cases


CASES_51 = cases_51()

NOT_YET_51: dict[str, str] = {}  # before issue 51's changes: 58 of 82 (8 valid refused, 30 obscure, 20 silent)


def outcome_51(case: Case51) -> tuple[str, str]:
    """("accepted" | "refused") for a valid input, ("clear" | "obscure" | "silent") for a slip, and the message."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from bad_inputs import Probe, classify

    if case.arg is None:
        try:
            case.call()
        except Exception as e:  # noqa: BLE001
            return "refused", f"{type(e).__name__}: {e}"
        return "accepted", ""
    got, message = classify(Probe(case.kind, case.name, case.arg, case.call))
    if got == "clear" and case.says and not re.search(case.says, message):
        return "obscure", f"(asks another question first) {message}"
    return got, message


def test_issue_51_has_at_least_60_cases_with_distinct_names():
    assert len(CASES_51) >= 60
    assert len({c.name for c in CASES_51}) == len(CASES_51)
    assert NOT_YET_51.keys() <= {c.name for c in CASES_51}


@pytest.mark.parametrize("case", CASES_51, ids=[c.name for c in CASES_51])
def test_issue_51_case(case):
    got, message = outcome_51(case)
    want = "accepted" if case.arg is None else "clear"
    if case.name in NOT_YET_51:
        assert got != want, f"{want} now: take it out of NOT_YET_51"
        pytest.xfail(f"{got}: {NOT_YET_51[case.name]}")
    assert got == want, (got, message)


# --------------------------------------------------------------------------- issue 51: vocabularies that meet a model


def _two_vocabs():
    from utils.text import tokenize

    src = Vocab.build([tokenize("ein hund läuft . ein mann und ein hund .")])
    tgt = Vocab.build([tokenize("a dog runs . a man and a cat .")])
    return src, tgt


@pytest.mark.parametrize("saved_as", ["pair", "target alone"])
def test_a_model_carries_its_vocabularies_and_translate_compares_them(saved_as, tmp_path):
    """save_checkpoint(vocab=...) then load_checkpoint: the model carries the fingerprint; translate's data and
    translate_sentence's vocabularies are compared with it (swapped: said so), a model built afresh carries none."""
    from utils.training import load_checkpoint, save_checkpoint
    from utils.translation import TranslationData, translate
    from utils.text import PairDataset

    src, tgt = _two_vocabs()
    cfg = TransformerConfig(len(src), len(tgt), d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1,
                            num_decoder_layers=1, dropout=0.0, max_len=32)
    torch.manual_seed(0)
    path = save_checkpoint(tmp_path / "m.pt", Transformer(cfg), vocab=(src, tgt) if saved_as == "pair" else tgt)
    model = Transformer(cfg)
    make_decode_fn(model)  # a model built afresh carries no vocabulary: nothing to compare
    load_checkpoint(path, model)

    def data(a, b):
        ds = PairDataset([src.encode(["ein", "hund"], True, True)], [tgt.encode(["a", "dog"], True, True)])
        return TranslationData("de", "en", a, b, {"test": ds}, {"test": [("ein hund", "a dog")]},
                               {"test": [(["ein", "hund"], ["a", "dog"])]}, {})

    assert len(translate(make_decode_fn(model, max_len=4), data(src, tgt))) == 1
    with pytest.raises(ValueError, match=r"data \(data.src_vocab, data.tgt_vocab\).*swapped"):
        translate(make_decode_fn(model, max_len=4), data(tgt, src))
    other = Vocab(list(tgt.itos[:4]) + [w.upper() for w in tgt.itos[4:]])  # the same size, other words
    with pytest.raises(ValueError, match=r"is not the vocabulary the model was saved with"):
        translate(make_decode_fn(model, max_len=4), data(src, other))


def test_prepare_translations_vocabularies_swapped_are_named():
    from utils.text import tokenize
    from utils.translation import _vocab_sides

    src, tgt = _two_vocabs()
    pairs = [(tokenize("ein hund läuft ."), tokenize("a dog runs .")), (tokenize("ein mann"), tokenize("a man"))]
    _vocab_sides(pairs, src, tgt)
    with pytest.raises(ValueError, match=r"vocabs=\(src_vocab, tgt_vocab\) looks swapped"):
        _vocab_sides(pairs, tgt, src)


@pytest.mark.parametrize("pad", [float("nan"), float("inf"), float("-inf"), 1e4])
def test_masked_mean_ignores_whatever_the_padding_holds_and_refuses_it_at_a_real_token(pad):
    """Its docstring: pads never contribute, whatever values they hold (issue 51: NaN too, no 0 · NaN); a NaN or
    inf at a real token is named. cases.layout (Tensor[...]: any values) keeps a NaN as it is."""
    from courseware.grading import cases
    from utils.text import masked_mean

    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, 4, generator=g)
    mask = torch.arange(5)[None] < torch.tensor([5, 2, 3])[:, None]
    want = torch.stack([x[b, :n].mean(0) for b, n in enumerate([5, 2, 3])])
    padded = cases.layout(x.masked_fill(~mask[..., None], pad), "non-contiguous")
    assert torch.allclose(masked_mean(padded, mask), want, atol=1e-6)
    real = x.clone()
    real[1, 1, 2] = pad
    if pad != 1e4:
        with pytest.raises(ValueError, match=r"x \(B, T, D\) at its real positions \(mask True\) holds .* at index \(1, 1, 2\)"):
            masked_mean(real, mask)
