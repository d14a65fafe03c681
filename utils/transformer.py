"""The Transformer of "Attention Is All You Need", small and readable.

Top to bottom:

- :class:`TransformerConfig` holds every size (defaults: the paper's base model);
- :class:`FeedForward` is the position-wise network ``W2 · relu(W1 x + b1) + b2``;
- :class:`EncoderLayer` = self-attention, feed-forward; :class:`DecoderLayer` = masked
  self-attention, cross-attention over the encoder output, feed-forward. Every sub-layer
  is wrapped in a residual connection and a LayerNorm: post-LN ``norm(x + f(x))`` as in the
  paper, or pre-LN ``x + f(norm(x))`` with ``pre_norm=True`` (the stacks then end with one
  more LayerNorm, as ``nn.Transformer(norm_first=True)`` does);
- :class:`Encoder`, :class:`Decoder` stack N layers; :class:`Transformer` adds token
  embeddings × √d_model, sinusoidal positions, dropout, and the output projection;
- :func:`greedy_decode` and :func:`beam_search` generate with a key/value cache: at step t
  only the new token goes through the decoder, at position t, and its keys and values are
  appended to those already computed;
- :func:`parameter_breakdown` counts parameters per component (shared tensors once);
- :class:`EncoderTagger` is the encoder alone with a read-out at every position, for
  synthetic tasks such as sorting (notebook 07 trains it with and without a warm-up).

Masks follow :mod:`utils.attention`: boolean, True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from utils import checks
from utils.checks import Float, Ids, Tensor, contract
from utils.attention import MultiHeadAttention, causal_mask, check_mask, key_padding_mask, scaled_dot_product_attention
from utils.positional import SinusoidalPositionalEncoding
from utils.text import PairBatch, check_ids

__all__ = [
    "TransformerConfig",
    "FeedForward",
    "EncoderLayer",
    "DecoderLayer",
    "Encoder",
    "Decoder",
    "Transformer",
    "EncoderTagger",
    "greedy_decode",
    "beam_search",
    "parameter_breakdown",
    "load_from_torch",
    "translation_loss",
    "make_decode_fn",
    "attention_maps",
]

Cache = list[dict[str, torch.Tensor]]  # one dict per decoder layer: self_k, self_v, cross_k, cross_v


@dataclass
class TransformerConfig:
    """Sizes of an encoder-decoder Transformer; the defaults are the paper's base model."""

    src_vocab: int
    tgt_vocab: int
    d_model: int = 512
    num_heads: int = 8
    d_ff: int = 2048
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    dropout: float = 0.1
    max_len: int = 512
    pre_norm: bool = False         # False: post-LN, as in the paper
    share_embeddings: bool = False  # one embedding table for source and target (needs one vocabulary)
    tie_output: bool = False        # output projection = target embedding matrix
    pad_id: int = 0

    def __post_init__(self) -> None:
        checks.sizes(**{name: getattr(self, name) for name in ("src_vocab", "tgt_vocab", "d_model", "num_heads", "d_ff",
                                                              "max_len")})
        for name in ("num_encoder_layers", "num_decoder_layers"):
            checks.integer(getattr(self, name), name, minimum=0)
        checks.probability(self.dropout, "dropout")
        checks.index(self.pad_id, "pad_id", min(self.src_vocab, self.tgt_vocab),
                     of=f"the vocabularies (src_vocab={self.src_vocab}, tgt_vocab={self.tgt_vocab})")
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by num_heads ({self.num_heads})")
        if self.share_embeddings and self.src_vocab != self.tgt_vocab:
            raise ValueError(f"share_embeddings needs src_vocab == tgt_vocab, got {self.src_vocab} and {self.tgt_vocab}")


