"""Explorers for notebooks 02-03 (RNN sequence to sequence): plotting functions that a notebook
calls once statically and then offers through :func:`utils.explorers.explore`.

- :func:`plot_context_sensitivity` (02): replace one source word at a time by ``<unk>`` and see how
  far the single context vector c moves, and whether the translation changes: the bottleneck, word by word.
- :func:`plot_alignment` (03): a trained attention model's weights for one held-out sentence, greedy
  or beam search, with the translation and the reference.
"""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import torch

from utils.plotting import plot_attention
from utils.rnn import Seq2Seq, beam_search, greedy_decode
from utils.text import collate_pairs, detokenize, pad_sequences
from utils.translation import TranslationData

__all__ = ["context_sensitivity", "plot_context_sensitivity", "plot_alignment"]

UNK_ID, BOS_ID, EOS_ID = 1, 2, 3


def _device(model: Seq2Seq) -> torch.device:
    return next(model.parameters()).device


def _pick(data: TranslationData, split: str, index: int) -> tuple[list[int], str, str]:
    """Source ids (with <bos>/<eos>), raw source and raw reference of one pair."""
    if split not in data.datasets:
        raise ValueError(f"split must be one of {list(data.datasets)}, got {split!r}")
    n = len(data.datasets[split])
    if not 0 <= index < n:
        raise ValueError(f"index must be in 0..{n - 1} (the {split} set has {n} pairs), got {index}")
    src, _ = data.datasets[split][index]
    raw_src, raw_ref = data.pairs[split][index]
    return list(src), raw_src, raw_ref


def _title(lines: list[str], width: int) -> str:
    return "\n".join(textwrap.fill(line, width, subsequent_indent="      ", break_long_words=False,
                                   break_on_hyphens=False) for line in lines)


@torch.no_grad()
def context_sensitivity(model: Seq2Seq, src_ids, replace_id: int = UNK_ID) -> dict[str, torch.Tensor | None]:
    """How much each source word reaches the context c (notebook 02's bottleneck).

    ``src_ids`` is one sentence ``<bos> w_1 ... w_n <eos>``. For each word w_i, replace it by
    ``replace_id`` (``<unk>``), encode, and measure the relative change ‖c' − c‖ / ‖c‖. Returns
    ``total`` (n,) for the whole c and, for a bidirectional encoder, ``forward`` (n,) and ``backward``
    (n,) for its two halves (the forward state after the last token, the backward state after the
    first); ``None`` for a one-directional encoder. A word that already is ``replace_id`` gets 0.
    """
    ids = src_ids.tolist() if isinstance(src_ids, torch.Tensor) else list(src_ids)
    if len(ids) < 3 or ids[0] != BOS_ID or ids[-1] != EOS_ID:
        raise ValueError(f"src_ids must be one sentence <bos>={BOS_ID} w_1 ... w_n <eos>={EOS_ID} with n >= 1 "
                         f"word, got {ids[:5]}{'...' if len(ids) > 5 else ''}")
    variants = [ids]
    for i in range(1, len(ids) - 1):
        v = list(ids)
        v[i] = replace_id
        variants.append(v)
    src, _, mask = pad_sequences(variants)                                      # (n+1, S)
    was_training = model.training
    model.eval()
    c = model.encode(src.to(_device(model)), mask.to(_device(model))).context.float().cpu()  # (n+1, D)
    model.train(was_training)

    same = torch.tensor(ids[1:-1]) == replace_id                                 # (n,) variant == the sentence

    def rel(part: slice) -> torch.Tensor:  # (n,); exactly 0 where nothing was replaced (not batch rounding)
        return ((c[1:, part] - c[0, part]).norm(dim=1) / c[0, part].norm().clamp_min(1e-12)).masked_fill(same, 0.0)

    out: dict[str, torch.Tensor | None] = {"total": rel(slice(None)), "forward": None, "backward": None}
    if model.encoder.bidirectional:
        half = c.shape[1] // 2
        out["forward"], out["backward"] = rel(slice(None, half)), rel(slice(half, None))
    return out


