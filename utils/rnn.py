"""Recurrent sequence-to-sequence translation, with and without attention.

Equations (numbering of the course's source, seed 000):

- encoder     h_i = f_enc(x_i, h_{i-1})                   (2.1)
- decoder     s_t = f_dec(y_{t-1}, s_{t-1}, c),   c = h_S  (2.2)   no attention (S: source length)
- attention   e_{t,i} = score(s_{t-1}, h_i),  a_t = softmax(e_t)        (2.3)
              c_t = sum_i a_{t,i} h_i                                   (2.4)
              s_t = f_dec(y_{t-1}, s_{t-1}, c_t)                        (2.5)

Padding never leaks: the encoder runs on packed sequences (a pad is never fed to
the RNN, and the context c is the state after each sentence's real last token),
and attention weights are exactly 0 on padded source positions.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from . import checks
from .attention import refuse_inverted
from .checks import Bool, Float, Ids, Tensor, contract
from .text import PairBatch, check_ids
from .training import to_device
from .translation import TranslationData

__all__ = [
    "Encoder", "EncoderOutput", "Score", "CosineScore", "AdditiveScore", "DotScore", "ScaledDotScore",
    "SCORES", "make_score", "masked_softmax", "attend", "Decoder", "Seq2Seq", "seq2seq_loss",
    "greedy_decode", "beam_search", "Hypothesis", "make_decode_fn", "alignment", "inversions", "train_toy_reverser",
]

PAD_ID, BOS_ID, EOS_ID = 0, 2, 3


def _check_ids_mask(ids: torch.Tensor, mask: torch.Tensor, name: str) -> torch.Tensor:
    """The value rule of a right-padded (B, T) id batch and its bool mask (their shapes and dtypes were
    checked at the door): every row has a real token and its mask is True on a prefix; returns the lengths (B,)."""
    lengths = mask.sum(1)
    if bool((lengths == 0).any()):
        raise ValueError(f"every sentence in {name} needs at least one real token (a row of {name}_mask is all False)")
    right_padded = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths[:, None]
    if not torch.equal(right_padded, mask):
        raise ValueError(f"{name}_mask must be True on a prefix of each row (right padding, True = real token)")
    return lengths


def _source_rules(model: nn.Module, src: torch.Tensor, src_mask: torch.Tensor, vocab_size: int,
                  decoding: bool = False) -> None:
    if src.shape[0] == 0 and not decoding:
        raise ValueError("src holds no sentence (B=0): the encoder has nothing to read; greedy_decode and beam_search "
                         "decode an empty batch to []")
    _check_ids_mask(src, src_mask, "src")
    check_ids(src, vocab_size, "src")


# --------------------------------------------------------------------------- #
# Encoder (Cho et al., 2014; Bahdanau et al., 2015, section 3.2)
# --------------------------------------------------------------------------- #

class EncoderOutput(NamedTuple):
    states: torch.Tensor   # (B, S, D_enc) h_1..h_S, zeros at pads
    context: torch.Tensor  # (B, D_enc)    state at each sentence's real last token
    mask: torch.Tensor     # (B, S) bool   True = real source token


class Encoder(nn.Module):
    """Embedding + GRU/LSTM over a padded batch, run as packed sequences.

    With ``bidirectional=True`` each h_i is [forward state; backward state] and the
    context is [forward state after the last real token; backward state after the
    first token], so ``out_dim = 2 * hidden_dim``.
    """

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int, cell: str = "gru",
                 bidirectional: bool = False, dropout: float = 0.0, pad_id: int = PAD_ID):
        super().__init__()
        if cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cell!r}")
        vocab_size, emb_dim, hidden_dim = checks.sizes(vocab_size=vocab_size, emb_dim=emb_dim, hidden_dim=hidden_dim)
        pad_id = checks.index(pad_id, "pad_id", vocab_size)
        checks.probability(dropout)
        self.cell, self.bidirectional = cell, bidirectional
        self.out_dim = hidden_dim * (2 if bidirectional else 1)
        self.embed = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.dropout = nn.Dropout(dropout)
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(emb_dim, hidden_dim, batch_first=True, bidirectional=bidirectional)

    @contract(rules=lambda self, src, src_mask: _source_rules(self, src, src_mask, self.embed.num_embeddings))
    def forward(self, src: Ids["B S"], src_mask: Bool["B S"]) -> EncoderOutput:
        """src (B, S) right-padded ids (any integer dtype), src_mask (B, S) bool, True at real tokens."""
        lengths = src_mask.sum(1)                                                 # (B,)
        x = self.dropout(self.embed(src))                                         # (B, S, D_emb)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, h_n = self.rnn(packed)
        if self.cell == "lstm":
            h_n = h_n[0]                                                          # keep h, drop the cell state
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])  # (B, S, D_enc)
        context = torch.cat(list(h_n), dim=-1)                                    # (B, D_enc)
        return EncoderOutput(states, context, src_mask)


# --------------------------------------------------------------------------- #
# Score functions and attention (Bahdanau et al., 2015, eqs. 5-6)
# --------------------------------------------------------------------------- #

class Score(nn.Module):
    """score(s_{t-1}, h_i) for every i at once: query (B, Dq), keys (B, S, Dk) -> (B, S).

    ``prepare(keys)`` does the part that depends on the keys only, once per
    sentence (the additive score's W h); ``forward`` receives its result.
    """

    def __init__(self, query_dim: int, key_dim: int):
        super().__init__()
        self.query_dim, self.key_dim = checks.sizes(query_dim=query_dim, key_dim=key_dim)

    def prepare(self, keys: torch.Tensor) -> torch.Tensor | None:
        return None


class _SameDim(Score):
    def __init__(self, query_dim: int, key_dim: int):
        if query_dim != key_dim:
            raise ValueError(f"{type(self).__name__} compares s and h directly, so they need the same size; "
                             f"got query_dim={query_dim}, key_dim={key_dim} (make the encoder's out_dim "
                             f"equal the decoder's hidden size, or use the additive score)")
        super().__init__(query_dim, key_dim)


class DotScore(_SameDim):
    """e_i = s · h_i."""

    @contract
    def forward(self, query: Float["B query_dim"], keys: Float["B S key_dim"],
                prepared: Tensor["B S D_a"] | None = None) -> Float["B S"]:
        return torch.einsum("bd,bsd->bs", query, keys)


class ScaledDotScore(_SameDim):
    """e_i = s · h_i / sqrt(D): the dot score with its spread kept near 1."""

    @contract
    def forward(self, query: Float["B query_dim"], keys: Float["B S key_dim"],
                prepared: Tensor["B S D_a"] | None = None) -> Float["B S"]:
        return torch.einsum("bd,bsd->bs", query, keys) / math.sqrt(self.key_dim)


class CosineScore(_SameDim):
    """Content-based: e_i = beta * cos(s, h_i). A cosine lies in [-1, 1], too flat for a
    softmax to pick one position, so a learned sharpness ``beta`` (starting at
    ``init_beta``) multiplies it, as in content-based addressing (Graves et al., 2014)."""

    def __init__(self, query_dim: int, key_dim: int, init_beta: float = 5.0):
        super().__init__(query_dim, key_dim)
        self.beta = nn.Parameter(torch.tensor(float(init_beta)))

    @contract
    def forward(self, query: Float["B query_dim"], keys: Float["B S key_dim"],
                prepared: Tensor["B S D_a"] | None = None) -> Float["B S"]:
        return self.beta * F.cosine_similarity(query[:, None, :], keys, dim=-1, eps=1e-6)


class AdditiveScore(Score):
    """Bahdanau's score: e_i = v^T tanh(U s + W h_i), a one-hidden-layer MLP on [s; h_i]."""

    def __init__(self, query_dim: int, key_dim: int, attn_dim: int | None = None):
        super().__init__(query_dim, key_dim)
        attn_dim = query_dim if attn_dim is None else checks.sizes(attn_dim=attn_dim)[0]
        self.U = nn.Linear(query_dim, attn_dim, bias=False)
        self.W = nn.Linear(key_dim, attn_dim)
        self.v = nn.Linear(attn_dim, 1, bias=False)

    def prepare(self, keys):
        return self.W(keys)                                                       # (B, S, D_a)

    @contract
    def forward(self, query: Float["B query_dim"], keys: Float["B S key_dim"],
                prepared: Tensor["B S D_a"] | None = None) -> Float["B S"]:
        wh = self.W(keys) if prepared is None else prepared                       # (B, S, D_a)
        return self.v(torch.tanh(self.U(query)[:, None, :] + wh)).squeeze(-1)    # (B, S)


SCORES = {"cosine": CosineScore, "additive": AdditiveScore, "dot": DotScore, "scaled_dot": ScaledDotScore}


def make_score(name: str, query_dim: int, key_dim: int) -> Score:
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {sorted(SCORES)}")
    return SCORES[name](query_dim, key_dim)


def _softmax_rules(scores, mask, check_convention) -> None:
    if mask.shape != scores.shape:
        raise ValueError(f"mask must be bool of shape {tuple(scores.shape)} (True = may attend), "
                         f"got {mask.dtype} of shape {tuple(mask.shape)}")
    if check_convention and mask.dim() >= 1:
        refuse_inverted(mask[..., None, :], 1, mask.shape[-1], "mask",
                        build="src != pad (pad_sequences' mask, True at real tokens)")


@contract(rules=_softmax_rules, neg_inf=("scores",))
def masked_softmax(scores: Float["... S"], mask: Bool["... S"], *, check_convention: bool = True) -> Float["... S"]:
    """Softmax over the last dim counting only positions where ``mask`` is True;
    the weights at masked positions are exactly 0, and a row with no True position
    gets all-zero weights (not NaN), as in :mod:`utils.attention`.

    ``mask`` is True = may attend (real source token). Sources are right-padded, so every sentence
    starts with a real token: a mask that is False at the first position of every row, such as
    ``ids == pad`` (nn.MultiheadAttention's True = padding) or one False everywhere, is refused by
    :func:`utils.attention.refuse_inverted` (one reduction; the :class:`Decoder`, whose mask the
    encoder already checked, passes ``check_convention=False`` at every step)."""
    empty = ~mask.any(-1, keepdim=True)                                          # rows with nothing to attend to
    weights = scores.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0).softmax(-1)
    return weights.masked_fill(~mask, 0.0)


