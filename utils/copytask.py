"""The copy task of notebook 08 and ``scripts/recipes/warmup_optimizers.py``: a small post-LN Transformer
learns to copy sequences of symbols, the quick test bed for optimisers and warm-up.

- :func:`copy_task`: symbols a-j, sequences of 3-10 symbols; 5,000 training pairs and 200 held out;
- :func:`train_copy`: the recipe (batches of 64 drawn with the seed, Adam β = 0.9, 0.98, ε = 1e-9 or
  SGD with momentum 0.9, :func:`utils.schedule.warmup_decay`, gradients clipped at norm 1 by
  :func:`utils.training.fit`);
- :func:`exact_match`: the fraction of pairs whose greedy output is the target.

    >>> train, test, vocab = copy_task(seed=0)
    >>> model, history = train_copy(seed=0, optimizer="adam", lr=3e-3, warmup=True)
    >>> exact_match(model, test, vocab)
"""

from __future__ import annotations

import torch

from .schedule import warmup_decay
from .text import Vocab, collate_pairs, make_sequence_task
from .training import History, fit, set_seed
from .transformer import Transformer, TransformerConfig, greedy_decode, translation_loss

__all__ = ["copy_task", "train_copy", "exact_match", "OPTIMIZERS"]

OPTIMIZERS = ("adam", "sgd")


def copy_task(seed: int, n_train: int = 5000, n_test: int = 200) -> tuple[list, list, Vocab]:
    """(training pairs, held-out pairs, vocabulary); source = symbols + <eos>,
    target = <bos> + symbols + <eos>."""
    src, tgt, vocab = make_sequence_task("copy", n=n_train + n_test, min_len=3, max_len=10, num_symbols=10, seed=seed)
    pairs = list(zip(src, tgt))
    return pairs[:n_train], pairs[n_train:], vocab


def train_copy(seed: int, optimizer: str = "adam", lr: float = 3e-3, warmup: bool = True, steps: int = 200,
               layers: int = 1, d_model: int = 64, batch: int = 64) -> tuple[Transformer, History]:
    """Train a fresh copy-task model (``d_model``, 4 heads, ``d_ff = 2·d_model``, ``layers`` + ``layers``
    post-LN layers, no dropout) for ``steps`` steps; returns (model, History). A run whose loss
    becomes non-finite raises ``FloatingPointError`` (from :func:`utils.training.fit`)."""
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    train, _, vocab = copy_task(seed)
    set_seed(seed)
    cfg = TransformerConfig(len(vocab), len(vocab), d_model=d_model, num_heads=4, d_ff=2 * d_model,
                            num_encoder_layers=layers, num_decoder_layers=layers, dropout=0.0)
    model = Transformer(cfg)
    g = torch.Generator().manual_seed(seed)
    batches = [collate_pairs([train[i] for i in torch.randint(0, len(train), (batch,), generator=g).tolist()])
               for _ in range(steps)]
    if optimizer == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    else:
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, warmup_decay(steps, warmup))
    return model, fit(model, translation_loss, batches, opt, scheduler=sched, progress=False)


def exact_match(model: Transformer, pairs: list, vocab: Vocab, max_len: int = 12) -> float:
    """Fraction of ``pairs`` whose greedy output equals the target (without <bos>/<eos>)."""
    if not pairs:
        raise ValueError("exact_match needs at least one pair")
    out = greedy_decode(model, collate_pairs(pairs).src, max_len, vocab.bos_id, vocab.eos_id)
    return sum(o == t[1:-1] for o, (_, t) in zip(out, pairs)) / len(pairs)
