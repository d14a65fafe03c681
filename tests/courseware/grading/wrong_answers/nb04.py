"""Notebook 04: wrong answers students write (the student report on 04 and the lesson's pitfalls)."""

from wrong_answers import Right, Wrong

_ATT = '''def attention(q, k, v, mask=None):
    scores = {scores}
    if mask is not None:
        scores = {fill}
    weights = torch.softmax(scores, dim={dim})
    return weights @ v, weights
'''


def _att(scores="q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", fill='scores.masked_fill(~mask, float("-inf"))',
         dim="-1"):
    return _ATT.format(scores=scores, fill=fill, dim=dim)


_MAX = '''def max_weight(d_k, scaled, T=16, n=2000, seed=0):
    g = torch.Generator().manual_seed(seed)
    {draws}
    scores = (q @ k.transpose(-2, -1)).squeeze(1)
    if scaled:
        scores = scores / {scale}
    return {ret}
'''


def _max(draws="q = torch.randn(n, 1, d_k, generator=g)\n    k = torch.randn(n, T, d_k, generator=g)",
         scale="math.sqrt(d_k)", ret="scores.softmax(-1).max(-1).values.mean().item()"):
    return _MAX.format(draws=draws, scale=scale, ret=ret)


_RET = '''class RetrievalAttention(nn.Module):
    def __init__(self, d, d_k, scaled=True):
        super().__init__()
        self.W_q = nn.Linear(d, d_k, bias=False)
        self.W_k = nn.Linear(d, d_k, bias=False)
        self.scaled = scaled

    def forward(self, query, keys, values):
        q = self.W_q(query)[:, None, :]
        k = self.W_k(keys)
        scores = (q @ k.transpose(-2, -1)).squeeze(1){cast}
        if {cond}:
            scores = scores / {scale}
        weights = scores.softmax({dim})
        return (weights * values).sum(-1), weights


def train_retrieval(model, steps=200, lr=1.0, batch=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        {draw}
        loss = F.mse_loss(model(query, keys, values)[0], target)
        {zero}
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses
'''


def _ret(cast="", cond="self.scaled", scale="math.sqrt(k.shape[-1])", dim="-1", zero="optimizer.zero_grad()",
         draw="query, keys, values, target = retrieval_batch(batch, g, d=model.W_q.in_features)"):
    return _RET.format(cast=cast, cond=cond, scale=scale, dim=dim, zero=zero, draw=draw)


WRONG = [
    Wrong("ex1", "softmax over the queries (dim=-2)", _att(dim="-2")),
    Wrong("ex1", "the mask multiplies the scores instead of setting -inf", _att(fill="scores * mask")),
    Wrong("ex1", "the mask convention inverted (True = blocked)", _att(fill='scores.masked_fill(mask, float("-inf"))')),
    Wrong("ex1", "no 1/sqrt(d_k)", _att(scores="q @ k.transpose(-2, -1)")),
    Wrong("ex1", "divided by d_k, not its square root", _att(scores="q @ k.transpose(-2, -1) / q.shape[-1]")),
    Wrong("ex1", "scaled by the value size d_v", _att(scores="q @ k.transpose(-2, -1) / math.sqrt(v.shape[-1])")),
    # written from the prompt alone (issue 39)
    Wrong("ex1", "the mask applied after the softmax, not renormalised", _ATT.format(
        scores="q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", fill="scores", dim="-1").replace(
        "    return weights @ v, weights", "    if mask is not None:\n        weights = weights * mask\n    return weights @ v, weights")),
    Wrong("ex1", "scaled by the number of keys", _att(scores="q @ k.transpose(-2, -1) / math.sqrt(k.shape[-2])")),
    Wrong("ex1", "k.T for the transpose (right only for 2-d keys)", _att(scores="q @ k.T / math.sqrt(q.shape[-1])")),
    Wrong("ex1", "the softmax written out without subtracting the max (NaN at large scores)", _ATT.format(
        scores="q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])", fill='scores.masked_fill(~mask, float("-inf"))',
        dim="-1").replace("    weights = torch.softmax(scores, dim=-1)",
                          "    e = scores.exp()\n    weights = e / e.sum(-1, keepdim=True)")),
    Wrong("ex1", "output and weights returned in the other order", _att().replace("return weights @ v, weights",
                                                                                  "return weights, weights @ v")),
    Wrong("ex1", "a (B, Tk) padding mask assumed: mask[:, None, :] always", _att(
        fill='scores.masked_fill(~mask[:, None, :], float("-inf"))')),
    Wrong("ex3", "a 0-d tensor returned, not a float", _max(ret="scores.softmax(-1).max(-1).values.mean()")),
    Wrong("ex3", "divided by d_k, not its square root", _max(scale="d_k")),
    Wrong("ex3", "the mean of every weight, not of the largest", _max(ret="scores.softmax(-1).mean().item()")),
    Wrong("ex3", "the softmax over the n queries", _max(ret="scores.softmax(0).max(-1).values.mean().item()")),
    # written from the prompt alone (issue 39)
    Wrong("ex3", "the scaled flag ignored: always divided", _max(scale="math.sqrt(d_k)").replace("    if scaled:\n", "    if True:\n")),
    Wrong("ex3", "uniform draws (torch.rand) instead of standard normal", _max(
        draws="q = torch.rand(n, 1, d_k, generator=g)\n    k = torch.rand(n, T, d_k, generator=g)")),
    Wrong("ex3", "the largest weight of all, not the mean of each query's largest",
          _max(ret="scores.softmax(-1).max().item()")),
    Wrong("ex3", "divided by T, not sqrt(d_k)", _max(scale="T")),
    Wrong("ex3", "the default arguments ignored: T fixed at 16", _max().replace("k = torch.randn(n, T, d_k, generator=g)",
                                                                               "k = torch.randn(n, 16, d_k, generator=g)")),
    Wrong("ex4", "zero_grad forgotten", _ret(zero="pass")),
    Wrong("ex4", "divided by d_k, not its square root", _ret(scale="k.shape[-1]")),
    Wrong("ex4", "the scaled flag ignored", _ret(cond="True")),
    Wrong("ex4", "softmax over the batch", _ret(dim="0")),
    Wrong("ex4", "the scores cast to float32 (float64 lost)", _ret(cast=".float()")),
    # written from the prompt alone (issue 39)
    Wrong("ex4", "nn.Linear's default bias kept", _ret().replace("nn.Linear(d, d_k, bias=False)", "nn.Linear(d, d_k)")),
    Wrong("ex4", "the losses kept as tensors", _ret().replace("losses.append(loss.item())", "losses.append(loss.detach())")),
    Wrong("ex4", "the learning rate hard-coded to 1.0", _ret().replace("lr=lr)", "lr=1.0)")),
    Wrong("ex4", "the batch drawn at the default d = 32", _ret(draw="query, keys, values, target = retrieval_batch(batch, g)")),
    Wrong("ex4", "the number of steps ignored (always 200)", _ret().replace("for _ in range(steps):", "for _ in range(200):")),
    Wrong("ex4", "the same batch at every step (a fresh generator each step)", _ret(
        draw="query, keys, values, target = retrieval_batch(batch, torch.Generator().manual_seed(seed), "
             "d=model.W_q.in_features)")),
]

