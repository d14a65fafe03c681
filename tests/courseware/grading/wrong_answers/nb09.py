"""Notebook 09: wrong answers students write (the student report on 09 and the lesson's pitfalls)."""

from wrong_answers import Right, Wrong

_TOPP = '''def keep_top_p(logits, p):
    probs, order = logits.softmax(-1).sort(-1, descending=True)
    {drop_sorted}
    drop = {back}
    return logits.masked_fill(drop, float("-inf"))


def sample_top_p(logits, p, generator=None):
    probs = {probs}
    return {draw}
'''


def _topp(drop_sorted="drop_sorted = probs.cumsum(-1) - probs >= p", back="drop_sorted.scatter(-1, order, drop_sorted)",
          probs="keep_top_p(logits, p).softmax(-1)", draw="torch.multinomial(probs, 1, generator=generator).squeeze(-1)"):
    return _TOPP.format(drop_sorted=drop_sorted, back=back, probs=probs, draw=draw)


_KV = '''def attend_step(x_new, cache, Wq, Wk, Wv):
    q, k, v = x_new @ Wq, x_new @ Wk, x_new @ Wv
    if "k" in cache:
        cache["k"] = torch.cat([cache["k"], k[:, None]], dim=1)
        cache["v"] = torch.cat([cache["v"], v[:, None]], dim=1)
    else:
        cache["k"], cache["v"] = k[:, None], v[:, None]
    scores = (cache["k"] @ q[:, :, None])[:, :, 0]{scale}
    return {ret}


@torch.no_grad()
def generate_greedy(model, idx, n_new):
    cache = {{}}
    for t in range(idx.shape[1]):
        x_t = model.embed(idx[:, t:t + 1], offset=t)[:, 0]
        h = attend_step(x_t, cache, model.Wq, model.Wk, model.Wv)
    for _ in range(n_new):
        nxt = model.out({logits_in}).argmax(-1, keepdim=True)
        idx = torch.cat([idx, nxt], dim=1)
        x_t = model.embed(nxt, offset={offset})[:, 0]
        h = attend_step(x_t, cache, model.Wq, model.Wk, model.Wv)
    return idx
'''


def _kv(scale=" / math.sqrt(q.shape[-1])", ret='(scores.softmax(-1)[:, None, :] @ cache["v"])[:, 0]',
        logits_in="x_t + h", offset="idx.shape[1] - 1"):
    return _KV.format(scale=scale, ret=ret, logits_in=logits_in, offset=offset)


WRONG = [
    Wrong("ex1", "one token too few (< the k-th value becomes <=)",
          "def keep_top_k(logits, k):\n    kth = torch.topk(logits, k, dim=-1).values[:, -1:]\n"
          "    return logits.masked_fill(logits <= kth, float('-inf'))\n"),
    Wrong("ex1", "the others set to 0, not -inf",
          "def keep_top_k(logits, k):\n    kth = torch.topk(logits, k, dim=-1).values[:, -1:]\n"
          "    return logits.masked_fill(logits < kth, 0.0)\n"),
    Wrong("ex1", "probabilities returned instead of logits",
          "def keep_top_k(logits, k):\n    kth = torch.topk(logits, k, dim=-1).values[:, -1:]\n"
          "    return logits.masked_fill(logits < kth, float('-inf')).softmax(-1)\n"),
    Wrong("ex1", "the k largest of the whole batch, not of each row",
          "def keep_top_k(logits, k):\n    kth = torch.topk(logits.flatten(), k).values[-1]\n"
          "    return logits.masked_fill(logits < kth, float('-inf'))\n"),
    Wrong("ex2", "the inclusive cumulative sum (cumsum > p drops the token that reaches p)",
          _topp(drop_sorted="drop_sorted = probs.cumsum(-1) > p")),
    Wrong("ex2", "the mask left in sorted order", _topp(back="drop_sorted")),
    Wrong("ex2", "p ignored: only the most likely token kept", _topp(drop_sorted="drop_sorted = probs < probs[:, :1]")),
    Wrong("ex2", "sampling from every token, p ignored", _topp(probs="logits.softmax(-1)")),
    Wrong("ex2", "the most likely kept token taken, not sampled", _topp(draw="probs.argmax(-1)")),
    Wrong("ex2", "a (B, 1) tensor returned", _topp(draw="torch.multinomial(probs, 1, generator=generator)")),
    Wrong("ex4", "no 1/sqrt(D)", _kv(scale="")),
    Wrong("ex4", "attends to the new position only (the cache unused)", _kv(ret="v")),
    Wrong("ex4", "the new token fed at position 0", _kv(offset="0")),
    Wrong("ex4", "the residual forgotten", _kv(logits_in="h")),
    # (prompt) written from the prompts alone (issue 39)
    Wrong("ex1", "the input changed in place and returned", "def keep_top_k(logits, k):\n"
          "    kth = torch.topk(logits, k, dim=-1).values[:, -1:]\n    logits[logits < kth] = float('-inf')\n    return logits\n"),
    Wrong("ex1", "the k largest by absolute value", "def keep_top_k(logits, k):\n"
          "    kth = torch.topk(logits.abs(), k, dim=-1).values[:, -1:]\n    return logits.masked_fill(logits.abs() < kth, float('-inf'))\n"),
    Wrong("ex1", "the k-th value taken at index k (one token too many; k = V fails)", "def keep_top_k(logits, k):\n"
          "    kth = logits.sort(dim=-1, descending=True).values[:, k:k + 1]\n    return logits.masked_fill(logits < kth, float('-inf'))\n"),
    Wrong("ex1", "top-k along the batch axis", "def keep_top_k(logits, k):\n"
          "    kth = torch.topk(logits, k, dim=0).values[-1:]\n    return logits.masked_fill(logits < kth, float('-inf'))\n"),
    Wrong("ex1", "a float32 canvas filled by scatter (float64 logits fail)", "def keep_top_k(logits, k):\n"
          "    top = torch.topk(logits, k, dim=-1)\n    out = torch.full(logits.shape, float('-inf'))\n"
          "    return out.scatter(1, top.indices, top.values)\n"),
    Wrong("ex2", "the cumulative sum taken over the sorted logits, not the probabilities",
          _topp(drop_sorted="s = logits.sort(-1, descending=True).values\n    drop_sorted = s.cumsum(-1) - s >= p")),
    Wrong("ex2", "the softmax over the batch axis", '''def keep_top_p(logits, p):
    probs, order = logits.softmax(0).sort(-1, descending=True)
    drop_sorted = probs.cumsum(-1) - probs >= p
    return logits.masked_fill(drop_sorted.scatter(-1, order, drop_sorted), float("-inf"))


def sample_top_p(logits, p, generator=None):
    return torch.multinomial(keep_top_p(logits, p).softmax(-1), 1, generator=generator).squeeze(-1)
'''),
    Wrong("ex2", "the mask put back with gather (the inverse permutation taken the wrong way)",
          _topp(back="drop_sorted.gather(-1, order)")),
    Wrong("ex2", "the generator not passed to torch.multinomial", _topp(draw="torch.multinomial(probs, 1).squeeze(-1)")),
    Wrong("ex2", "torch.multinomial given the filtered logits, not probabilities",
          _topp(probs="keep_top_p(logits, p)")),
    Wrong("ex4", "the cache grown along the feature axis: (B, D, t)", '''def attend_step(x_new, cache, Wq, Wk, Wv):
    q, k, v = x_new @ Wq, x_new @ Wk, x_new @ Wv
    cache["k"] = torch.cat([cache["k"], k[:, :, None]], dim=2) if "k" in cache else k[:, :, None]
    cache["v"] = torch.cat([cache["v"], v[:, :, None]], dim=2) if "v" in cache else v[:, :, None]
    scores = (q[:, None, :] @ cache["k"])[:, 0] / math.sqrt(q.shape[-1])
    return (cache["v"] @ scores.softmax(-1)[:, :, None])[:, :, 0]
''' + _kv().split("@torch.no_grad()")[1].join(["\n\n@torch.no_grad()", ""])),
    Wrong("ex4", "the softmax over the batch axis", _kv(ret='(scores.softmax(0)[:, None, :] @ cache["v"])[:, 0]')),
    Wrong("ex4", "scaled by the number of cached positions, not by D",
          _kv(scale=" / math.sqrt(cache[\"k\"].shape[1])")),
    Wrong("ex4", "the prompt's positions fed one too far (offset t + 1)", _kv().replace(
          "x_t = model.embed(idx[:, t:t + 1], offset=t)[:, 0]", "x_t = model.embed(idx[:, t:t + 1], offset=t + 1)[:, 0]")),
    Wrong("ex4", "the next token's argmax taken over the batch axis",
          _kv().replace(".argmax(-1, keepdim=True)", ".argmax(0, keepdim=True).T[:len(idx)]")),
]