class FeedForward(nn.Module):
    """Position-wise feed-forward network: the same two-layer MLP at every position,
    (B, T, d_model) -> (B, T, d_ff) -> (B, T, d_model). Parameters: 2·d·d_ff + d_ff + d."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.d_model = d_model
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    @contract
    def forward(self, x: Float["... d_model"]) -> Float["... d_model"]:
        return self.linear2(self.dropout(F.relu(self.linear1(x))))


def _attend(attn: MultiHeadAttention, q_in: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
            mask: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """The second half of ``attn``: queries from ``q_in`` (B, Tq, D) against keys and values that
    are already projected and split into heads, (B, H, Tk, d_k). Used with the cache."""
    q = attn.split_heads(attn.q_proj(q_in))  # (B, H, Tq, d_k)
    out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=attn.dropout if attn.training else 0.0)
    return attn.out_proj(attn.merge_heads(out)), weights  # (B, Tq, D), (B, H, Tq, Tk)


class EncoderLayer(nn.Module):
    """Self-attention over the source, then the feed-forward network; each in residual + LayerNorm."""

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, pre_norm: bool = False):
        super().__init__()
        self.pre_norm, self.d_model, self.num_heads = pre_norm, d_model, num_heads
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    @contract(rules=lambda self, x, src_mask: _source_mask(self.num_heads, x.shape[0], x.shape[1], x.shape[1], src_mask,
                                                           x.device))
    def forward(self, x: Float["B S d_model"], src_mask: Tensor["..."] | None = None) -> Float["B S d_model"]:
        """x (B, S, D); src_mask bool broadcastable to (B, H, S, S), e.g. key_padding_mask(src)."""
        if self.pre_norm:
            h = self.norm1(x)
            x = x + self.dropout(self.self_attn(h, h, h, src_mask, need_weights=False)[0])
            return x + self.dropout(self.ff(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x, src_mask, need_weights=False)[0]))
        return self.norm2(x + self.dropout(self.ff(x)))


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder output (``memory``), feed-forward.

    With ``cache`` (a dict, empty at the first step), the keys and values of the self-attention
    are appended to ``cache["self_k"/"self_v"]`` and those of the cross-attention are computed
    once and kept in ``cache["cross_k"/"cross_v"]``; ``x`` then holds only the new positions.
    The last cross-attention weights (B, H, T, S) are kept in ``self.cross_weights``.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, dropout: float = 0.1, pre_norm: bool = False):
        super().__init__()
        self.pre_norm, self.d_model, self.num_heads = pre_norm, d_model, num_heads
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = nn.LayerNorm(d_model), nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.cross_weights: torch.Tensor | None = None

    def _self_attention(self, x: torch.Tensor, mask: torch.Tensor | None, cache: dict | None) -> torch.Tensor:
        a = self.self_attn
        if cache is None:
            return a(x, x, x, mask, need_weights=False)[0]  # fused kernel; attention_maps() can still get the weights
        k, v = a.split_heads(a.k_proj(x)), a.split_heads(a.v_proj(x))  # (B, H, T_new, d_k)
        if "self_k" in cache:
            k, v = torch.cat([cache["self_k"], k], dim=2), torch.cat([cache["self_v"], v], dim=2)
        cache["self_k"], cache["self_v"] = k, v
        return _attend(a, x, k, v, mask)[0]

    def _cross_attention(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None, cache: dict | None) -> torch.Tensor:
        a = self.cross_attn
        if cache is None:
            out, w = a(x, memory, memory, mask)
        else:
            if "cross_k" not in cache:  # the encoder output does not change while decoding
                cache["cross_k"], cache["cross_v"] = a.split_heads(a.k_proj(memory)), a.split_heads(a.v_proj(memory))
            out, w = _attend(a, x, cache["cross_k"], cache["cross_v"], mask)
        self.cross_weights = w.detach()
        return out

    def _rules(self, x, memory, tgt_mask, src_mask, cache) -> None:
        seen = cache["self_k"].shape[2] if cache and "self_k" in cache else 0
        try:
            if tgt_mask is not None:
                check_mask(tgt_mask, (x.shape[0], self.num_heads, x.shape[1], seen + x.shape[1]), "tgt_mask", x.device)
            _source_mask(self.num_heads, x.shape[0], x.shape[1], memory.shape[1], src_mask, x.device)
        except ValueError as e:
            raise ValueError(f"{e} ({_MASK_SIDES})") from None

    @contract(rules=_rules)
    def forward(self, x: Float["B T d_model"], memory: Float["B S d_model"], tgt_mask: Tensor["..."] | None = None,
                src_mask: Tensor["..."] | None = None, cache: dict | None = None) -> Float["B T d_model"]:
        """x (B, T, D) target side, memory (B, S, D) encoder output; tgt_mask broadcastable to
        (B, H, T, T_total) (causal), src_mask to (B, H, T, S) (source padding)."""
        if self.pre_norm:
            x = x + self.dropout(self._self_attention(self.norm1(x), tgt_mask, cache))
            x = x + self.dropout(self._cross_attention(self.norm2(x), memory, src_mask, cache))
            return x + self.dropout(self.ff(self.norm3(x)))
        x = self.norm1(x + self.dropout(self._self_attention(x, tgt_mask, cache)))
        x = self.norm2(x + self.dropout(self._cross_attention(x, memory, src_mask, cache)))
        return self.norm3(x + self.dropout(self.ff(x)))


class Encoder(nn.Module):
    """N encoder layers (plus a final LayerNorm when pre-LN, whose residual stream is never normalised otherwise)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        checks.config(cfg, TransformerConfig)
        self.layers = nn.ModuleList(
            EncoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.dropout, cfg.pre_norm) for _ in range(cfg.num_encoder_layers)
        )
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.pre_norm else nn.Identity()
        self.cfg = cfg

    @contract(rules=lambda self, x, src_mask: _source_mask(self.cfg.num_heads, x.shape[0], x.shape[1], x.shape[1], src_mask,
                                                           x.device))
    def forward(self, x: Float["B S d_model"], src_mask: Tensor["..."] | None = None) -> Float["B S d_model"]:
        for layer in self.layers:
            x = layer(x, src_mask)
        return self.norm(x)


