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
]
