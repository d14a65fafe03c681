"""Issue 43: bad inputs written from the docstrings, as a learner slips, and how each is met.

Each :class:`Probe` is one slip: a call that must be refused (or, for a workflow slip that is not
wrong in itself, warned about) with a message that names ``arg``. :func:`classify` sorts the outcome:

- **clear**: an error (or a warning) raised from ``utils/`` whose message names ``arg``;
- **obscure**: an error from deep inside torch or Python, or one that does not name ``arg``;
- **silent**: accepted without a word.

``tests/utils/test_bad_inputs.py`` requires every probe to be clear; run this file to print the table
(``python tests/utils/bad_inputs.py``, ``--verbose`` for each message), before and after a change.
The probes are grouped by kind of slip, the kinds of issue 30 and of issue 43's held-out set.
"""

from __future__ import annotations

import re
import sys
import tempfile
import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

D, H, V = 8, 2, 20


@dataclass
class Probe:
    kind: str
    name: str
    arg: str              # the word the message must contain (the argument, or the token/file at fault)
    call: Callable[[], object]


# --------------------------------------------------------------------------- tiny models, built on demand


def _tf(**kw):
    from utils.transformer import Transformer, TransformerConfig

    torch.manual_seed(0)
    cfg = dict(src_vocab=V, tgt_vocab=V, d_model=D, num_heads=H, d_ff=16, num_encoder_layers=1, num_decoder_layers=1,
               dropout=0.0, max_len=32)
    return Transformer(TransformerConfig(**{**cfg, **kw}))


def _tagger():
    from utils.transformer import EncoderTagger

    return EncoderTagger(_tf().cfg)


def _gpt(**kw):
    from utils.gpt import GPT, GPTConfig

    torch.manual_seed(0)
    return GPT(GPTConfig(**{**dict(vocab_size=V, block_size=16, n_layer=1, n_head=H, d_model=D), **kw}))


def _mha():
    from utils.attention import MultiHeadAttention

    torch.manual_seed(0)
    return MultiHeadAttention(D, H)


def _seq2seq():
    from utils.rnn import Seq2Seq

    torch.manual_seed(0)
    return Seq2Seq(V, V, 8, 8, 8)


def _cbow():
    from utils.embeddings import CBOW

    torch.manual_seed(0)
    return CBOW(V, D)