class Decoder(nn.Module):
    """N decoder layers (plus a final LayerNorm when pre-LN)."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        checks.config(cfg, TransformerConfig)
        self.layers = nn.ModuleList(
            DecoderLayer(cfg.d_model, cfg.num_heads, cfg.d_ff, cfg.dropout, cfg.pre_norm) for _ in range(cfg.num_decoder_layers)
        )
        self.norm = nn.LayerNorm(cfg.d_model) if cfg.pre_norm else nn.Identity()
        self.cfg = cfg

    @contract(rules=lambda self, x, memory, src_mask, cache, offset: (checks.integer(offset, "offset", minimum=0), _sides(
        _source_mask, self.cfg.num_heads, x.shape[0], x.shape[1], memory.shape[1], src_mask, x.device)))
    def forward(self, x: Float["B T d_model"], memory: Float["B S d_model"], src_mask: Tensor["..."] | None = None,
                cache: Cache | None = None, offset: int = 0) -> Float["B T d_model"]:
        """x (B, T, D) holds target positions offset .. offset+T-1; each may attend to every earlier one."""
        tgt_mask = causal_mask(x.shape[1], offset + x.shape[1], device=x.device)[None, None]  # (1, 1, T, offset+T)
        for i, layer in enumerate(self.layers):
            x = layer(x, memory, tgt_mask, src_mask, None if cache is None else cache[i])
        return self.norm(x)


def _reset_parameters(model: nn.Module, d_model: int) -> None:
    """Xavier-uniform for every matrix except the embeddings (``*embed*``), which get N(0, 1/d_model)."""
    for name, p in model.named_parameters():
        if p.dim() > 1 and "embed" not in name:
            nn.init.xavier_uniform_(p)
    for m in {id(m): m for m in model.modules() if isinstance(m, nn.Embedding)}.values():
        nn.init.normal_(m.weight, std=d_model ** -0.5)


_MASK_SIDES = ("tgt_mask's queries and keys are x's T positions, src_mask's queries x's T and its keys memory's S: "
               "x (B, T, d_model) and memory (B, S, d_model) in that order")


def _sides(rule, *args) -> None:
    """``rule(*args)``, its ValueError saying which sizes a decoder's masks take from x and from memory."""
    try:
        rule(*args)
    except ValueError as e:
        raise ValueError(f"{e} ({_MASK_SIDES})") from None


def _source_mask(num_heads: int, B: int, T: int, S: int, src_mask: torch.Tensor | None, device) -> None:
    """The mask rule for a source mask given by the caller: (B, H, T, S) scores, True = may attend."""
    if src_mask is not None:
        check_mask(src_mask, (B, num_heads, T, S), "src_mask", device)


def _check_source(model: nn.Module, src: torch.Tensor, name: str = "src") -> None:
    """The value rules for source ids at a door: inside the vocabulary, right-padded, inside max_len."""
    cfg = model.cfg
    check_ids(src, cfg.src_vocab, f"{name}, the source ids")
    checks.right_padded(src, cfg.pad_id, name)
    checks.positions(name, src.shape[1], 0, cfg.max_len, f"TransformerConfig(max_len={cfg.max_len})")


def _check_target(model: nn.Module, tgt: torch.Tensor, name: str, offset: int = 0) -> None:
    """The value rules for target ids at a door: inside the vocabulary, inside max_len from ``offset``."""
    cfg = model.cfg
    check_ids(tgt, cfg.tgt_vocab, f"{name}, the target ids")
    checks.positions(name, tgt.shape[1], offset, cfg.max_len, f"TransformerConfig(max_len={cfg.max_len})")


