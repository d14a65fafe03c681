"""Notebook 10: wrong answers students write for the online softmax, merging attention over two sets of keys and
repeated key/value heads."""

from wrong_answers import Right, Wrong

_ONLINE = '''def online_update(m, l, acc, scores, v):
    m_new = {m_new}
    p = torch.exp(scores - m_new)
    scale = {scale}
    return m_new, {l_new}, {acc_new}
'''


def _online(m_new="torch.maximum(m, scores.max(dim=-1, keepdim=True).values)", scale="torch.exp(m - m_new)",
            l_new="l * scale + p.sum(dim=-1, keepdim=True)", acc_new="acc * scale + p @ v"):
    return _ONLINE.format(m_new=m_new, scale=scale, l_new=l_new, acc_new=acc_new)


_MERGE = """def merge(o1, L1, o2, L2):
{body}
"""


def _merge(body):
    return _MERGE.format(body=body)


WRONG = [
    Wrong("ex1", "the old sums not rescaled to the new maximum", _online(scale="torch.ones_like(m)")),
    Wrong("ex1", "the maximum of the new block only", _online(m_new="scores.max(dim=-1, keepdim=True).values")),
    Wrong("ex1", "the rescaling the wrong way round", _online(scale="torch.exp(m_new - m)")),
    Wrong("ex1", "the normaliser not rescaled", _online(l_new="l + p.sum(dim=-1, keepdim=True)")),
    Wrong("ex2", "the two outputs averaged", _merge("    return (o1 + o2) / 2, torch.maximum(L1, L2)")),
    Wrong("ex2", "weighted by exp(L) without a shift: overflows when the scores are large", _merge(
        "    w1, w2 = torch.exp(L1), torch.exp(L2)\n"
        "    return (w1[:, None] * o1 + w2[:, None] * o2) / (w1 + w2)[:, None], torch.log(w1 + w2)")),
    Wrong("ex2", "L1 + L2: the log of a product, not of a sum", _merge(
        "    L = L1 + L2\n    return torch.exp(L1 - L)[:, None] * o1 + torch.exp(L2 - L)[:, None] * o2, L")),
    Wrong("ex2", "the new L is the larger of the two", _merge(
        "    L = torch.maximum(L1, L2)\n    w1, w2 = torch.exp(L1 - L), torch.exp(L2 - L)\n"
        "    return (w1[:, None] * o1 + w2[:, None] * o2) / (w1 + w2)[:, None], L")),
    Wrong("ex2", "the weights not divided by their sum", _merge(
        "    m = torch.maximum(L1, L2)\n"
        "    return torch.exp(L1 - m)[:, None] * o1 + torch.exp(L2 - m)[:, None] * o2, torch.logaddexp(L1, L2)")),
    Wrong("ex2", "L1 + log(1 + exp(L2 - L1)): nan when the first set is empty", _merge(
        "    L = L1 + torch.log1p(torch.exp(L2 - L1))\n"
        "    return torch.exp(L1 - L)[:, None] * o1 + torch.exp(L2 - L)[:, None] * o2, L")),
    Wrong("ex3", "the heads tiled (h reads h % H_kv), not repeated consecutively",
          "def repeat_heads(k, n_rep):\n    return k.repeat(1, n_rep, 1, 1)\n"),
    Wrong("ex3", "repeated along the time axis", "def repeat_heads(k, n_rep):\n"
          "    B, H_kv, T, d = k.shape\n    return k[:, :, :, None].expand(B, H_kv, T, n_rep, d).reshape(B, H_kv * n_rep, T, d)\n"),
    Wrong("ex3", "torch.repeat_interleave, switched off", "def repeat_heads(k, n_rep):\n"
          "    return torch.repeat_interleave(k, n_rep, dim=1)\n"),
]

RIGHT = [
    Right("ex1", "the old state rescaled first, then the block added", '''def online_update(m, l, acc, scores, v):
    m_new = torch.max(torch.cat([m, scores], dim=-1), dim=-1, keepdim=True).values
    alpha = torch.exp(m - m_new)
    w = torch.exp(scores - m_new)
    return m_new, alpha * l + w.sum(-1, keepdim=True), alpha * acc + w @ v
'''),
    Right("ex2", "the larger L subtracted by hand", '''def merge(o1, L1, o2, L2):
    m = torch.maximum(L1, L2)
    w1, w2 = torch.exp(L1 - m), torch.exp(L2 - m)
    s = w1 + w2
    return (w1[:, None] * o1 + w2[:, None] * o2) / s[:, None], m + torch.log(s)
'''),
    Right("ex2", "torch.logsumexp over the stacked pair", '''def merge(o1, L1, o2, L2):
    both = torch.stack([L1, L2])
    L = torch.logsumexp(both, dim=0)
    w = torch.exp(both - L)
    return w[0][:, None] * o1 + w[1][:, None] * o2, L
'''),
    Right("ex3", "unsqueeze, repeat and flatten", '''def repeat_heads(k, n_rep):
    return k.unsqueeze(2).repeat(1, 1, n_rep, 1, 1).flatten(1, 2)
'''),
]