def _ids(B=2, T=5, pad_from=(5, 3)):
    """(B, T) right-padded ids in 4..V-1, 0 after each row's length."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(4, V, (B, T), generator=g)
    return ids.masked_fill(torch.arange(T)[None] >= torch.tensor(pad_from)[:, None], 0)


def _x(B=2, T=5, dtype=torch.float32, device="cpu"):
    return torch.randn(B, T, D, generator=torch.Generator().manual_seed(1)).to(dtype=dtype, device=device)


def _heads(B=2, T=5, d=4, dtype=torch.float32):
    return torch.randn(B, H, T, d, generator=torch.Generator().manual_seed(2)).to(dtype)


def _vocab():
    from utils.text import Vocab, tokenize

    return Vocab.build([tokenize("ein hund läuft . ein mann und ein hund .")])


def _saved_checkpoint(tmp: Path, **extra) -> tuple[Path, object]:
    from utils.training import save_checkpoint

    gpt = _gpt()
    return save_checkpoint(tmp / "gpt.pt", gpt, **extra), gpt


def _damage(path: Path) -> Path:
    """Flip bytes inside the weights, as a bad copy or disk does; the size stays the same."""
    data = bytearray(path.read_bytes())
    start = data.find(b"data/0") + 200  # inside the first tensor's storage, past the zip headers
    for i in range(start, start + 16):
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


def _tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="bad_inputs_"))


# --------------------------------------------------------------------------- the probes, by kind of slip


def probes() -> list[Probe]:
    from utils.attention import (AdditiveAttention, causal_mask, combine_masks, key_padding_mask,
                                 scaled_dot_product_attention)
    from utils.embeddings import context_windows, nearest_neighbours
    from utils.gpt import CharTokenizer, generate, sampling_distribution, split_text, text_loss, top_k_filter
    from utils.metrics import exact_match, token_accuracy
    from utils.rnn import Encoder as RNNEncoder
    from utils.rnn import greedy_decode as rnn_greedy
    from utils.scale import GroupedQueryAttention
    from utils.schedule import peak_lr, transformer_lr, warmup_decay
    from utils.text import PairBatch, masked_mean, pad_sequences
    from utils.training import fit, load_checkpoint, save_checkpoint
    from utils.transformer import greedy_decode, translation_loss

    ids = _ids()
    P: list[Probe] = []

    def add(kind, name, arg, call):
        P.append(Probe(kind, name, arg, call))

    # ---- 1. the other mask convention (True = blocked), and masks of the wrong kind
    k = "mask convention"
    add(k, "sdpa, an additive float mask (0 / -inf)", "mask",
        lambda: scaled_dot_product_attention(*(_heads(),) * 3, torch.zeros(5, 5).masked_fill(~causal_mask(5), float("-inf"))))
    add(k, "MultiHeadAttention, ids == pad as (B, 1, 1, T)", "mask",
        lambda: _mha()(*(_x(),) * 3, (ids == 0)[:, None, None, :]))
    add(k, "Transformer.encode, src == pad as src_mask", "src_mask",
        lambda: _tf().encode(ids, (ids == 0)[:, None, None, :]))
    add(k, "EncoderTagger, a 0/1 int mask", "src_mask",
        lambda: _tagger()(ids, (ids != 0).long()[:, None, None, :]))
    add(k, "GroupedQueryAttention, ~causal_mask", "mask",
        lambda: GroupedQueryAttention(D, H, 1)(_x(), ~causal_mask(5)[None, None]))
    add(k, "rnn.Encoder, src_mask = src == pad", "src_mask",
        lambda: RNNEncoder(V, 8, 8)(ids, ids == 0))
    add(k, "Seq2Seq, src_mask = src == pad", "src_mask",
        lambda: _seq2seq()(ids, ids == 0, ids))
    add(k, "rnn.greedy_decode, a float mask", "src_mask",
        lambda: rnn_greedy(_seq2seq(), ids, (ids != 0).float(), 3))
    add(k, "masked_mean, an int mask", "mask",
        lambda: masked_mean(_x(), (ids != 0).long()))
    add(k, "token_accuracy, mask True at the padding", "mask",
        lambda: token_accuracy(ids, ids, ids == 0))
    add(k, "combine_masks, an additive float mask among bool ones", "masks",
        lambda: combine_masks(key_padding_mask(ids), torch.zeros(5, 5)))
    add(k, "AdditiveAttention, ids == pad mask", "mask",
        lambda: AdditiveAttention(4, 4, 4)(*(_heads(),) * 3, (ids == 0)[:, None, None, :]))

    # ---- 2. layouts and shapes
    k = "layout / shape"
    add(k, "Transformer, src given transposed (S, B)", "src",
        lambda: _tf()(ids.T.contiguous(), ids))
    add(k, "Transformer, tgt_in left-padded", "tgt_in",
        lambda: _tf()(ids, ids.flip(1)))
    add(k, "GPT, idx of one sequence (T,)", "idx", lambda: _gpt()(ids[0]))
    add(k, "GPT, targets flattened (B*T,)", "targets", lambda: _gpt()(ids, ids.flatten()))
    add(k, "MultiHeadAttention, query of width D+1", "query",
        lambda: _mha()(torch.randn(2, 5, D + 1), _x(), _x()))
    add(k, "sdpa, q and k of different d_k", "k",
        lambda: scaled_dot_product_attention(_heads(d=4), _heads(d=6), _heads(d=4)))
    add(k, "sdpa, k and v of different lengths", "v",
        lambda: scaled_dot_product_attention(_heads(), _heads(), _heads(T=4)))
    add(k, "CBOW, one window (C,)", "context", lambda: _cbow()(torch.tensor([4, 5, 6, 7])))
    add(k, "Transformer.decode, src ids passed as memory", "memory",
        lambda: (lambda tf: tf.decode(ids, ids, tf.src_mask(ids)))(_tf()))
    add(k, "Transformer.decode, memory (S, B, D)", "memory",
        lambda: (lambda tf: tf.decode(ids[:, :3], tf.encode(ids).transpose(0, 1), tf.src_mask(ids)))(_tf()))
    add(k, "rnn.Encoder, src_mask one token short", "src_mask",
        lambda: RNNEncoder(V, 8, 8)(ids, (ids != 0)[:, :-1]))
    add(k, "token_accuracy, logits in cross_entropy's (B, V, T) layout", "logits_or_pred",
        lambda: token_accuracy(torch.randn(2, V, 5), ids))
    add(k, "EncoderTagger, a mask one key too long", "src_mask",
        lambda: _tagger()(ids, torch.ones(2, 1, 1, 6, dtype=torch.bool)))
    add(k, "MultiHeadAttention, (T, B, D) query against (B, S, D) memory", "query",
        lambda: _mha()(_x(B=5, T=2), _x(B=2, T=7), _x(B=2, T=7)))

    # ---- 3. dtype or device not matching the module's parameters
    k = "dtype / device"
    add(k, "MultiHeadAttention, float64 input, float32 weights", "query",
        lambda: _mha()(*(_x(dtype=torch.float64),) * 3))
    add(k, "MultiHeadAttention in float64, float32 input", "query",
        lambda: _mha().double()(*(_x(),) * 3))
    add(k, "MultiHeadAttention in bfloat16, float32 input", "query",
        lambda: _mha().to(torch.bfloat16)(*(_x(),) * 3))
    add(k, "sdpa, q float32, k float64", "k",
        lambda: scaled_dot_product_attention(_heads(), _heads(dtype=torch.float64), _heads()))
    add(k, "sdpa, v float16, q and k float32", "v",
        lambda: scaled_dot_product_attention(_heads(), _heads(), _heads(dtype=torch.float16)))
    add(k, "GPT, idx on another device", "idx",
        lambda: _gpt()(ids.to("meta")))
    add(k, "CBOW, context on another device", "context",
        lambda: _cbow()(ids.to("meta")))
    add(k, "AdditiveAttention, float64 q, float32 weights", "q",
        lambda: AdditiveAttention(4, 4, 4)(_heads(dtype=torch.float64), _heads(), _heads()))
    add(k, "GroupedQueryAttention, float64 x", "x",
        lambda: GroupedQueryAttention(D, H, 1)(_x(dtype=torch.float64)))
    add(k, "rnn.Encoder, src on another device", "src",
        lambda: RNNEncoder(V, 8, 8)(ids.to("meta"), (ids != 0).to("meta")))
    add(k, "Transformer.decode, float64 memory", "memory",
        lambda: (lambda tf: tf.decode(ids, tf.encode(ids).double(), tf.src_mask(ids)))(_tf()))
    add(k, "EncoderTagger, src_mask on another device", "src_mask",
        lambda: _tagger()(ids, key_padding_mask(ids).to("meta")))

    # ---- 4. Python types at the door
    k = "Python type"
    add(k, "GPT, idx as a list of lists", "idx", lambda: _gpt()(ids.tolist()))
    add(k, "generate, a str prompt", "idx", lambda: generate(_gpt(), "hello", 3))
    add(k, "CBOW, a NumPy array", "context", lambda: _cbow()(ids.numpy()))
    add(k, "MultiHeadAttention, a NumPy query", "query", lambda: _mha()(_x().numpy(), _x(), _x()))
    add(k, "Transformer.encode, None", "src", lambda: _tf().encode(None))
    add(k, "sampling_distribution, logits as a list", "logits", lambda: sampling_distribution([1.0, 2.0, 3.0]))
    add(k, "top_k_filter, k = 2.5", "k", lambda: top_k_filter(torch.randn(2, V), 2.5))
    add(k, "text_loss, data as a list", "data", lambda: text_loss(_gpt(), list(range(40))))
    add(k, "split_text, ids as a list", "ids", lambda: split_text(list(range(40))))
    add(k, "context_windows, a str for sentences", "sentences", lambda: context_windows("ein hund läuft"))
    add(k, "nearest_neighbours, the model instead of its weights", "weights",
        lambda: nearest_neighbours(_cbow(), _vocab(), "hund"))
    add(k, "transformer_lr, step as a str", "step", lambda: transformer_lr("10", 512, 4000))
    add(k, "token_accuracy, target as a list", "target", lambda: token_accuracy(ids, ids.tolist()))

    # ---- 5. workflow slips
    k = "workflow"

    def fit_with(model, opt, loss):
        return fit(model, loss, [torch.randn(4, 3)], opt, progress=False)

    def stale():
        old = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(old.parameters(), lr=0.1)
        return fit_with(torch.nn.Linear(3, 1), opt, lambda m, x: m(x).mean())

    add(k, "fit, the optimiser of a model built before", "optimizer", stale)
    add(k, "translation_loss, a (src, tgt) tuple for batch", "batch",
        lambda: translation_loss(_tf(), (ids, ids)))
    add(k, "seq2seq_loss-style: translation_loss given a Seq2Seq", "model",
        lambda: translation_loss(_seq2seq(), PairBatch(ids, (ids != 0).sum(1), ids != 0, ids, (ids != 0).sum(1), ids != 0)))
    add(k, "fit, loss_fn returning GPT's (logits, loss) pair", "loss_fn",
        lambda: (lambda g: fit(g, lambda m, b: m(*b), [(ids, ids)], torch.optim.SGD(g.parameters(), lr=0.1),
                               progress=False))(_gpt()))
    add(k, "translation_loss with gradients on a model left in eval mode (dropout off)", "model",
        lambda: translation_loss(_tf(dropout=0.1).eval(),
                                 PairBatch(ids, (ids != 0).sum(1), ids != 0, ids, (ids != 0).sum(1), ids != 0)))
    add(k, "GPT loss with gradients on a model left in eval mode (dropout off)", "model",
        lambda: _gpt(dropout=0.1).eval()(ids, ids))
    add(k, "load_checkpoint, model of another config", "config",
        lambda: (lambda t: load_checkpoint(_saved_checkpoint(t, config=vars(_gpt().cfg))[0], _gpt(d_model=4)))(_tmp()))

    # ---- 6. artefacts that do not describe themselves
    k = "artefact"
    add(k, "load_checkpoint, a checkpoint with damaged bytes", "gpt.pt",
        lambda: (lambda t: load_checkpoint(_damage(_saved_checkpoint(t)[0]), _gpt()))(_tmp()))
    add(k, "load_checkpoint, a GPT read with another text's tokenizer of the same size", "vocab",
        lambda: (lambda t: load_checkpoint(_saved_checkpoint(t, vocab=CharTokenizer("abcdef").chars)[0], _gpt(),
                                           vocab=CharTokenizer("uvwxyz")))(_tmp()))
    add(k, "load_checkpoint, a Vocab of the same size but other words", "vocab",
        lambda: (lambda t: load_checkpoint(_saved_checkpoint(t, vocab=_vocab().to_list())[0], _gpt(),
                                           vocab=_vocab_other()))(_tmp()))
    add(k, "load_pretrained, weights damaged and the manifest written again", "tiny.safetensors",
        _damaged_pretrained)
    add(k, "load_pretrained, the json's vocabulary swapped for another of the same size", "vocab",
        _swapped_pretrained_vocab)

    # ---- 7. look-ups that fail open
    k = "look-up"
    add(k, "vocab['Hund'], capitalised", "Hund", lambda: _vocab()["Hund"])
    add(k, "vocab.encode(['Ein', 'Hund'])", "Ein", lambda: _vocab().encode(["Ein", "Hund"]))
    add(k, "exact_match, two id tensors padded to different lengths", "predictions",
        lambda: exact_match(torch.tensor([[4, 5, 0, 0]]), torch.tensor([[4, 5, 0]])))
    add(k, "token_accuracy, predictions and targets padded to different lengths", "target",
        lambda: token_accuracy(torch.tensor([[4, 5, 0, 0]]), torch.tensor([[4, 5, 0]])))
    add(k, "transformer_lr, a fractional step", "step", lambda: transformer_lr(2.5, 512, 4000))
    add(k, "transformer_lr, a fractional warmup", "warmup", lambda: transformer_lr(10, 512, 4000.5))
    add(k, "warmup_decay, a fractional number of steps", "steps", lambda: warmup_decay(100.5))
    add(k, "peak_lr, a fractional d_model", "d_model", lambda: peak_lr(512.5, 4000))
    add(k, "pad_sequences, a fractional max_len", "max_len", lambda: pad_sequences([[4, 5, 6]], max_len=2.5))
    add(k, "get_batch-style: generate with a fractional top_k", "top_k",
        lambda: generate(_gpt(), ids[:, :2], 2, top_k=2.5))
    add(k, "greedy_decode, a fractional max_len", "max_len", lambda: greedy_decode(_tf(), ids, 2.5, 2, 3))
    # ---- the doors of the last step of issue 43 (added with them, measured before and after), by kind
    from utils.distributed import train_gpt
    from utils.plotting import plot_attention_grid
    from utils.pretrained import quantize_int8
    from utils.scale import apply_rotary, online_softmax_update, rope_angles

    cos, sin = rope_angles(torch.arange(5), 8)
    state = (torch.full((2, 1), float("-inf")), torch.zeros(2, 1), torch.zeros(2, 3))  # m, l, acc of 2 queries
    add("mask convention", "combine_masks, a causal mask for another length", "masks",
        lambda: combine_masks(key_padding_mask(ids), causal_mask(4)))
    add("layout / shape", "apply_rotary, angles for fewer positions than x has", "cos",
        lambda: apply_rotary(torch.randn(2, 5, 8), cos[:3], sin[:3]))
    add("layout / shape", "apply_rotary, angles for another d_k", "cos",
        lambda: apply_rotary(torch.randn(2, 5, 6), cos, sin))
    add("layout / shape", "online_softmax_update, a block of values of another length", "v",
        lambda: online_softmax_update(*state, torch.randn(2, 4), torch.randn(3, 3)))
    add("layout / shape", "plot_attention_grid, one (Tq, Tk) map", "weights",
        lambda: plot_attention_grid(torch.rand(3, 3), list("abc"), list("abc")))
    add("layout / shape", "quantize_int8, a bias vector", "w", lambda: quantize_int8(torch.randn(4)))
    add("dtype / device", "quantize_int8, an int8 tensor quantized again", "w",
        lambda: quantize_int8(torch.ones(4, 3, dtype=torch.int8)))
    add("dtype / device", "apply_rotary, angles on another device", "cos",
        lambda: apply_rotary(torch.randn(2, 5, 8), cos.to("meta"), sin.to("meta")))
    add("Python type", "train_gpt, steps = 1e3", "steps",
        lambda: train_gpt(_gpt(), torch.randint(0, V, (200,)), steps=1e3, batch_size=2, lr=1e-3))
    add("look-up", "train_gpt, a text encoded with a larger vocabulary", "train",
        lambda: train_gpt(_gpt(), torch.randint(0, 2 * V, (200,)), steps=1, batch_size=2, lr=1e-3))
    return P


def _vocab_other():
    from utils.text import Vocab

    words = _vocab().itos[4:]
    return Vocab(list(_vocab().itos[:4]) + [w.upper() + "x" for w in words])


def _pretrained_copy(t: Path):
    """A two-layer Transformer written by save_pretrained into ``t`` with its manifest entry."""
    import json

    from utils.pretrained import MANIFEST, save_pretrained

    tf = _tf()
    files = save_pretrained(t, "tiny", "transformer", tf, vars(tf.cfg), _vocab(), _vocab(),
                            recipe={"beam": 2, "length_penalty": 0.6})
    (t / MANIFEST).write_text(json.dumps({"tiny": {"files": files, "bleu": 0.0}}))
    return t


def _rewrite_manifest(t: Path):
    import json

    from utils.data import _sha256
    from utils.pretrained import MANIFEST

    m = json.loads((t / MANIFEST).read_text())
    for f in m["tiny"]["files"]:
        m["tiny"]["files"][f] = dict(sha256=_sha256(t / f), bytes=(t / f).stat().st_size)
    (t / MANIFEST).write_text(json.dumps(m))


def _load_from(t: Path):
    import os

    from utils.pretrained import load_pretrained

    old = os.environ.get("COURSE_PRETRAINED_DIR")
    os.environ["COURSE_PRETRAINED_DIR"] = str(t)
    try:
        return load_pretrained("tiny")
    finally:
        if old is None:
            os.environ.pop("COURSE_PRETRAINED_DIR")
        else:
            os.environ["COURSE_PRETRAINED_DIR"] = old


def _damaged_pretrained():
    t = _pretrained_copy(_tmp())
    f = t / "tiny.safetensors"
    data = bytearray(f.read_bytes())
    for i in range(len(data) - 64, len(data) - 48):
        data[i] ^= 0x5A
    f.write_bytes(bytes(data))
    _rewrite_manifest(t)  # someone "fixed" the checksum error by writing the manifest again
    return _load_from(t)


def _swapped_pretrained_vocab():
    import json

    t = _pretrained_copy(_tmp())
    meta = json.loads((t / "tiny.json").read_text())
    meta["src_vocab"] = meta["tgt_vocab"] = _vocab_other().to_list()
    (t / "tiny.json").write_text(json.dumps(meta))
    _rewrite_manifest(t)
    return _load_from(t)


# --------------------------------------------------------------------------- sorting the outcomes


def classify(p: Probe) -> tuple[str, str]:
    """("clear" | "obscure" | "silent", the message)."""
    named = re.compile(rf"(?<![\w.]){re.escape(p.arg)}(?!\w)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            p.call()
        except Exception as e:  # noqa: BLE001
            frames = traceback.extract_tb(e.__traceback__)
            inside = bool(frames) and f"{ROOT.name}/utils/" in frames[-1].filename.replace("\\", "/") \
                or bool(frames) and "/utils/" in frames[-1].filename and "site-packages" not in frames[-1].filename
            msg = f"{type(e).__name__}: {e}"
            return ("clear" if inside and named.search(str(e)) else "obscure"), msg
    ours = [w for w in caught if named.search(str(w.message))]  # (a warning points at the caller's line)
    if ours:
        return "clear", f"warning: {ours[0].message}"
    return "silent", ""


def table(verbose: bool = False) -> dict[str, int]:
    counts = {"clear": 0, "obscure": 0, "silent": 0}
    by_kind: dict[str, dict[str, int]] = {}
    for p in probes():
        outcome, msg = classify(p)
        counts[outcome] += 1
        by_kind.setdefault(p.kind, {"clear": 0, "obscure": 0, "silent": 0})[outcome] += 1
        if verbose or outcome != "clear":
            print(f"{outcome:<8} {p.kind:<16} {p.name}\n{'':<8} {msg[:300]}")
    print()
    for kind, c in by_kind.items():
        print(f"{kind:<18} clear {c['clear']:>3}  obscure {c['obscure']:>3}  silent {c['silent']:>3}")
    n = sum(counts.values())
    print(f"{'all':<18} clear {counts['clear']:>3}  obscure {counts['obscure']:>3}  silent {counts['silent']:>3}"
          f"   ({n} probes, {100 * counts['clear'] / n:.0f} % clear)")
    return counts


if __name__ == "__main__":
    torch.set_num_threads(1)
    table(verbose="--verbose" in sys.argv)