class Transformer(nn.Module):
    """Encoder-decoder Transformer: ids in, next-token logits out."""

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = checks.config(cfg, TransformerConfig)
        self.src_embed = nn.Embedding(cfg.src_vocab, cfg.d_model)
        self.tgt_embed = self.src_embed if cfg.share_embeddings else nn.Embedding(cfg.tgt_vocab, cfg.d_model)
        self.pos = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)
        self.reset_parameters()
        if cfg.tie_output:
            self.out_proj.weight = self.tgt_embed.weight

    def reset_parameters(self) -> None:
        """Xavier-uniform for every matrix (as ``nn.Transformer``); embeddings N(0, 1/d_model),
        so that after the × √d_model their entries have variance 1, like the positions."""
        _reset_parameters(self, self.cfg.d_model)

    def src_mask(self, src: torch.Tensor) -> torch.Tensor:
        """(B, 1, 1, S) bool, True at real source tokens."""
        return key_padding_mask(src, self.cfg.pad_id)

    def embed(self, emb: nn.Embedding, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """(B, T) ids -> (B, T, D): embedding × √d_model + sinusoidal position, then dropout (behind the door:
        :meth:`encode`, :meth:`decode` and :meth:`forward` have checked ``ids``)."""
        return self.dropout(self.pos(emb(ids) * math.sqrt(self.cfg.d_model), offset=offset))

    def _encode_rules(self, src, src_mask) -> None:
        _check_source(self, src)
        _source_mask(self.cfg.num_heads, src.shape[0], src.shape[1], src.shape[1], src_mask, src.device)

    @contract(rules=_encode_rules)
    def encode(self, src: Ids["B S"], src_mask: Tensor["..."] | None = None) -> Float["B S d_model"]:
        """src (B, S) ids -> memory (B, S, D). ``src_mask`` defaults to the padding of ``src``."""
        x = self.embed(self.src_embed, src)                      # (B, S, D)
        return self.encoder(x, self.src_mask(src) if src_mask is None else src_mask)

    def _decode_rules(self, tgt, memory, src_mask, cache, offset) -> None:
        offset = checks.integer(offset, "offset", minimum=0)
        _check_target(self, tgt, "tgt", offset)
        _source_mask(self.cfg.num_heads, tgt.shape[0], tgt.shape[1], memory.shape[1], src_mask, tgt.device)
        if cache is not None and cache[0].get("self_k") is not None and cache[0]["self_k"].shape[2] != offset:
            raise ValueError(f"offset={offset}, but the cache already holds positions 0..{cache[0]['self_k'].shape[2] - 1}: "
                             f"the new tokens must start at position {cache[0]['self_k'].shape[2]}")

    @contract(rules=_decode_rules, hint="memory is encode(src), (B, S, d_model), for the same batch as tgt")
    def decode(self, tgt: Ids["B T"], memory: Float["B S d_model"], src_mask: Tensor["..."] | None,
               cache: Cache | None = None, offset: int = 0) -> Float["B T tgt_vocab"]:
        """tgt (B, T) ids at positions offset .. offset+T-1 -> logits (B, T, V). With a cache
        (from :meth:`new_cache`), ``tgt`` holds only the tokens not yet seen and ``offset`` is
        how many were."""
        x = self.decoder(self.embed(self.tgt_embed, tgt, offset), memory, src_mask, cache, offset)  # (B, T, D)
        return self.out_proj(x)                                                                     # (B, T, V)

    def _rules(self, src, tgt_in) -> None:
        _check_source(self, src)
        _check_target(self, tgt_in, "tgt_in")
        checks.right_padded(tgt_in, self.cfg.pad_id, "tgt_in")

    @contract(rules=_rules, hint="src and tgt_in hold the same B sentences, each (B, length): one of them given as "
                                 "(length, B)? pass it transposed, x.T")
    def forward(self, src: Ids["B S"], tgt_in: Ids["B T"]) -> Float["B T tgt_vocab"]:
        """src (B, S), tgt_in (B, T) (target shifted right, starting with <bos>) -> logits (B, T, V)."""
        src_mask = self.src_mask(src)                                  # (B, 1, 1, S)
        return self.decode(tgt_in, self.encode(src, src_mask), src_mask)

    def new_cache(self) -> Cache:
        """An empty key/value cache, one dict per decoder layer."""
        return [{} for _ in self.decoder.layers]

    def cross_attention(self) -> torch.Tensor:
        """Last decoder layer's cross-attention weights from the latest decode, averaged over heads: (B, T, S)."""
        return self.decoder.layers[-1].cross_weights.mean(dim=1)


class EncoderTagger(nn.Module):
    """The encoder alone, with a linear read-out at every position: (B, S) ids -> (B, S, tgt_vocab) logits.

    The source half of :class:`Transformer` (embeddings × √d_model, sinusoidal positions, dropout,
    ``cfg.num_encoder_layers`` encoder layers, post- or pre-LN from ``cfg.pre_norm``) and an output
    projection to ``cfg.tgt_vocab`` labels, initialised as :class:`Transformer`; the decoder sizes of
    ``cfg`` are not used. For synthetic tasks that label every position, such as sorting a sequence:
    notebook 07 trains it with and without a learning-rate warm-up.
    """

    def __init__(self, cfg: TransformerConfig):
        super().__init__()
        self.cfg = checks.config(cfg, TransformerConfig)
        self.src_embed = nn.Embedding(cfg.src_vocab, cfg.d_model)
        self.pos = SinusoidalPositionalEncoding(cfg.d_model, cfg.max_len)
        self.dropout = nn.Dropout(cfg.dropout)
        self.encoder = Encoder(cfg)
        self.out_proj = nn.Linear(cfg.d_model, cfg.tgt_vocab, bias=False)
        _reset_parameters(self, cfg.d_model)

    @contract(rules=Transformer._encode_rules)
    def forward(self, src: Ids["B S"], src_mask: Tensor["..."] | None = None) -> Float["B S tgt_vocab"]:
        """src (B, S) ids -> logits (B, S, tgt_vocab). ``src_mask`` defaults to the padding of ``src``
        (``cfg.pad_id``); the logits at padded positions are computed but mean nothing."""
        if src_mask is None:
            src_mask = key_padding_mask(src, self.cfg.pad_id)                        # (B, 1, 1, S)
        x = self.dropout(self.pos(self.src_embed(src) * math.sqrt(self.cfg.d_model)))  # (B, S, D)
        return self.out_proj(self.encoder(x, src_mask))                                # (B, S, tgt_vocab)


# --------------------------------------------------------------------------- generation


def _reorder(cache: Cache, index: torch.Tensor) -> None:
    for layer in cache:
        for key in layer:
            layer[key] = layer[key].index_select(0, index)


def _check_model(model: object) -> None:
    """A TypeError unless ``model`` is a :class:`Transformer` (or has its encode/decode/new_cache/cfg)."""
    if not all(hasattr(model, a) for a in ("encode", "decode", "new_cache", "cfg")):
        hint = ("; for utils.rnn's Seq2Seq use utils.rnn's greedy_decode, beam_search and make_decode_fn"
                if hasattr(model, "encoder") and hasattr(model, "decoder") else "")
        raise TypeError(f"model must be a utils.transformer.Transformer, got {type(model).__name__}{hint}")


def _check_decode_args(model: Transformer, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int,
                       beam_size: int = 1, length_penalty: float = 0.6, **_) -> None:
    """The rules for the arguments of :func:`greedy_decode` and :func:`beam_search`, at their door."""
    checks.integer(beam_size, "beam_size", minimum=1, what="the hypotheses kept at every step")
    checks.number(length_penalty, "length_penalty", at_least=0.0, what="GNMT's alpha: 0 = none, 0.6 usual")
    _check_model(model)
    _check_max_len(model, max_len)
    checks.integer(bos_id, "bos_id"), checks.integer(eos_id, "eos_id")
    check_ids(bos_id, model.cfg.tgt_vocab, "bos_id")  # (an eos_id outside the vocabulary is allowed: it never ends a sentence)
    _check_source(model, src)
    empty = (~(src != model.cfg.pad_id).any(1)).nonzero().flatten().tolist()
    if empty:
        raise ValueError(f"every sentence in src needs at least one real token; row(s) {empty[:10]} hold only "
                         f"<pad> (id {model.cfg.pad_id}): there is nothing to translate, so leave them out")


def _check_max_len(model: Transformer, max_len: object) -> int:
    """``max_len`` (the most tokens to generate) as an int in 1 .. the model's positions (``cfg.max_len``):
    output token t sits at position t, so a longer ``max_len`` is refused here, naming it, and not by
    the positional table midway (which only happens when a sentence runs that long)."""
    max_len = checks.integer(max_len, "max_len", minimum=1, what="the most tokens to generate")
    if max_len > model.cfg.max_len:
        raise ValueError(f"max_len={max_len} (the most tokens to generate) is more than this model can place: it has "
                         f"positions for {model.cfg.max_len} tokens (TransformerConfig(max_len={model.cfg.max_len})); "
                         f"pass max_len <= {model.cfg.max_len}")
    return max_len


@contract(rules=_check_decode_args)
@torch.no_grad()
def greedy_decode(model: Transformer, src: Ids["B S"], max_len: int, bos_id: int, eos_id: int, *,
                  use_cache: bool = True, return_attention: bool = False, return_logits: bool = False):
    """Translate a (B, S) batch by taking the most likely token at every step.

    Returns one list of token ids per sentence (without <bos> and <eos>). With
    ``return_attention``, also one (len, S) tensor per sentence: the last decoder layer's
    cross-attention (averaged over heads) when each output token was chosen (the <eos>
    step included, so len = tokens + 1 if it stopped). With ``return_logits``, also the
    (B, steps, V) logits of every step. ``use_cache=False`` recomputes the whole prefix at
    every step (slow; for checking the cache). A sentence of only ``<pad>`` is a ValueError; an
    empty batch (B = 0) gives ``[]``. The model is run in eval mode and left in the mode it was in.
    """
    max_len = int(max_len)
    was_training = model.training
    model.eval()
    try:
        return _greedy(model, src, max_len, bos_id, eos_id, use_cache, return_attention, return_logits)
    finally:
        model.train(was_training)


def _greedy(model: Transformer, src: torch.Tensor, max_len: int, bos_id: int, eos_id: int, use_cache: bool,
            return_attention: bool, return_logits: bool):
    B = src.shape[0]
    src_mask = model.src_mask(src)
    memory = model.encode(src, src_mask)  # (B, S, D)
    ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
    cache = model.new_cache() if use_cache else None
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    all_logits, attn = [], []
    for t in range(max_len):
        if use_cache:
            logits = model.decode(ys[:, -1:], memory, src_mask, cache, offset=t)[:, -1]  # (B, V)
        else:
            logits = model.decode(ys, memory, src_mask)[:, -1]
        all_logits.append(logits)
        attn.append(model.cross_attention()[:, -1])  # (B, S)
        nxt = logits.argmax(-1).masked_fill(done, eos_id)  # finished sentences keep emitting <eos>
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == eos_id
        if done.all():
            break
    tokens, weights = [], []
    attn_t = torch.stack(attn, dim=1)  # (B, steps, S)
    for b in range(B):
        seq = ys[b, 1:].tolist()
        n = seq.index(eos_id) if eos_id in seq else len(seq)
        tokens.append(seq[:n])
        weights.append(attn_t[b, : min(n + 1, len(seq))])
    out = [tokens]
    if return_attention:
        out.append(weights)
    if return_logits:
        out.append(torch.stack(all_logits, dim=1))
    return tokens if len(out) == 1 else tuple(out)


def _length_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + length) / 6)^alpha: scores are divided by it, so alpha > 0 favours longer outputs."""
    return ((5.0 + length) / 6.0) ** alpha


@torch.no_grad()
def _beam_one(model: Transformer, src: torch.Tensor, beam_size: int, max_len: int, bos_id: int, eos_id: int,
              length_penalty: float) -> tuple[list[int], torch.Tensor]:
    """Beam search for one sentence, src (1, S). Returns (tokens, cross-attention (len, S))."""
    src_mask = model.src_mask(src)
    memory = model.encode(src, src_mask)  # (1, S, D)
    cache = model.new_cache()
    tokens = [[]]                                     # live hypotheses (without <bos>)
    attns = [src.new_zeros((0, src.shape[1]), dtype=memory.dtype)]
    scores = torch.zeros(1, device=src.device)        # summed log-probabilities, (n_live,)
    last = torch.full((1, 1), bos_id, dtype=torch.long, device=src.device)
    finished: list[tuple[float, list[int], torch.Tensor]] = []
    for t in range(max_len):
        n = last.shape[0]
        logp = model.decode(last, memory.expand(n, -1, -1), src_mask.expand(n, -1, -1, -1), cache, offset=t)[:, -1].log_softmax(-1)
        step_attn = model.cross_attention()[:, -1]    # (n, S)
        cand = (scores[:, None] + logp).flatten()     # (n·V,)
        top_scores, top_idx = cand.topk(min(2 * beam_size, cand.numel()))
        V = logp.shape[-1]
        keep_beam, keep_tok, keep_score = [], [], []
        for rank, (s, i) in enumerate(zip(top_scores.tolist(), top_idx.tolist())):
            beam, tok = divmod(i, V)
            if tok == eos_id:
                if rank < beam_size:  # an <eos> only ends a hypothesis if it is among the best beam_size
                    hyp = tokens[beam]
                    att = torch.cat([attns[beam], step_attn[beam:beam + 1]])
                    finished.append((s / _length_penalty(len(hyp) + 1, length_penalty), hyp, att))
                continue
            keep_beam.append(beam), keep_tok.append(tok), keep_score.append(s)
            if len(keep_beam) == beam_size:
                break
        if len(finished) >= beam_size or not keep_beam:
            break
        index = torch.tensor(keep_beam, device=src.device)
        attns = [torch.cat([attns[b], step_attn[b:b + 1]]) for b in keep_beam]
        tokens = [tokens[b] + [tok] for b, tok in zip(keep_beam, keep_tok)]
        scores = torch.tensor(keep_score, device=src.device)
        last = torch.tensor(keep_tok, device=src.device)[:, None]
        _reorder(cache, index)
    else:  # max_len reached: unfinished hypotheses compete as they are
        for s, hyp, att in zip(scores.tolist(), tokens, attns):
            finished.append((s / _length_penalty(len(hyp), length_penalty), hyp, att))
    best = max(finished, key=lambda f: f[0])
    return best[1], best[2]


@contract(rules=_check_decode_args)
@torch.no_grad()
def beam_search(model: Transformer, src: Ids["B S"], beam_size: int, max_len: int, bos_id: int, eos_id: int,
                length_penalty: float = 0.6, return_attention: bool = False):
    """Beam search with GNMT's length penalty, one sentence of the (B, S) batch at a time
    (padding is masked, so a padded sentence gives what it gives alone). A hypothesis ends
    when <eos> is among the ``beam_size`` best continuations; the search stops when
    ``beam_size`` hypotheses have ended or after ``max_len`` steps. Returns token-id lists
    (without <bos>/<eos>), plus per-sentence cross-attention (len, S) with ``return_attention``.
    The model is run in eval mode and left in the mode it was in."""
    beam_size, max_len = int(beam_size), int(max_len)
    was_training = model.training
    model.eval()
    try:
        results = [_beam_one(model, src[b:b + 1], beam_size, max_len, bos_id, eos_id, length_penalty) for b in range(src.shape[0])]
    finally:
        model.train(was_training)
    tokens = [r[0] for r in results]
    return (tokens, [r[1] for r in results]) if return_attention else tokens


# --------------------------------------------------------------------------- translation glue


def translation_loss(model: Transformer, batch: PairBatch, label_smoothing: float = 0.0) -> torch.Tensor:
    """Teacher forcing on a :class:`~utils.text.PairBatch`: feed ``<bos> y1 .. y(n-1)``, predict
    ``y1 .. yn <eos>`` at every position at once; ``<pad>`` targets are ignored. The model's own door
    checks ``batch.src`` and the target inputs."""
    _check_model(model)
    checks.batch_of_pairs(batch, "batch")
    checks.training_mode(model, "model", model.cfg.dropout)
    tgt = checks.ids(batch.tgt, "batch.tgt")      # any integer dtype, as torch.long (cross_entropy needs it)
    logits = model(batch.src, tgt[:, :-1])        # (B, T-1, V); checks every target id but the last
    check_ids(tgt[:, -1], model.cfg.tgt_vocab, "batch.tgt (the targets)")
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt[:, 1:].reshape(-1),
                           ignore_index=model.cfg.pad_id, label_smoothing=label_smoothing)


def make_decode_fn(model: Transformer, method: str = "greedy", beam_size: int = 4, length_penalty: float = 0.6,
                   max_len: int | None = None, bos_id: int = 2, eos_id: int = 3):
    """A ``decode_fn(batch) -> list of id lists`` for :mod:`utils.translation`. Outputs are
    at most ``max_len`` tokens (default: 2 × the batch's source length + 10, capped at the model's
    ``cfg.max_len`` positions; a larger ``max_len`` passed here is refused)."""
    _check_model(model)
    if method not in ("greedy", "beam"):
        raise ValueError(f"method must be 'greedy' or 'beam', got {method!r}")
    if method == "beam":   # greedy ignores it (a recipe passes 0 for "no beam search")
        checks.integer(beam_size, "beam_size", minimum=1)
        checks.number(length_penalty, "length_penalty", at_least=0.0, what="GNMT's alpha: 0 = none, 0.6 usual")
    if max_len is not None:
        _check_max_len(model, max_len)

    def decode(batch) -> list[list[int]]:
        src = batch.src.to(next(model.parameters()).device)  # (B, S)
        n = max_len if max_len is not None else min(2 * batch.src.shape[1] + 10, model.cfg.max_len)
        if method == "greedy":
            return greedy_decode(model, src, n, bos_id, eos_id)
        return beam_search(model, src, beam_size, n, bos_id, eos_id, length_penalty)

    decode.model = model  # (utils.translation.translate compares the data's vocabularies with the model's)
    return decode


@contract(trust_callees=False)  # the model's own door checks the ids' values
@torch.no_grad()
def attention_maps(model: Transformer, src: Ids["B S"], tgt_in: Ids["B T"]) -> dict[str, torch.Tensor]:
    """Run one teacher-forced forward pass and return every attention map, per layer and head:
    ``"encoder"`` (L, B, H, S, S) encoder self-attention, ``"decoder"`` (L, B, H, T, T) masked
    decoder self-attention, ``"cross"`` (L, B, H, T, S) decoder-over-encoder attention.
    ``tgt_in`` starts with <bos> (e.g. <bos> + a translation), as in training."""
    maps: dict[str, list[torch.Tensor]] = {"encoder": [], "decoder": [], "cross": []}
    handles = []

    def want_weights(module, args, kwargs):  # whatever the layer asked for, keep the weights
        return args, {**kwargs, "need_weights": True}

    def keep(kind):
        return lambda module, args, output: maps[kind].append(output[1])

    for layer in model.encoder.layers:
        handles.append(layer.self_attn.register_forward_pre_hook(want_weights, with_kwargs=True))
        handles.append(layer.self_attn.register_forward_hook(keep("encoder")))
    for layer in model.decoder.layers:
        for attn, kind in ((layer.self_attn, "decoder"), (layer.cross_attn, "cross")):
            handles.append(attn.register_forward_pre_hook(want_weights, with_kwargs=True))
            handles.append(attn.register_forward_hook(keep(kind)))
    was_training = model.training
    model.eval()
    try:
        model(src, tgt_in)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    return {kind: torch.stack(ws) for kind, ws in maps.items()}


# --------------------------------------------------------------------------- parameters and nn.Transformer


def parameter_breakdown(model: Transformer) -> dict[str, int]:
    """Parameters per component, each tensor counted once (the first component that holds it):
    ``embeddings`` (source and target tables), ``encoder``, ``decoder``, ``output`` (0 when tied),
    ``total``."""
    seen: set[int] = set()

    def count(*modules: nn.Module) -> int:
        n = 0
        for m in modules:
            for p in m.parameters():
                if id(p) not in seen:
                    seen.add(id(p))
                    n += p.numel()
        return n

    parts = {
        "embeddings": count(model.src_embed, model.tgt_embed),
        "encoder": count(model.encoder),
        "decoder": count(model.decoder),
        "output": count(model.out_proj),
    }
    parts["total"] = sum(parts.values())
    return parts


@torch.no_grad()
def _copy_layer(ours: nn.Module, theirs: nn.Module) -> None:
    ours.self_attn.load_from_torch(theirs.self_attn)
    if hasattr(theirs, "multihead_attn"):
        ours.cross_attn.load_from_torch(theirs.multihead_attn)
        ours.norm3.load_state_dict(theirs.norm3.state_dict())
    ours.ff.linear1.load_state_dict(theirs.linear1.state_dict())
    ours.ff.linear2.load_state_dict(theirs.linear2.state_dict())
    ours.norm1.load_state_dict(theirs.norm1.state_dict())
    ours.norm2.load_state_dict(theirs.norm2.state_dict())


@torch.no_grad()
def load_from_torch(model: Transformer, ref: nn.Transformer) -> Transformer:
    """Copy the layer weights of an ``nn.Transformer`` of the same sizes into ``model``'s stacks.

    ``nn.Transformer`` has no embeddings or output layer (those are left alone), and it always
    ends each stack with a LayerNorm; ours does so only with pre-LN, where that norm is copied.
    With post-LN its extra final norms have no counterpart here (2 × 2·d_model parameters)."""
    if len(ref.encoder.layers) != len(model.encoder.layers) or len(ref.decoder.layers) != len(model.decoder.layers):
        raise ValueError("nn.Transformer and our model must have the same number of encoder and decoder layers")
    for ours, theirs in zip(model.encoder.layers, ref.encoder.layers):
        _copy_layer(ours, theirs)
    for ours, theirs in zip(model.decoder.layers, ref.decoder.layers):
        _copy_layer(ours, theirs)
    if model.cfg.pre_norm:
        model.encoder.norm.load_state_dict(ref.encoder.norm.state_dict())
        model.decoder.norm.load_state_dict(ref.decoder.norm.state_dict())
    return model