@torch.no_grad()
def plot_context_sensitivity(model: Seq2Seq, data: TranslationData, index: int = 0, split: str = "test") -> plt.Figure:
    """Bars: for each word of sentence ``index`` of ``split``, how far c moves when that word is
    replaced by ``<unk>`` (:func:`context_sensitivity`; forward and backward halves for a
    bidirectional encoder, the line is the whole c). A triangle marks the words whose replacement
    changes the greedy translation. The title gives the source, the reference and the translation."""
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"model must be a utils.rnn.Seq2Seq, got {type(model).__name__}")
    src, raw_src, raw_ref = _pick(data, split, index)
    sens = context_sensitivity(model, src)
    words = data.src_vocab.decode(src)                                          # w_1 .. w_n, no <bos>/<eos>
    n = len(words)
    variants = [src] + [src[:i] + [UNK_ID] + src[i + 1:] for i in range(1, n + 1)]
    ids, _, mask = pad_sequences(variants)
    dev = _device(model)
    outs, _ = greedy_decode(model, ids.to(dev), mask.to(dev))
    changed = np.array([o != outs[0] for o in outs[1:]])                        # (n,)
    ours = detokenize(data.tgt_vocab.decode(outs[0]))

    x = np.arange(n)
    fig, ax = plt.subplots(figsize=(max(7.0, 0.5 * n + 2.0), 5.0))
    if sens["forward"] is not None:
        ax.bar(x - 0.2, sens["forward"].numpy(), width=0.4, color="C0", label="forward half of c (the state after the last word)")
        ax.bar(x + 0.2, sens["backward"].numpy(), width=0.4, color="C1", label="backward half of c (the state after the first word)")
    total = np.where(np.array(src[1:-1]) == UNK_ID, np.nan, sens["total"].numpy())  # no point where nothing changed
    ax.plot(x, total, "k.-", lw=1, label="whole c")
    top = max(float(max(v.max() for v in sens.values() if v is not None)), 1e-3)
    ax.plot(x[changed], np.full(int(changed.sum()), 1.08 * top), "v", color="C3", ls="none",
            label="replacing it changes the translation")
    ax.set_ylim(0, 1.18 * top)
    ax.set_xticks(x, words, rotation=45, ha="right")
    ax.set_xlabel("source word replaced by <unk>")
    ax.set_ylabel("‖c' − c‖ / ‖c‖")
    ax.grid(alpha=0.3, axis="y")
    fig.legend(fontsize=8, loc="lower center", ncol=2, frameon=False)
    width = int(fig.get_figwidth() * 13)
    ax.set_title(_title([f"{split} #{index}  SRC  {raw_src}", f"REF  {raw_ref}", f"OURS {ours}"], width),
                 fontsize=9, loc="left")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


@torch.no_grad()
def plot_alignment(model: Seq2Seq, data: TranslationData, index: int = 0, beam_size: int = 1,
                   split: str = "test") -> plt.Figure:
    """The attention weights of an attention model translating sentence ``index`` of ``split``:
    rows are the output words, columns the source words (with ``<bos>``/``<eos>``), a circle marks
    each row's most attended word. ``beam_size`` 1 is greedy decoding, more is beam search. The title
    gives the source, the reference, the translation and its mean log-probability per word."""
    if not isinstance(model, Seq2Seq) or model.decoder.score is None:
        raise ValueError("plot_alignment needs a utils.rnn.Seq2Seq with attention (attention='additive', 'dot', ...), "
                         f"got {type(model).__name__}" + ("" if not isinstance(model, Seq2Seq) else " without attention"))
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be an int >= 1 (1 = greedy decoding), got {beam_size!r}")
    src, raw_src, raw_ref = _pick(data, split, index)
    dev = _device(model)
    b = collate_pairs([(src, src)])
    s, m = b.src.to(dev), b.src_mask.to(dev)
    if beam_size == 1:
        ids, ws = greedy_decode(model, s, m)
    else:
        ids, ws = beam_search(model, s, m, beam_size=beam_size)
    ids, w = ids[0], ws[0].float().cpu()                                        # (n_out,), (n_out, S)
    was_training = model.training
    logits, _ = model.eval()(s, m, torch.tensor([[BOS_ID] + ids[:-1]], device=dev))  # teacher-force our own output
    model.train(was_training)
    logp = logits.log_softmax(-1)[0].gather(1, torch.tensor(ids, device=dev)[:, None]).mean().item()

    src_tokens = data.src_vocab.decode(src, strip_special=False)
    out_tokens = [data.tgt_vocab.itos[j] for j in ids]
    fig, ax = plt.subplots(figsize=(max(7.0, 0.42 * len(src_tokens) + 2.5), 0.36 * len(out_tokens) + 2.6))
    plot_attention(w, out_tokens, src_tokens, ax=ax)
    ax.plot(w.argmax(1).numpy(), np.arange(len(out_tokens)), "o", mfc="none", mec="red", ms=9, ls="none")
    ax.set_xlabel("source word (attended to)")
    ax.set_ylabel("output word (being produced)")
    method = "greedy" if beam_size == 1 else f"beam search, k = {beam_size}"
    width = int(fig.get_figwidth() * 12)
    ax.set_title(_title([f"{split} #{index}  SRC  {raw_src}", f"REF  {raw_ref}",
                         f"OURS {detokenize(data.tgt_vocab.decode(ids))}",
                         f"({method}; mean log p per output word {logp:.2f})"], width), fontsize=9, loc="left")
    fig.tight_layout()
    return fig
