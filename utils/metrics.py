"""Scores for sequence models: BLEU (through sacrebleu), token accuracy, exact match.

Two BLEU numbers are reported across the course, so results can be compared both
with published tutorials and with papers:

- :func:`bleu` — sacreBLEU on detokenized text, the standard, reproducible score
  (its signature is in ``BLEUScore.signature``).
- :func:`tokenized_bleu` — corpus BLEU-4 on our own lower-cased word tokens with
  no further tokenization, the metric bentrevett/pytorch-seq2seq reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from utils import checks

__all__ = ["BLEUScore", "bleu", "tokenized_bleu", "token_accuracy", "exact_match"]


@dataclass(frozen=True)
class BLEUScore:
    score: float       # 0-100
    signature: str     # sacrebleu's description of how it was computed
    precisions: tuple  # 1- to 4-gram precisions, %
    brevity_penalty: float

    def __float__(self) -> float:
        return self.score

    def __str__(self) -> str:
        return f"BLEU = {self.score:.2f} ({self.signature})"


def _check_pairs(hypotheses: Sequence, references: Sequence) -> None:
    if isinstance(hypotheses, str) or isinstance(references, str):
        raise TypeError("bleu expects lists of sentences, got a single str")
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references; they must pair up")
    if len(hypotheses) == 0:
        raise ValueError("no sentences to score")


def _check_sentences(sentences: Sequence, name: str, tokens: bool) -> None:
    """Every sentence is a list of str tokens (``tokens=True``) or one str; the error names the first that is not."""
    for i, sent in enumerate(sentences):
        if not tokens and not isinstance(sent, str):
            raise TypeError(f"bleu expects one str per sentence, but {name}[{i}] is a {type(sent).__name__}; join tokens "
                            f"with utils.text.detokenize(), or score lists of tokens with tokenized_bleu()")
        if tokens and not isinstance(sent, (list, tuple)):
            raise TypeError(f"tokenized_bleu expects lists of tokens per sentence, but {name}[{i}] is a "
                            f"{type(sent).__name__} ({str(sent)[:40]!r}); tokenize it with utils.text.tokenize(), or "
                            f"score plain strings with bleu()")
        bad = next((t for t in sent if not isinstance(t, str)), None) if tokens else None
        if bad is not None:
            raise TypeError(f"tokenized_bleu expects str tokens, but {name}[{i}] holds {bad!r} "
                            f"({type(bad).__name__}); turn ids into tokens with vocab.decode() first")


def _run(hyps: list[str], refs: list[str], **kwargs) -> BLEUScore:
    import sacrebleu

    metric = sacrebleu.metrics.BLEU(**kwargs)
    res = metric.corpus_score(hyps, [refs])
    return BLEUScore(res.score, str(metric.get_signature()), tuple(res.precisions), res.bp)


def bleu(hypotheses: Sequence[str], references: Sequence[str]) -> BLEUScore:
    """sacreBLEU (13a tokenization, case-sensitive) of detokenized sentences against one reference each."""
    _check_pairs(hypotheses, references)
    _check_sentences(hypotheses, "hypotheses", tokens=False)
    _check_sentences(references, "references", tokens=False)
    return _run(list(hypotheses), list(references))


def tokenized_bleu(hypotheses: Sequence[Sequence[str]], references: Sequence[Sequence[str]]) -> BLEUScore:
    """Corpus BLEU-4 of token lists against one token list each, as given (no
    re-tokenization). Feed it lower-cased tokens from :func:`utils.text.tokenize`."""
    _check_pairs(hypotheses, references)
    _check_sentences(hypotheses, "hypotheses", tokens=True)
    _check_sentences(references, "references", tokens=True)
    return _run([" ".join(h) for h in hypotheses], [" ".join(r) for r in references], tokenize="none", force=True)


def _accuracy_rules(logits_or_pred, target, mask) -> None:
    logits = logits_or_pred.dim() == target.dim() + 1
    if logits_or_pred.is_floating_point():
        checks.finite(logits_or_pred, "logits_or_pred", allow_neg_inf=True)
    if logits and not logits_or_pred.is_floating_point():
        raise TypeError(f"logits_or_pred of shape {tuple(logits_or_pred.shape)} has one dim more than target, so it "
                        f"must be float logits (B, T, V), got dtype {logits_or_pred.dtype}; predicted ids are (B, T)")
    if not logits and logits_or_pred.is_floating_point():
        raise TypeError(f"logits_or_pred of shape {tuple(logits_or_pred.shape)}, the shape of target, must be predicted "
                        f"ids (B, T), got dtype {logits_or_pred.dtype}; logits are (B, T, V): take .argmax(-1) or pass them whole")
    pred_shape = logits_or_pred.shape[:-1] if logits_or_pred.dim() == target.dim() + 1 else logits_or_pred.shape
    if pred_shape != target.shape:
        layout = (f"; logits_or_pred looks like cross_entropy's (B, V, T) layout: pass logits.transpose(1, 2)"
                  if logits_or_pred.dim() == 3 and logits_or_pred.shape[0] == target.shape[0]
                  and logits_or_pred.shape[2] == target.shape[1] else
                  "; sequences padded to different lengths are not aligned position by position: pad both to one "
                  "length (or compare the unpadded sequences)" if pred_shape[:-1] == target.shape[:-1] else "")
        raise ValueError(f"logits_or_pred gives predictions of shape {tuple(pred_shape)} but target has shape "
                         f"{tuple(target.shape)}: predictions and targets must have the same shape (B, T){layout}")
    if target.numel() and int(target.min()) < 0:
        raise ValueError(f"target holds the id {int(target.min())}; ids are >= 0 (leave positions out with mask=, "
                         f"not with -1 or -100)")
    if logits and target.numel():
        checks.vocab_ids(target, logits_or_pred.shape[-1], "target")
    if mask is not None:
        if mask.shape != target.shape:
            raise ValueError(f"mask must be bool of shape {tuple(target.shape)}, got {mask.dtype} {tuple(mask.shape)}")
        if bool(mask.any()) and not bool((mask & (target != 0)).any()) and bool((target != 0).any()):
            raise ValueError("mask selects only <pad> targets (id 0): it looks like True = padding (ids == pad); the "
                             "mask here is True at the positions that count: pass target != pad, or ~mask")


@checks.contract(rules=_accuracy_rules, neg_inf=("logits_or_pred",))
def token_accuracy(logits_or_pred: checks.Tensor["B T ..."], target: checks.Ids["B T"],
                   mask: checks.Bool["B T"] | None = None) -> float:
    """Fraction of positions where the prediction equals the target.

    ``logits_or_pred`` is (B, T, V) logits or (B, T) predicted ids; ``target`` is
    (B, T) ids; ``mask`` (B, T) bool, True at positions that count (pads excluded).
    """
    pred = logits_or_pred.argmax(-1) if logits_or_pred.dim() == target.dim() + 1 else logits_or_pred
    correct = pred == target
    if mask is None:
        return correct.float().mean().item()
    n = mask.sum().item()
    if n == 0:
        raise ValueError("mask selects no positions")
    return (correct & mask).sum().item() / n


def exact_match(predictions: Sequence[Sequence], targets: Sequence[Sequence]) -> float:
    """Fraction of sequences predicted exactly, token for token."""
    _check_pairs(predictions, targets)
    if all(isinstance(x, torch.Tensor) and x.dim() == 2 for x in (predictions, targets)) \
            and predictions.shape[1] != targets.shape[1]:
        raise ValueError(f"predictions {tuple(predictions.shape)} and targets {tuple(targets.shape)} are padded to "
                         f"different lengths: compared row by row as lists, every padded row would differ; compare "
                         f"the unpadded sequences (e.g. vocab.decode(row) or greedy_decode's lists), or pad both alike")
    return sum(list(p) == list(t) for p, t in zip(predictions, targets)) / len(targets)
