"""Notebook 10: wrong answers students write for the online softmax, RoPE and repeated key/value heads."""

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


_ROT = '''def rotate(x, pos, base=10000.0):
    d = x.shape[-1]
    theta = {theta}
    a, b = {pairs}
    return torch.stack([{first}, {second}], dim=-1).flatten(1)
'''


def _rot(theta="pos[:, None].float() * base ** (-torch.arange(0, d, 2).float() / d)", pairs="x[:, 0::2], x[:, 1::2]",
         first="a * theta.cos() - b * theta.sin()", second="a * theta.sin() + b * theta.cos()"):
    return _ROT.format(theta=theta, pairs=pairs, first=first, second=second)


WRONG = [
    Wrong("ex1", "the old sums not rescaled to the new maximum", _online(scale="torch.ones_like(m)")),
    Wrong("ex1", "the maximum of the new block only", _online(m_new="scores.max(dim=-1, keepdim=True).values")),
    Wrong("ex1", "the rescaling the wrong way round", _online(scale="torch.exp(m_new - m)")),
    Wrong("ex1", "the normaliser not rescaled", _online(l_new="l + p.sum(dim=-1, keepdim=True)")),
    Wrong("ex2", "the rotation's sign flipped", _rot(first="a * theta.cos() + b * theta.sin()",
                                                    second="-a * theta.sin() + b * theta.cos()")),
    Wrong("ex2", "the pairs are the two halves (i, i + d/2), not (2i, 2i + 1)", _rot(pairs="x[:, :d // 2], x[:, d // 2:]")),
    Wrong("ex2", "base ** (-i / d): the frequencies off by a factor 2 in the exponent",
          _rot(theta="pos[:, None].float() * base ** (-torch.arange(0, d // 2).float() / d)")),
    Wrong("ex2", "the positions ignored", _rot(theta="torch.ones(len(pos), 1) * base ** (-torch.arange(0, d, 2).float() / d)")),
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
    Right("ex2", "complex numbers", '''def rotate(x, pos, base=10000.0):
    T, d = x.shape
    freqs = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    angles = pos.float()[:, None] * freqs[None, :]
    z = torch.view_as_complex(x.float().reshape(T, d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angles), angles)).reshape(T, d).to(x.dtype)
'''),
    Right("ex3", "unsqueeze, repeat and flatten", '''def repeat_heads(k, n_rep):
    return k.unsqueeze(2).repeat(1, 1, n_rep, 1, 1).flatten(1, 2)
'''),
]