def _attend_rules(score, query, keys, mask, prepared, check_convention) -> None:
    if check_convention:
        refuse_inverted(mask[:, None, :], 1, mask.shape[-1], "mask", build="src != pad (pad_sequences' mask, True at real tokens)")


@contract(rules=_attend_rules)
def attend(score: Score, query: Float["B Dq"], keys: Float["B S Dk"], mask: Bool["B S"],
           prepared: Tensor["B S D_a"] | None = None, *, check_convention: bool = True) -> tuple[Float["B Dk"], Float["B S"]]:
    """Bahdanau et al. (2015), eqs. 5-6: weights a (B, S) over the real positions and context c = sum_i a_i h_i (B, Dk).
    ``mask`` (B, S) is True at real source tokens; an inverted one (``ids == pad``) is refused, see
    :func:`masked_softmax`."""
    weights = masked_softmax(score(query, keys, prepared), mask, check_convention=check_convention)  # (B, S)
    context = torch.einsum("bs,bsd->bd", weights, keys)                          # (B, Dk)
    return context, weights


# --------------------------------------------------------------------------- #
# Decoder (a fixed context without attention; Bahdanau et al., 2015, eq. 4 with it)
# --------------------------------------------------------------------------- #

class Decoder(nn.Module):
    """s_t = f_dec([emb(y_{t-1}); c_t], s_{t-1}); logits = Linear([s_t; c_t; emb(y_{t-1})]).

    Without a score (``score=None``) c_t = c, the encoder's context, for every t
    (the plain encoder-decoder). With one, c_t is recomputed from s_{t-1} at every step (Bahdanau et al., 2015, eqs. 4-6).
    The first state is s_0 = tanh(W_init c).
    """

    def __init__(self, vocab_size: int, emb_dim: int, hidden_dim: int, enc_dim: int, cell: str = "gru",
                 score: Score | None = None, dropout: float = 0.0, pad_id: int = PAD_ID):
        super().__init__()
        if cell not in ("gru", "lstm"):
            raise ValueError(f"cell must be 'gru' or 'lstm', got {cell!r}")
        vocab_size, emb_dim, hidden_dim, enc_dim = checks.sizes(vocab_size=vocab_size, emb_dim=emb_dim,
                                                                hidden_dim=hidden_dim, enc_dim=enc_dim)
        pad_id = checks.index(pad_id, "pad_id", vocab_size)
        checks.probability(dropout)
        self.cell, self.hidden_dim, self.enc_dim, self.score = cell, hidden_dim, enc_dim, score
        self.embed = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.dropout = nn.Dropout(dropout)
        self.init_state = nn.Linear(enc_dim, hidden_dim)
        if score is None:  # c is fixed, so the whole sequence can go through cuDNN/MKL's RNN in one call
            rnn = nn.GRU if cell == "gru" else nn.LSTM
            self.rnn = rnn(emb_dim + enc_dim, hidden_dim, batch_first=True)
        else:  # c_t changes with s_{t-1}: one cell step at a time
            self.rnn = nn.GRUCell(emb_dim + enc_dim, hidden_dim) if cell == "gru" else nn.LSTMCell(emb_dim + enc_dim, hidden_dim)
        self.out = nn.Linear(hidden_dim + enc_dim + emb_dim, vocab_size)

    def start(self, enc: EncoderOutput):
        """s_0 from the context (for an LSTM, the cell state starts at zero)."""
        s0 = torch.tanh(self.init_state(enc.context))                            # (B, D)
        return s0 if self.cell == "gru" else (s0, torch.zeros_like(s0))

    def _top(self, state) -> torch.Tensor:
        return state if self.cell == "gru" else state[0]                         # (B, D)

    def _run_sequence(self, x: torch.Tensor, state):
        """nn.GRU/nn.LSTM over (B, T, in) from a cell-shaped state; returns (B, T, H) and the state."""
        if self.cell == "gru":
            s, h = self.rnn(x, state[None])
            return s, h[0]
        s, (h, c) = self.rnn(x, (state[0][None], state[1][None]))
        return s, (h[0], c[0])

    def _rules(self, tgt_in, enc, state) -> None:
        if tgt_in.shape[0] != enc.states.shape[0]:
            raise ValueError(f"tgt_in must be (B, T) with B={enc.states.shape[0]} like the source, got {tuple(tgt_in.shape)}")
        check_ids(tgt_in, self.embed.num_embeddings, "tgt_in")

    @contract(rules=_rules)
    def forward(self, tgt_in: Ids["B T"], enc: EncoderOutput, state: Float["B D"] | tuple | None = None):
        """Teacher forcing: y_{t-1} is the reference's previous token.
        Returns logits (B, T, V), the final state and weights (B, T, S) (or None)."""
        state = self.start(enc) if state is None else state
        emb = self.dropout(self.embed(tgt_in))                                   # (B, T, D_emb)
        if self.score is None:  # c is the same at every step: run the RNN over the whole sequence
            c = enc.context[:, None, :].expand(-1, tgt_in.shape[1], -1)          # (B, T, D_enc)
            s, state = self._run_sequence(torch.cat([emb, c], -1), state)        # (B, T, D)
            return self.out(torch.cat([s, c, emb], -1)), state, None
        prepared = self.score.prepare(enc.states)
        outs, cs, weights = [], [], []
        for t in range(tgt_in.shape[1]):  # c_t needs s_{t-1}: one step at a time
            c, a = attend(self.score, self._top(state), enc.states, enc.mask, prepared,
                          check_convention=False)  # (B, D_enc), (B, S): the encoder checked enc.mask
            state = self.rnn(torch.cat([emb[:, t], c], -1), state)               # (B, D)
            outs.append(self._top(state)), cs.append(c), weights.append(a)
        s, c = torch.stack(outs, 1), torch.stack(cs, 1)                           # (B, T, D), (B, T, D_enc)
        return self.out(torch.cat([s, c, emb], -1)), state, torch.stack(weights, 1)

    def step(self, y_prev: torch.Tensor, state, enc: EncoderOutput, prepared=None):
        """One decoding step from tokens y_{t-1} (B,): log-probs (B, V), new state, weights (B, S) or None."""
        if self.score is None:
            logits, state, w = self.forward(y_prev[:, None], enc, state)
            logits = logits[:, 0]                                                # (B, V)
        else:
            logits, state, w = self._attn_step(y_prev, state, enc, prepared)
        return logits.log_softmax(-1), state, w

    def _attn_step(self, y_prev, state, enc, prepared):
        emb = self.embed(y_prev)                                                 # (B, D_emb)
        c, a = attend(self.score, self._top(state), enc.states, enc.mask, prepared, check_convention=False)
        state = self.rnn(torch.cat([emb, c], -1), state)
        return self.out(torch.cat([self._top(state), c, emb], -1)), state, a