RIGHT = [
    Right("ex1", "a threshold from a sort and torch.where", '''def keep_top_k(logits, k):
    kth = logits.sort(dim=-1, descending=True).values[:, k - 1:k]
    return torch.where(logits >= kth, logits, torch.full_like(logits, float("-inf")))
'''),
    Right("ex2", "the cut-off probability found in sorted order, compared in place", '''def keep_top_p(logits, p):
    probs = logits.softmax(-1)
    sorted_probs = probs.sort(-1, descending=True).values
    before = sorted_probs.cumsum(-1) - sorted_probs          # mass ranked above each sorted token
    n_keep = (before < p).sum(-1, keepdim=True).clamp(min=1)  # the shortest prefix reaching p
    cutoff = sorted_probs.gather(-1, n_keep - 1)              # the smallest kept probability
    return logits.masked_fill(probs < cutoff, float("-inf"))


def sample_top_p(logits, p, generator=None):
    return torch.multinomial(keep_top_p(logits, p).softmax(-1), 1, generator=generator)[:, 0]
'''),
    Right("ex4", "einsum attention and a cache grown from empty tensors", '''def attend_step(x_new, cache, Wq, Wk, Wv):
    B, D = x_new.shape
    empty = x_new.new_zeros(B, 0, D)
    cache["k"] = torch.cat([cache.get("k", empty), (x_new @ Wk)[:, None]], dim=1)
    cache["v"] = torch.cat([cache.get("v", empty), (x_new @ Wv)[:, None]], dim=1)
    scores = torch.einsum("bd,btd->bt", x_new @ Wq, cache["k"]) / D ** 0.5
    return torch.einsum("bt,btd->bd", scores.softmax(-1), cache["v"])


@torch.no_grad()
def generate_greedy(model, idx, n_new):
    cache, out = {}, idx
    for t in range(idx.shape[1]):
        x = model.embed(idx[:, t:t + 1], t)[:, 0]
        h = attend_step(x, cache, model.Wq, model.Wk, model.Wv)
    for _ in range(n_new):
        nxt = model.out(x + h).argmax(-1)[:, None]
        out = torch.cat([out, nxt], dim=1)
        x = model.embed(nxt, out.shape[1] - 1)[:, 0]
        h = attend_step(x, cache, model.Wq, model.Wk, model.Wv)
    return out
'''),
    Right("ex1", "the kept entries scattered into a copy of the right dtype", '''def keep_top_k(logits, k):
    top = torch.topk(logits, k, dim=-1)
    return torch.full_like(logits, float("-inf")).scatter(-1, top.indices, top.values)
'''),
]
