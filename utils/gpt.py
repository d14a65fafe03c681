"""A GPT-style decoder-only language model, small and readable (nanoGPT's ``model.py`` is the bar).

Top to bottom:

- :class:`CharTokenizer` maps characters to ids and back (tiny-shakespeare has 65 of them);
- :func:`split_text` cuts one long text into train / validation / **test** parts, in order;
- :func:`get_batch` draws random windows of ``block_size + 1`` tokens: inputs and next-token targets;
- :class:`GPTConfig` holds every size; :class:`Block` is the pre-LN Transformer block of GPT-2:
  ``x + attn(ln1(x))`` with a causal mask, then ``x + mlp(ln2(x))``; the MLP is
  ``Linear(d, 4d) -> GELU -> Linear(4d, d)``;
- :class:`GPT` adds token and learned position embeddings, N blocks, a final LayerNorm and the
  output layer (tied to the token embedding);
- notebook 10's options, all off by default: ``norm="rms"`` (:class:`utils.scale.RMSNorm`),
  ``mlp="swiglu"`` (:class:`utils.scale.SwiGLU`), ``bias=False``, ``pos="sinusoidal"`` or ``"rope"``
  (rotary positions, :func:`utils.scale.apply_rotary`) and ``n_kv_head`` < ``n_head`` (grouped-query
  attention: the cache holds ``n_kv_head`` key/value heads); with all of them it is a LLaMA-style block;
- notebook 09's incremental build (``scripts/recipes/incremental_gpt.py``), all on by default: ``residual=False``
  drops the skip connections (``x = attn(ln1(x))``), ``feed_forward=False`` drops the MLP and its norm,
  ``norm="none"`` drops every LayerNorm;
- :func:`generate` samples with temperature and top-k, with a key/value cache: after the prompt,
  each step feeds one token **at its own position** and appends its keys and values; when the text
  outgrows ``block_size`` the window slides and is recomputed, exactly as without the cache.

Masks follow :mod:`utils.attention`: boolean, True = may attend.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from utils import checks
from utils.checks import Float, Ids, contract
from utils.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention
from utils.positional import sinusoidal_encoding
from utils.scale import GroupedQueryAttention, RMSNorm, SwiGLU, apply_rotary, repeat_kv, rope_angles, swiglu_hidden
from utils.text import check_ids, int_ids

__all__ = ["CharTokenizer", "show_char", "split_text", "get_batch", "GPTConfig", "MLP", "Block", "GPT", "generate",
           "top_k_filter", "sampling_distribution", "estimate_loss", "text_loss", "gpt_parameter_count",
           "matched_swiglu_hidden", "block_from_torch"]


class CharTokenizer:
    """Character-level tokenizer: one id per distinct character of ``text``, in sorted order."""

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"CharTokenizer's text must be a str (the text whose characters are the vocabulary), got "
                            f"{type(text).__name__}" + ("; decode bytes first: text.decode('utf-8')" if isinstance(text, bytes) else ""))
        if not text:
            raise ValueError("CharTokenizer needs a non-empty text to build its vocabulary from")
        self.chars = sorted(set(text))
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, s: str) -> list[int]:
        if not isinstance(s, str):
            raise TypeError(f"CharTokenizer.encode() takes a str, got {type(s).__name__}"
                            + ("; these are bytes: decode them first, s.decode('utf-8')" if isinstance(s, (bytes, bytearray))
                               else "; ids are turned back into text with decode()"))
        unknown = sorted(set(s) - self.stoi.keys())
        if unknown:
            raise ValueError(f"characters not in the vocabulary of {len(self)}: {unknown!r}")
        return [self.stoi[c] for c in s]

    def decode(self, ids) -> str:
        if isinstance(ids, torch.Tensor) and ids.dim() > 1:
            raise ValueError(f"CharTokenizer.decode() takes the ids of one text, 1-D, got ids of shape {tuple(ids.shape)}; "
                             f"decode one row, e.g. tok.decode(ids[0]) (generate returns (B, T))")
        ids = int_ids(ids, "CharTokenizer.decode()")
        bad = [i for i in ids if not 0 <= i < len(self)]
        if bad:
            raise ValueError(f"ids must be in [0, {len(self)}), got {bad[:5]}")
        return "".join(self.chars[i] for i in ids)


def show_char(c: str) -> str:
    """A character as a plot label: a line break as ``\\n``, a space as ``␣``."""
    return {"\n": "\\n", " ": "␣"}.get(c, c)


@contract
def split_text(ids: Ids["N"], val_frac: float = 0.1, test_frac: float = 0.1) -> dict[str, Ids["N"]]:
    """Cut a 1-D tensor of token ids (the whole text, 1-D) into contiguous train / val / test parts (in that
    order), so that no window of the validation or test text was seen in training."""
    if not (0 < val_frac < 1 and 0 < test_frac < 1 and val_frac + test_frac < 1):
        raise ValueError(f"need 0 < val_frac, test_frac and val_frac + test_frac < 1, got {val_frac}, {test_frac}")
    n = len(ids)
    n_train, n_val = int(n * (1 - val_frac - test_frac)), int(n * val_frac)
    parts = {"train": ids[:n_train], "val": ids[n_train:n_train + n_val], "test": ids[n_train + n_val:]}
    empty = [k for k, part in parts.items() if len(part) == 0]
    if empty:
        raise ValueError(f"split_text: the {' and '.join(empty)} part of a text of {n} tokens would be empty "
                         f"(val_frac={val_frac}, test_frac={test_frac}); give a longer text (ids) or larger fractions")
    return parts


def _batch_rules(data: torch.Tensor, block_size: int, batch_size: int, **_) -> None:
    """Whole sizes >= 1, and a text longer than one window."""
    block_size, batch_size = checks.integer(block_size, "block_size"), checks.integer(batch_size, "batch_size")
    if block_size < 1 or batch_size < 1:
        raise ValueError(f"block_size and batch_size must be >= 1, got {block_size} and {batch_size}")
    if len(data) <= block_size:
        raise ValueError(f"the text ({len(data)} tokens) must be longer than block_size ({block_size})")


@contract(rules=_batch_rules)
def get_batch(data: Ids["N"], block_size: int, batch_size: int, generator: torch.Generator | None = None,
              device: torch.device | str | None = None) -> tuple[Ids["B T"], Ids["B T"]]:
    """``batch_size`` random windows: inputs x (B, T) and targets y (B, T), where y[:, t] is the token after x[:, t]."""
    start = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[i:i + block_size] for i in start.tolist()])          # (B, T)
    y = torch.stack([data[i + 1:i + 1 + block_size] for i in start.tolist()])  # (B, T)
    return (x, y) if device is None else (x.to(device), y.to(device))


@dataclass
class GPTConfig:
    vocab_size: int
    block_size: int = 128      # the longest context the model sees
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 128
    dropout: float = 0.0
    # notebook 10's options; the defaults are notebook 09's GPT-2-style model
    norm: str = "layer"        # "layer" (LayerNorm) or "rms" (RMSNorm)
    mlp: str = "gelu"          # "gelu" (Linear 4d, GELU, Linear) or "swiglu"
    bias: bool = True          # biases in the linear layers and norms
    pos: str = "learned"       # "learned", "sinusoidal" (added to the embeddings) or "rope" (rotates q and k)
    n_kv_head: int | None = None  # key/value heads (grouped-query attention); None = n_head
    mlp_hidden: int | None = None  # SwiGLU's hidden width; None = swiglu_hidden(d_model)
    # notebook 09's incremental build: switch pieces of the block off (with norm="none")
    residual: bool = True      # False: x = attn(ln1(x)) and x = mlp(ln2(x)), no skip connections
    feed_forward: bool = True  # False: no MLP (and no second norm) in the block

    def __post_init__(self) -> None:
        checks.sizes(**{name: getattr(self, name) for name in ("vocab_size", "block_size", "n_layer", "n_head", "d_model")})
        checks.probability(self.dropout, "dropout")
        for name in ("n_kv_head", "mlp_hidden"):
            if getattr(self, name) is not None:
                checks.integer(getattr(self, name), name)
        if self.d_model % self.n_head:
            raise ValueError(f"d_model ({self.d_model}) must be divisible by n_head ({self.n_head})")
        for name, allowed in (("norm", ("layer", "rms", "none")), ("mlp", ("gelu", "swiglu")),
                              ("pos", ("learned", "sinusoidal", "rope"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.mlp_hidden is not None and (self.mlp != "swiglu" or self.mlp_hidden < 1):
            raise ValueError(f"mlp_hidden sets SwiGLU's width: it needs mlp='swiglu' and a value >= 1, "
                             f"got mlp={self.mlp!r}, mlp_hidden={self.mlp_hidden}")
        kv = self.kv_heads
        if kv < 1 or self.n_head % kv:
            raise ValueError(f"n_head ({self.n_head}) must be a multiple of n_kv_head ({kv})")
        if self.pos == "rope" and (self.d_model // self.n_head) % 2:
            raise ValueError(f"pos='rope' rotates pairs of dims: d_model // n_head must be even, "
                             f"got {self.d_model // self.n_head}")

    @property
    def kv_heads(self) -> int:
        return self.n_head if self.n_kv_head is None else self.n_kv_head


def _norm_factory(cfg: GPTConfig):
    """A function that makes one norm layer of the kind ``cfg.norm`` asks for (``"none"``: the identity)."""
    if cfg.norm == "layer":
        return lambda: nn.LayerNorm(cfg.d_model, bias=cfg.bias)
    if cfg.norm == "rms":
        return lambda: RMSNorm(cfg.d_model)
    return nn.Identity


class MLP(nn.Module):
    """Position-wise feed-forward network of GPT: (B, T, d) -> (B, T, 4d) -> GELU -> (B, T, d)."""

    def __init__(self, d_model: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        self.d_model = d_model
        self.fc = nn.Linear(d_model, 4 * d_model, bias=bias)
        self.proj = nn.Linear(4 * d_model, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    @contract
    def forward(self, x: Float["... d_model"]) -> Float["... d_model"]:
        return self.dropout(self.proj(F.gelu(self.fc(x))))


class Block(nn.Module):
    """Pre-LN block: ``x + attn(ln1(x))`` (causal self-attention), then ``x + mlp(ln2(x))``.

    With ``cache`` (a dict, empty at the first call) the keys and values of ``x`` are appended to
    ``cache["k"/"v"]`` and ``x`` holds only the new positions, which attend to all cached ones.
    With ``n_kv_head`` < ``n_head`` the cache holds the ``n_kv_head`` key/value heads; with ``pos="rope"``
    the keys are cached already rotated, and ``rope`` is (cos, sin) for the new positions."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.d_model = checks.config(cfg, GPTConfig).d_model
        norm = _norm_factory(cfg)
        self.ln1 = norm()
        self.ln2 = norm() if cfg.feed_forward else None
        if cfg.kv_heads == cfg.n_head:
            self.attn = MultiHeadAttention(cfg.d_model, cfg.n_head, cfg.dropout, bias=cfg.bias)
        else:
            self.attn = GroupedQueryAttention(cfg.d_model, cfg.n_head, cfg.kv_heads, cfg.dropout, bias=cfg.bias)
        self.n_rep = cfg.n_head // cfg.kv_heads
        self.residual = cfg.residual
        if not cfg.feed_forward:
            self.mlp = None
        elif cfg.mlp == "gelu":
            self.mlp = MLP(cfg.d_model, cfg.dropout, bias=cfg.bias)
        else:
            self.mlp = SwiGLU(cfg.d_model, cfg.mlp_hidden or swiglu_hidden(cfg.d_model), cfg.dropout, bias=cfg.bias)
        self.dropout = nn.Dropout(cfg.dropout)
        self.attn_weights: torch.Tensor | None = None

    def attention(self, x: torch.Tensor, cache: dict | None = None, need_weights: bool = False,
                  rope: tuple[torch.Tensor, torch.Tensor] | None = None):
        """Causal self-attention of (B, T_new, d) over the cached positions and itself."""
        a = self.attn
        B, T, _ = x.shape
        d_k, n_kv = a.d_k, a.num_heads // self.n_rep
        q = a.q_proj(x).view(B, T, a.num_heads, d_k).transpose(1, 2)  # (B, H, T_new, d_k)
        k = a.k_proj(x).view(B, T, n_kv, d_k).transpose(1, 2)         # (B, H_kv, T_new, d_k)
        v = a.v_proj(x).view(B, T, n_kv, d_k).transpose(1, 2)         # (B, H_kv, T_new, d_k)
        if rope is not None:
            q, k = apply_rotary(q, *rope), apply_rotary(k, *rope)
        if cache is not None:
            if "k" in cache:
                k, v = torch.cat([cache["k"], k], dim=2), torch.cat([cache["v"], v], dim=2)  # (B, H, T_all, d_k)
            cache["k"], cache["v"] = k, v
        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # (B, H, T_all, d_k)
        T_new, T_all = q.shape[2], k.shape[2]
        mask = causal_mask(T_new, T_all, device=x.device)[None, None]  # (1, 1, T_new, T_all): i sees keys <= its own
        p = a.dropout if self.training else 0.0
        if need_weights:
            out, w = scaled_dot_product_attention(q, k, v, mask, dropout_p=p)
        else:
            out, w = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p), None
        return a.out_proj(a.merge_heads(out)), w  # (B, T_new, D), (B, H, T_new, T_all) or None

    @contract
    def forward(self, x: Float["B T d_model"], cache: dict | None = None, need_weights: bool = False,
                rope: tuple[torch.Tensor, torch.Tensor] | None = None) -> Float["B T d_model"]:
        """x (B, T, d) -> (B, T, d). With ``need_weights`` the attention weights (B, H, T, T_all) are kept
        in ``self.attn_weights`` (the slower, unfused path)."""
        out, self.attn_weights = self.attention(self.ln1(x), cache, need_weights, rope)
        x = x + self.dropout(out) if self.residual else self.dropout(out)
        if self.mlp is None:
            return x
        return x + self.mlp(self.ln2(x)) if self.residual else self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Token + learned position embeddings, ``n_layer`` blocks, final LayerNorm, tied output layer."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = checks.config(cfg, GPTConfig)
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        if cfg.pos == "learned":
            self.pos_emb = nn.Embedding(cfg.block_size, cfg.d_model)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = _norm_factory(cfg)()
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.head.weight = self.tok_emb.weight  # weight tying, as in GPT-2
        self.apply(self._init)
        for name, p in self.named_parameters():  # GPT-2: scale the projections into the residual stream
            if name.endswith(("out_proj.weight", "mlp.proj.weight")):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def _rules(self, idx, targets, offset, cache, need_weights) -> None:
        """The value rules of :meth:`forward`: ids inside the vocabulary, positions inside ``block_size``,
        a cache of one dict per block that holds the positions before ``offset``."""
        check_ids(idx, self.cfg.vocab_size, "idx")
        if targets is not None:
            check_ids(targets, self.cfg.vocab_size, "targets")
            checks.training_mode(self, "model", self.cfg.dropout, stacklevel=5)
        offset, T = checks.integer(offset, "offset", minimum=0), idx.shape[1]
        if offset + T > self.cfg.block_size and self.cfg.pos == "learned":
            raise ValueError(f"positions {offset}..{offset + T - 1} exceed block_size {self.cfg.block_size}: "
                             f"crop the context to its last {self.cfg.block_size} tokens")
        if cache is not None and len(cache) != len(self.blocks):
            raise ValueError(f"cache must hold one dict per block ({len(self.blocks)}), got {len(cache)}")
        if cache is not None and cache[0] and cache[0]["k"].shape[2] != offset:
            raise ValueError(f"the cache holds {cache[0]['k'].shape[2]} positions, so the new tokens start at "
                             f"offset {cache[0]['k'].shape[2]}, not {offset}")

    @contract(rules=_rules)
    def forward(self, idx: Ids["B T"], targets: Ids["B T"] | None = None, *, offset: int = 0,
                cache: list[dict] | None = None, need_weights: bool = False) -> tuple[Float["B T V"], torch.Tensor | None]:
        """idx (B, T) token ids (any integer dtype) at positions ``offset .. offset + T - 1``; returns logits (B, T, V) and,
        with ``targets`` (B, T), the mean cross-entropy. ``cache``: one dict per block (see :class:`Block`)."""
        T = idx.shape[1]
        pos = torch.arange(offset, offset + T, device=idx.device)
        rope = None
        if self.cfg.pos == "learned":
            x = self.tok_emb(idx) + self.pos_emb(pos)  # (B, T, D)
        elif self.cfg.pos == "sinusoidal":
            # as in "Attention Is All You Need": embeddings scaled by √d. With their std-0.02 initialisation the fixed
            # ±1 waves still outweigh them at first (notebook 10 measures it).
            x = self.tok_emb(idx) * math.sqrt(self.cfg.d_model) + sinusoidal_encoding(T, self.cfg.d_model, offset=offset).to(idx.device)
        else:  # rope: no position in the embeddings; q and k are rotated in every block
            x = self.tok_emb(idx)
            rope = rope_angles(pos, self.cfg.d_model // self.cfg.n_head)
        x = self.drop(x)
        for i, block in enumerate(self.blocks):
            x = block(x, None if cache is None else cache[i], need_weights, rope)
        logits = self.head(self.ln_f(x))  # (B, T, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    def new_cache(self) -> list[dict]:
        return [{} for _ in self.blocks]

    @torch.no_grad()
    def attention_maps(self, idx: torch.Tensor) -> torch.Tensor:
        """Attention weights of every layer and head for ``idx`` (B, T): (n_layer, B, H, T, T)."""
        was_training = self.training
        self.eval()
        self(idx, need_weights=True)
        self.train(was_training)
        return torch.stack([block.attn_weights for block in self.blocks])


def gpt_parameter_count(cfg: GPTConfig) -> int:
    """Parameters of :class:`GPT` by formula. Notebook 09's model: embeddings V·d + T·d; per block
    2 LayerNorms (4d), attention 4d² + 4d, MLP 8d² + 5d; final LayerNorm 2d; the output layer is tied (0).
    The options change the terms: key/value projections of d·(n_kv_head·d_k) each, SwiGLU's 3·d·h,
    norms of d (RMSNorm, or LayerNorm without bias) or none, no position table unless learned, no MLP
    and no second norm without ``feed_forward``."""
    d, b = cfg.d_model, int(cfg.bias)
    kv = cfg.kv_heads * (d // cfg.n_head)
    norm = 2 * d if cfg.norm == "layer" and cfg.bias else 0 if cfg.norm == "none" else d
    attn = 2 * d * d + 2 * d * kv + b * (2 * d + 2 * kv)
    if not cfg.feed_forward:
        mlp = -norm  # no MLP and no second norm
    elif cfg.mlp == "gelu":
        mlp = 8 * d * d + b * 5 * d
    else:
        h = cfg.mlp_hidden or swiglu_hidden(d)
        mlp = 3 * d * h + b * (2 * h + d)
    pos = cfg.block_size * d if cfg.pos == "learned" else 0
    return cfg.vocab_size * d + pos + cfg.n_layer * (2 * norm + attn + mlp) + norm


def matched_swiglu_hidden(cfg: GPTConfig, target_params: int) -> int:
    """The SwiGLU width h that brings a :class:`GPT` with config ``cfg`` (``mlp="swiglu"``) closest
    to ``target_params`` parameters (ties: the smaller h). The count is linear in h (each unit adds
    3·d weights per block, and 2 biases with ``bias=True``), so h is that line solved for the target and
    rounded to the nearest integer: every other setting of ``cfg`` is kept."""
    from dataclasses import replace

    if cfg.mlp != "swiglu":
        raise ValueError(f"matched_swiglu_hidden sets SwiGLU's width: cfg.mlp must be 'swiglu', got {cfg.mlp!r}")
    c1, c2 = (gpt_parameter_count(replace(cfg, mlp_hidden=h)) for h in (1, 2))
    per_unit = c2 - c1  # parameters per hidden unit, over all blocks
    h = 1 + (target_params - c1) / per_unit
    h = max(1, math.floor(h) if h - math.floor(h) <= 0.5 else math.ceil(h))
    return h


def _check_temperature(temperature: object) -> float:
    """The one rule for ``temperature`` (:func:`sampling_distribution` and :func:`generate`): a finite
    number >= 0, where 0 means greedy decoding (the most probable token)."""
    if isinstance(temperature, bool) or not isinstance(temperature, numbers.Real):
        raise TypeError(f"temperature must be a number >= 0 (0 = greedy), got {type(temperature).__name__}")
    if not math.isfinite(temperature) or temperature < 0:
        raise ValueError(f"temperature must be a finite number >= 0 (0 = greedy: take the most probable token), "
                         f"got {temperature}")
    return float(temperature)


@contract(neg_inf=("logits",))  # -inf: a token filtered out (top_k_filter)
def sampling_distribution(logits: Float["... V"], temperature: float = 1.0, top_k: int | None = None) -> Float["... V"]:
    """Probabilities the sampler draws from: ``softmax(top_k(logits / temperature))`` over the last dim.

    ``temperature`` is a finite number >= 0. ``temperature=0`` is greedy decoding, the limit of the
    softmax as the temperature goes to 0: all the probability on the most probable token (the first
    one on a tie), the token :func:`generate` takes at temperature 0. A positive temperature must
    not be so small that ``logits / temperature`` overflows."""
    temperature = _check_temperature(temperature)
    if temperature == 0:
        return F.one_hot(logits.argmax(-1), logits.shape[-1]).to(logits.dtype)
    scaled = logits / temperature
    if bool((scaled.isinf() & logits.isfinite()).any()):
        raise ValueError(f"temperature {temperature} is too small: logits / temperature overflow to infinity; use "
                         f"temperature=0 for greedy decoding, or a larger temperature")
    logits = scaled
    if top_k is not None:
        logits = top_k_filter(logits, top_k)
    return F.softmax(logits, dim=-1)


@contract(neg_inf=("logits",))
def top_k_filter(logits: Float["... V"], k: int) -> Float["... V"]:
    """Keep the ``k`` largest logits of each row, set the others to -inf."""
    k = checks.integer(k, "k", minimum=1, what="the logits kept")
    k = min(k, logits.shape[-1])
    kth = torch.topk(logits, k, dim=-1).values[..., -1:]  # (..., 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def _generate_rules(model, idx, max_new_tokens, temperature, top_k, **_) -> None:
    if not isinstance(model, GPT):
        raise TypeError(f"model must be a utils.gpt.GPT, got {type(model).__name__}")
    max_new_tokens = checks.integer(max_new_tokens, "max_new_tokens", what="tokens to add")
    if top_k is not None:
        checks.integer(top_k, "top_k", minimum=1)
    _check_temperature(temperature)
    if idx.shape[1] == 0:
        raise ValueError(f"idx must hold at least one token per row (the prompt), got shape {tuple(idx.shape)}; "
                         f"generation continues a prompt, so give it at least one token, e.g. torch.zeros(B, 1, dtype=torch.long)")
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    check_ids(idx, model.cfg.vocab_size, "idx")


@contract(rules=_generate_rules)
@torch.no_grad()
def generate(model: GPT, idx: Ids["B T"], max_new_tokens: int, *, temperature: float = 1.0,
             top_k: int | None = None, use_cache: bool = True, generator: torch.Generator | None = None) -> Ids["B T"]:
    """Continue each row of ``idx`` (B, T0) by ``max_new_tokens`` sampled tokens; returns (B, T0 + new).

    ``idx`` may have any integer dtype (the result is torch.long). ``temperature=0`` takes the most
    probable token (greedy), as :func:`sampling_distribution` does at 0. With ``use_cache`` each step after the
    first feeds only the newest token, at its position, and reuses the cached keys and values; once
    the text is longer than ``block_size`` the window slides and the cache is rebuilt from it, so the
    result is identical to recomputing everything at every step (``use_cache=False``).
    ``max_new_tokens=0`` returns ``idx`` as it is."""
    max_new_tokens, temperature = int(max_new_tokens), float(temperature)
    top_k = None if top_k is None else int(top_k)
    was_training = model.training
    model.eval()
    block = model.cfg.block_size
    cache, offset = None, 0
    for _ in range(max_new_tokens):
        if use_cache and cache is not None and offset < block:
            logits, _ = model(idx[:, -1:], offset=offset, cache=cache)  # one new token at position `offset`
            offset += 1
        else:  # the first step, no cache, or the window is full and slides: recompute from the last block tokens
            context = idx[:, -block:]
            cache = model.new_cache() if use_cache else None
            logits, _ = model(context, cache=cache)
            offset = context.shape[1]
        logits = logits[:, -1, :]  # (B, V)
        if temperature == 0:
            nxt = logits.argmax(-1, keepdim=True)
        else:
            nxt = torch.multinomial(sampling_distribution(logits, temperature, top_k), 1, generator=generator)  # (B, 1)
        idx = torch.cat([idx, nxt], dim=1)
    model.train(was_training)
    return idx


def _text_rules(model: GPT, data: torch.Tensor, batch_size: int, batches: int = 1, seed: int = 0,
                block_size: int | None = None) -> None:
    """The rules of :func:`estimate_loss` and :func:`text_loss`: whole numbers, and a text of the model's ids."""
    checks.integer(batch_size, "batch_size", minimum=1), checks.integer(batches, "batches", minimum=1)
    checks.integer(seed, "seed")
    if block_size is not None:
        checks.integer(block_size, "block_size", minimum=1)
    check_ids(data, model.cfg.vocab_size, "data")


@contract(trust_callees=False, rules=_text_rules)
@torch.no_grad()
def estimate_loss(model: GPT, data: Ids["N"], batch_size: int = 32, batches: int = 20, seed: int = 0) -> float:
    """Mean loss over ``batches`` fixed random windows of ``data`` (the same windows every call)."""
    was_training = model.training
    model.eval()
    g = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    losses = [model(*get_batch(data, model.cfg.block_size, batch_size, g, device))[1].item() for _ in range(batches)]
    model.train(was_training)
    return sum(losses) / len(losses)


@contract(trust_callees=False, rules=_text_rules)
@torch.no_grad()
def text_loss(model: GPT, data: Ids["N"], batch_size: int = 256, block_size: int | None = None) -> float:
    """Mean loss over **every** position of ``data``, cut into non-overlapping windows of ``block_size``
    (the model's unless given: a model without a position table can be scored on longer windows;
    the tail shorter than one window is left out): the exact score of a held-out text."""
    T = model.cfg.block_size if block_size is None else block_size
    n = (len(data) - 1) // T
    if n < 1:
        raise ValueError(f"the text ({len(data)} tokens) must be longer than block_size ({T})")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    xs, ys = data[: n * T].view(n, T), data[1: n * T + 1].view(n, T)  # (n, T) inputs and next tokens
    total = sum(model(xs[i:i + batch_size].to(device), ys[i:i + batch_size].to(device))[1].item()
                * len(xs[i:i + batch_size]) for i in range(0, n, batch_size))
    model.train(was_training)
    return total / n


@torch.no_grad()
def block_from_torch(block: Block, ref: nn.TransformerEncoderLayer) -> Block:
    """Copy the weights of ``nn.TransformerEncoderLayer(d, h, 4d, activation="gelu", batch_first=True,
    norm_first=True)`` into ``block``: with a causal mask the two compute the same function."""
    if not ref.norm_first or ref.linear1.out_features != 4 * ref.linear1.in_features:
        raise ValueError("need nn.TransformerEncoderLayer(d, h, dim_feedforward=4d, norm_first=True, ...)")
    block.attn.load_from_torch(ref.self_attn)
    for ours, theirs in ((block.mlp.fc, ref.linear1), (block.mlp.proj, ref.linear2),
                         (block.ln1, ref.norm1), (block.ln2, ref.norm2)):
        ours.weight.copy_(theirs.weight)
        ours.bias.copy_(theirs.bias)
    return block