class Seq2Seq(nn.Module):
    """Encoder + decoder. ``attention=None`` gives the plain encoder-decoder; a score
    name (``"additive"``, ``"dot"``, ``"scaled_dot"``, ``"cosine"``) gives Bahdanau-style attention.

    ``enc_hidden`` is per direction; with ``bidirectional=True`` and
    ``enc_hidden = dec_hidden // 2`` the h_i have the decoder's size, as the dot and
    cosine scores need.
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, emb_dim: int = 256, enc_hidden: int = 256,
                 dec_hidden: int = 256, cell: str = "gru", bidirectional: bool = False,
                 attention: str | None = None, dropout: float = 0.0):
        super().__init__()
        # named as passed here (not as Encoder and Decoder call them); plain ints for the saved config
        src_vocab_size, tgt_vocab_size, emb_dim, enc_hidden, dec_hidden = checks.sizes(
            src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, emb_dim=emb_dim, enc_hidden=enc_hidden,
            dec_hidden=dec_hidden)
        checks.probability(dropout)
        self.config = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, emb_dim=emb_dim,
                           enc_hidden=enc_hidden, dec_hidden=dec_hidden, cell=cell, bidirectional=bidirectional,
                           attention=attention, dropout=dropout)
        self.encoder = Encoder(src_vocab_size, emb_dim, enc_hidden, cell, bidirectional, dropout)
        enc_dim = self.encoder.out_dim
        score = None if attention is None else make_score(attention, dec_hidden, enc_dim)
        self.decoder = Decoder(tgt_vocab_size, emb_dim, dec_hidden, enc_dim, cell, score, dropout)

    @contract(rules=lambda self, src, src_mask: _source_rules(self, src, src_mask, self.encoder.embed.num_embeddings))
    def encode(self, src: Ids["B S"], src_mask: Bool["B S"]) -> EncoderOutput:
        return self.encoder(src, src_mask)

    def _rules(self, src, src_mask, tgt_in) -> None:
        _source_rules(self, src, src_mask, self.encoder.embed.num_embeddings)
        check_ids(tgt_in, self.decoder.embed.num_embeddings, "tgt_in")

    @contract(rules=_rules, hint="tgt_in holds the same sentences as src, (B, T) with the source's B")
    def forward(self, src: Ids["B S"], src_mask: Bool["B S"], tgt_in: Ids["B T"]):
        """Teacher-forced logits (B, T, V) and attention weights (B, T, S) or None."""
        logits, _, weights = self.decoder(tgt_in, self.encode(src, src_mask))
        return logits, weights


def seq2seq_loss(model: Seq2Seq, batch: PairBatch, label_smoothing: float = 0.0) -> torch.Tensor:
    """Teacher forcing: feed <bos> y_1 .. y_{n-1}, predict y_1 .. y_n <eos>; pads are ignored."""
    checks.batch_of_pairs(batch, "batch")
    if isinstance(model, Seq2Seq):
        checks.training_mode(model, "model", model.config["dropout"])
    tgt = checks.ids(batch.tgt, "batch.tgt")                                    # any integer dtype -> long
    logits, _ = model(batch.src, batch.src_mask, tgt[:, :-1])                    # (B, T-1, V)
    check_ids(tgt[:, -1], logits.shape[-1], "batch.tgt (the targets)")          # the others were checked as inputs
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),
                           ignore_index=PAD_ID, label_smoothing=label_smoothing)


# --------------------------------------------------------------------------- #
# Decoding
# --------------------------------------------------------------------------- #

def _max_lens(src_len: torch.Tensor, max_len: int | None) -> list[int]:
    """Output length limit per sentence: ``max_len``, or by default 2 * source length + 10."""
    return [max_len if max_len is not None else 2 * int(n) + 10 for n in src_len]


def _check_decode_args(model: Seq2Seq, src: torch.Tensor, src_mask: torch.Tensor, max_len: int | None,
                       bos_id: int, beam_size: int = 1, alpha: float = 1.0, **_) -> None:
    """Clear errors for the arguments shared by :func:`greedy_decode` and :func:`beam_search`."""
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"model must be a utils.rnn.Seq2Seq, got {type(model).__name__}"
                        + ("; for the Transformer use utils.transformer's greedy_decode and beam_search"
                           if hasattr(model, "cfg") else ""))
    checks.integer(beam_size, "beam_size", minimum=1, what="the hypotheses kept at every step")
    checks.number(alpha, "alpha", at_least=0.0, what="the length normalisation's exponent: 0 = none, 1 = per token")
    _source_rules(model, src, src_mask, model.encoder.embed.num_embeddings, decoding=True)
    if max_len is not None:
        checks.integer(max_len, "max_len", what="the most tokens to generate")
    if max_len is not None and max_len < 1:
        raise ValueError(f"max_len must be >= 1 (the most tokens to generate), or None for 2 × source length + 10; "
                         f"got {max_len}")
    check_ids(bos_id, model.decoder.embed.num_embeddings, "bos_id")  # (an eos_id outside it never ends a sentence)


@contract(rules=_check_decode_args)
@torch.no_grad()
def greedy_decode(model: Seq2Seq, src: Ids["B S"], src_mask: Bool["B S"], max_len: int | None = None,
                  bos_id: int = BOS_ID, eos_id: int = EOS_ID) -> tuple[list[list[int]], list[torch.Tensor | None]]:
    """Pick the most probable token at every step until ``<eos>`` (or ``max_len`` tokens).

    Returns per sentence the ids (ending with ``<eos>`` if it was produced, without
    ``<bos>``) and the attention weights (n_out, S_real) of every step (None without attention).
    An empty batch (B = 0) gives ``([], [])``.
    """
    if src.shape[0] == 0:
        return [], []
    was_training = model.training
    model.eval()
    enc = model.encode(src, src_mask)
    dec = model.decoder
    prepared = dec.score.prepare(enc.states) if dec.score is not None else None
    B, lengths = src.shape[0], src_mask.sum(1)
    state = dec.start(enc)
    y = torch.full((B,), bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    limits = _max_lens(lengths, max_len)
    too_long = torch.tensor(limits, device=src.device)
    ids, weights = [], []
    for t in range(max(limits)):
        logp, state, a = dec.step(y, state, enc, prepared)
        y = logp.argmax(-1)                                                      # (B,)
        ids.append(y), weights.append(a)
        done = done | (y == eos_id) | (too_long <= t + 1)
        if bool(done.all()):
            break
    ids_t = torch.stack(ids, 1).tolist()                                         # (B, n)
    out_ids, out_w = [], []
    for b in range(B):
        seq = ids_t[b]
        n = min(seq.index(eos_id) + 1 if eos_id in seq else len(seq), limits[b])
        out_ids.append(seq[:n])
        out_w.append(None if weights[0] is None else torch.stack([w[b, : lengths[b]] for w in weights[:n]]))
    model.train(was_training)
    return out_ids, out_w


class Hypothesis(NamedTuple):
    ids: list[int]                 # generated ids (no <bos>)
    logp: float                    # sum of log-probabilities
    weights: list[torch.Tensor]    # attention weights (S_real,) of every step ([] without attention)

    def normalised(self, alpha: float) -> float:
        return self.logp / (len(self.ids) ** alpha)


@contract(rules=_check_decode_args)
@torch.no_grad()
def beam_search(model: Seq2Seq, src: Ids["B S"], src_mask: Bool["B S"], beam_size: int = 5,
                max_len: int | None = None, alpha: float = 1.0, bos_id: int = BOS_ID,
                eos_id: int = EOS_ID) -> tuple[list[list[int]], list[torch.Tensor | None]]:
    """Keep the ``beam_size`` most probable partial translations at every step.

    A hypothesis that produces ``<eos>`` is finished; the search ends when
    ``beam_size`` hypotheses are finished (or after ``max_len`` steps) and returns the
    one with the best length-normalised score log p / length**alpha. Same outputs as
    :func:`greedy_decode` (an empty batch gives ``([], [])``); ``beam_size=1`` gives exactly
    greedy's translation.
    """
    beam_size = int(beam_size)
    was_training = model.training
    model.eval()
    all_ids, all_w = [], []
    for b in range(src.shape[0]):
        n_src = int(src_mask[b].sum())
        ids, w = _beam_one(model, src[b : b + 1, :n_src], src_mask[b : b + 1, :n_src], beam_size,
                           _max_lens(src_mask[b : b + 1].sum(1), max_len)[0], alpha, bos_id, eos_id)
        all_ids.append(ids), all_w.append(w)
    model.train(was_training)
    return all_ids, all_w


def _beam_one(model, src, src_mask, k, max_len, alpha, bos_id, eos_id):
    dec = model.decoder
    enc = model.encode(src, src_mask)
    prepared = dec.score.prepare(enc.states) if dec.score is not None else None
    state = dec.start(enc)
    alive = [Hypothesis([], 0.0, [])]
    y = torch.tensor([bos_id], device=src.device)
    finished: list[Hypothesis] = []
    for _ in range(max_len):
        n = len(alive)
        enc_n = EncoderOutput(*(x.expand(n, *x.shape[1:]) for x in enc))
        prep_n = None if prepared is None else prepared.expand(n, *prepared.shape[1:])
        logp, state, a = dec.step(y, state, enc_n, prep_n)                      # (n, V)
        total = torch.tensor([h.logp for h in alive], device=src.device)[:, None] + logp
        top = total.flatten().topk(min(2 * k, total.numel()))
        keep_rows, new_alive = [], []
        for score, flat in zip(top.values.tolist(), top.indices.tolist()):
            row, tok = divmod(flat, logp.shape[1])
            h = alive[row]
            new = Hypothesis(h.ids + [tok], score, h.weights + ([] if a is None else [a[row]]))
            if tok == eos_id:
                finished.append(new)
            else:
                new_alive.append(new), keep_rows.append(row)
            if len(new_alive) == k:
                break
        if len(finished) >= k or not new_alive:
            break
        rows = torch.tensor(keep_rows, device=src.device)
        state = state[rows] if dec.cell == "gru" else (state[0][rows], state[1][rows])
        alive = new_alive
        y = torch.tensor([h.ids[-1] for h in alive], device=src.device)
    pool = finished or alive
    best = max(pool, key=lambda h: h.normalised(alpha))
    w = torch.stack(best.weights) if best.weights else None
    return best.ids, w


def make_decode_fn(model: Seq2Seq, method: str = "greedy", beam_size: int = 5, alpha: float = 1.0,
                   max_len: int | None = None):
    """A ``decode_fn(batch) -> list of id lists`` for :mod:`utils.translation`."""
    if not isinstance(model, Seq2Seq):
        raise TypeError(f"make_decode_fn expects a utils.rnn.Seq2Seq, got {type(model).__name__}"
                        + ("; for the Transformer use utils.transformer.make_decode_fn" if hasattr(model, "cfg") else ""))
    if method not in ("greedy", "beam"):
        raise ValueError(f"method must be 'greedy' or 'beam', got {method!r}")
    if method == "beam":   # greedy ignores it (a recipe passes 0 for "no beam search")
        checks.integer(beam_size, "beam_size", minimum=1)
    if max_len is not None:
        checks.integer(max_len, "max_len", minimum=1)

    def decode(batch: PairBatch) -> list[list[int]]:
        batch = to_device(batch, next(model.parameters()).device)
        if method == "greedy":
            return greedy_decode(model, batch.src, batch.src_mask, max_len)[0]
        return beam_search(model, batch.src, batch.src_mask, beam_size, max_len, alpha)[0]

    return decode


# --------------------------------------------------------------------------- notebook 03's tools, out of its main line


def alignment(model: Seq2Seq, data: TranslationData, i: int) -> tuple[torch.Tensor, list[str], list[str]]:
    """The attention map of ``model``'s greedy translation of test pair ``i``: ``(weights, output tokens, source
    tokens)``, weights of shape (output tokens, S), one row per word written (``<eos>`` left out), the source
    tokens with ``<bos>`` and ``<eos>`` (notebook 03's maps)."""
    from .text import collate_pairs

    b = to_device(collate_pairs([data.test[i]]), next(model.parameters()).device)
    ids, ws = greedy_decode(model, b.src, b.src_mask)
    if ws[0] is None:
        raise ValueError("model: it has no attention (Seq2Seq(..., attention=None)), so there is no map")
    src_tokens = data.src_vocab.decode(b.src[0], strip_special=False)
    out_tokens = data.tgt_vocab.decode(ids[0])  # stops before <eos>
    return ws[0][: len(out_tokens)], out_tokens, src_tokens


@contract
def inversions(w: Float["n_out S"]) -> int:
    """Pairs of output words whose most-attended source positions come in the opposite order: 0 for a map that
    keeps the source's word order, more the more it crosses."""
    best = w.argmax(1).tolist()
    return sum(best[p] > best[q] for p in range(len(best)) for q in range(p + 1, len(best)))


def train_toy_reverser(attention: str | None, seed: int, train: list[tuple[list[int], list[int]]], test: PairBatch,
                       vocab_size: int, epochs: int = 3) -> tuple[Seq2Seq, float, float | None]:
    """Notebook 03's toy reverser with one score function (``None``: no attention): a bidirectional GRU
    encoder-decoder (embeddings 32, encoder 32 a direction, decoder 64) trained with Adam (3e-3, batches of 64
    shuffled by ``seed``) for ``epochs`` epochs on ``train``; returns ``(model, exact, peak)``: the share of
    ``test``'s sequences decoded greedily exactly right, and the mean largest attention weight (``None`` without
    attention)."""
    from torch.utils.data import DataLoader

    from .metrics import exact_match
    from .text import collate_pairs
    from .training import fit, set_seed

    set_seed(seed)
    m = Seq2Seq(vocab_size, vocab_size, emb_dim=32, enc_hidden=32, dec_hidden=64, bidirectional=True,
                attention=attention).to(test.src.device)
    loader = DataLoader(train, batch_size=64, shuffle=True, collate_fn=collate_pairs,
                        generator=torch.Generator().manual_seed(seed))
    fit(m, seq2seq_loss, loader, torch.optim.Adam(m.parameters(), lr=3e-3), epochs=epochs, progress=False)
    refs = [t[1:] for t in test.tgt.tolist()]   # without <bos>, ending in <eos>
    ids, ws = greedy_decode(m, test.src, test.src_mask)
    exact = exact_match(ids, [r[: r.index(EOS_ID) + 1] for r in refs])
    peak = None if ws[0] is None else torch.cat([w.max(-1).values for w in ws]).mean().item()
    return m, exact, peak