RIGHT = [
    Right("ex1", "the boolean mask as an additive log-mask", '''def attention(q, k, v, mask=None):
    scores = q @ k.mT / math.sqrt(k.size(-1))
    if mask is not None:
        scores = scores + torch.log(mask.to(scores.dtype))     # log 1 = 0, log 0 = -inf
    weights = scores.softmax(dim=-1)
    return torch.matmul(weights, v), weights
'''),
    Right("ex3", "the keys drawn before the queries (another order of the draws, 04-4)", _max(
        draws="k = torch.randn(n, T, d_k, generator=g)\n    q = torch.randn(n, 1, d_k, generator=g)")),
    Right("ex1", "einsum, a boolean where, and the softmax written out", '''def attention(q, k, v, mask=None):
    scores = torch.einsum("...qd,...kd->...qk", q, k) * q.shape[-1] ** -0.5
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    e = torch.exp(scores - scores.amax(-1, keepdim=True))
    weights = e / e.sum(-1, keepdim=True)
    return torch.einsum("...qk,...kd->...qd", weights, v), weights
'''),
    Right("ex3", "the prompt's recipe with 2-d queries and einsum", '''def max_weight(d_k, scaled, T=16, n=2000, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, d_k, generator=g)          # the same numbers as (n, 1, d_k), drawn first
    k = torch.randn(n, T, d_k, generator=g)
    s = torch.einsum("nd,ntd->nt", q, k)
    if scaled:
        s = s * (1.0 / math.sqrt(d_k))
    return float(torch.softmax(s, dim=1).amax(dim=1).mean())
'''),
    Right("ex4", "einsum scores, model.zero_grad and a hand-written MSE", '''class RetrievalAttention(nn.Module):
    def __init__(self, d, d_k, scaled=True):
        super().__init__()
        self.W_q = nn.Linear(d, d_k, bias=False)
        self.W_k = nn.Linear(d, d_k, bias=False)
        self.scale = 1 / math.sqrt(d_k) if scaled else 1.0

    def forward(self, query, keys, values):
        scores = torch.einsum("bd,btd->bt", self.W_q(query), self.W_k(keys)) * self.scale
        weights = torch.softmax(scores, dim=1)
        return torch.einsum("bt,bt->b", weights, values), weights


def train_retrieval(model, steps=200, lr=1.0, batch=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.SGD(model.parameters(), lr)
    out = []
    for _ in range(steps):
        query, keys, values, target = retrieval_batch(batch, g, d=model.W_q.in_features)
        loss = ((model(query, keys, values)[0] - target) ** 2).mean()
        model.zero_grad()
        loss.backward()
        opt.step()
        out.append(float(loss))
    return out
'''),
]
