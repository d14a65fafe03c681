"""Notebook 10: wrong answers students write for the online softmax, merging attention over two sets of keys and
repeated key/value heads. After the list's first entries: the mistake the student report (student_07_10.md)
found passing every visible check, then mistakes written from the prompts alone (issue 39)."""

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

_TILED = """def tiled_attention(q, k, v, b_q, b_k):
    T, d_k = q.shape
    O, L, moved = q.new_empty(T, v.shape[1]), q.new_empty(T), 0
    for r in range(0, T, b_q):
        Q_b = q[r:r + b_q]
        moved += Q_b.numel()
        n = len(Q_b)
        m, l, acc = Q_b.new_full((n, 1), -math.inf), Q_b.new_zeros(n, 1), Q_b.new_zeros(n, v.shape[1])
        for c in range({key_start}, T, b_k):
            K_c, V_c = k[c:c + b_k], v[c:c + b_k]
            moved += {key_count}
            m, l, acc = online_update(m, l, acc, {scores}, V_c)
        O[r:r + b_q], L[r:r + b_q] = {out}, {lse}
        moved += {out_count}
    return O, L, moved
"""


def _tiled(key_start="0", key_count="K_c.numel() + V_c.numel()", scores="Q_b @ K_c.T / math.sqrt(d_k)",
           out="acc / l", lse="(m + torch.log(l))[:, 0]", out_count="O[r:r + b_q].numel() + n"):
    return _TILED.format(key_start=key_start, key_count=key_count, scores=scores, out=out, lse=lse,
                         out_count=out_count)


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
    # (report) missed by the visible checks in student_07_10.md
    Wrong("ex1", "exponentials never shifted by m (m still tracked): l is 321.6 where the definition gives 2.28", _online(
        scale="torch.ones_like(m)", l_new="l + torch.exp(scores).sum(dim=-1, keepdim=True)", acc_new="acc + torch.exp(scores) @ v")),
    # (prompt) written from the prompt alone
    Wrong("ex1", "no guard for a row with no key yet: exp(-inf - (-inf)) is NaN", _online()),
    Wrong("ex1", "the maximum without keepdim: (N,) against (N, 1) broadcasts to (N, N)", _online(
        m_new="torch.maximum(m, scores.max(dim=-1).values)")),
    Wrong("ex1", "one maximum over every query's scores, not one per query", _online(m_new="torch.maximum(m, scores.max())")),
    Wrong("ex1", "forbidden keys (-inf) read as score 0", """def online_update(m, l, acc, scores, v):
    scores = scores.nan_to_num(neginf=0.0)
    m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)
    p = torch.exp(scores - m_new)
    scale = torch.exp(m - m_new)
    return m_new, l * scale + p.sum(dim=-1, keepdim=True), acc * scale + p @ v
"""),
    Wrong("ex1", "the safe maximum (0) returned as m for a row with no key yet", """def online_update(m, l, acc, scores, v):
    m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)
    m_new = m_new.masked_fill(m_new == -math.inf, 0.0)
    p = torch.exp(scores - m_new)
    scale = torch.exp(m - m_new)
    return m_new, l * scale + p.sum(dim=-1, keepdim=True), acc * scale + p @ v
"""),
    Wrong("ex1", "acc kept divided by l (the output so far), not the weighted sum", """def online_update(m, l, acc, scores, v):
    m_new = torch.maximum(m, scores.max(dim=-1, keepdim=True).values)
    shift = m_new.masked_fill(m_new == -math.inf, 0.0)
    p = torch.exp(scores - shift)
    scale = torch.exp(m - shift)
    l_new = l * scale + p.sum(dim=-1, keepdim=True)
    return m_new, l_new, ((acc * l * scale + p @ v) / l_new).nan_to_num(0.0)
"""),
    Wrong("ex2", "the two weights swapped", _merge(
        "    L = torch.logaddexp(L1, L2)\n    return torch.exp(L2 - L)[:, None] * o1 + torch.exp(L1 - L)[:, None] * o2, L")),
    Wrong("ex2", "L returned as (N, 1)", _merge(
        "    L = torch.logaddexp(L1, L2)[:, None]\n    return torch.exp(L1[:, None] - L) * o1 + torch.exp(L2[:, None] - L) * o2, L")),
    Wrong("ex2", "a softmax over the pair along the wrong axis", _merge(
        "    w = torch.softmax(torch.stack([L1, L2]), dim=1)\n"
        "    return w[0][:, None] * o1 + w[1][:, None] * o2, torch.logaddexp(L1, L2)")),
    Wrong("ex2", "L = log(exp L1 + exp L2) computed directly: inf at scores of hundreds", _merge(
        "    L = torch.log(torch.exp(L1) + torch.exp(L2))\n    return torch.exp(L1 - L)[:, None] * o1 + torch.exp(L2 - L)[:, None] * o2, L")),
    Wrong("ex2", "the set with the larger L taken whole", _merge(
        "    first = (L1 >= L2)[:, None]\n    return torch.where(first, o1, o2), torch.logaddexp(L1, L2)")),
    Wrong("ex3", "torch.cat of n_rep copies: head h reads h % H_kv (report)", "def repeat_heads(k, n_rep):\n"
          "    return torch.cat([k] * n_rep, dim=1)\n"),
    Wrong("ex3", "the copies stacked before the heads: head h reads h % H_kv", "def repeat_heads(k, n_rep):\n"
          "    B, H_kv, T, d = k.shape\n    return k[:, None].expand(B, n_rep, H_kv, T, d).reshape(B, H_kv * n_rep, T, d)\n"),
    Wrong("ex3", "torch.stack along axis 1, then flattened: head h reads h % H_kv", "def repeat_heads(k, n_rep):\n"
          "    return torch.stack([k] * n_rep, dim=1).flatten(1, 2)\n"),
    Wrong("ex3", "the set-up cell's batch size 2 written in", "def repeat_heads(k, n_rep):\n"
          "    H_kv, T, d = k.shape[1:]\n    return k[:, :, None].expand(2, H_kv, n_rep, T, d).reshape(2, H_kv * n_rep, T, d)\n"),
    Wrong("ex3", "expand straight to H_kv * n_rep heads (works only with one key/value head)", "def repeat_heads(k, n_rep):\n"
          "    B, H_kv, T, d = k.shape\n    return k.expand(B, H_kv * n_rep, T, d)\n"),
    Wrong("ex3", "view after expand", "def repeat_heads(k, n_rep):\n"
          "    B, H_kv, T, d = k.shape\n    return k[:, :, None].expand(B, H_kv, n_rep, T, d).view(B, H_kv * n_rep, T, d)\n"),
    Wrong("ex4", "the scores not scaled by 1/sqrt(d_k)", _tiled(scores="Q_b @ K_c.T")),
    Wrong("ex4", "the output left unnormalised (acc, not acc / l)", _tiled(out="acc")),
    Wrong("ex4", "L as the largest score, without the log of l", _tiled(lse="m[:, 0]")),
    Wrong("ex4", "the keys and values counted once in all, not once per tile of queries",
          _tiled(key_count="(K_c.numel() + V_c.numel()) if r == 0 else 0")),
    Wrong("ex4", "L written but not counted", _tiled(out_count="O[r:r + b_q].numel()")),
    Wrong("ex4", "the full tile size counted for the last, shorter tile", _tiled(out_count="b_q * v.shape[1] + b_q")),
    Wrong("ex4", "the number moved as a tensor", _tiled(key_count="torch.tensor(K_c.numel() + V_c.numel())")),
    Wrong("ex4", "no loop over tiles: softmax over all keys at once, the count by its formula", """def tiled_attention(q, k, v, b_q, b_k):
    T, d_k = q.shape
    e = q @ k.T / math.sqrt(d_k)
    moved = T * d_k + -(-T // b_q) * T * (d_k + v.shape[1]) + T * v.shape[1] + T
    return torch.softmax(e, dim=-1) @ v, torch.logsumexp(e, dim=-1), moved
"""),
]

RIGHT = [
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
    Right("ex1", "the old state rescaled first, then the block added; rows with no key kept by torch.where", """def online_update(m, l, acc, scores, v):
    m_new = torch.max(torch.cat([m, scores], dim=-1), dim=-1, keepdim=True).values
    empty = torch.isinf(m_new)
    alpha = torch.where(empty, torch.zeros_like(m), torch.exp(m - m_new))
    w = torch.where(empty, torch.zeros_like(scores), torch.exp(scores - m_new))
    return m_new, alpha * l + w.sum(-1, keepdim=True), alpha * acc + w @ v
"""),
    Right("ex1", "the NaN of a row with no key turned into 0 afterwards", """def online_update(m, l, acc, scores, v):
    m_new = torch.maximum(m, scores.amax(dim=-1, keepdim=True))
    p = torch.exp(scores - m_new).nan_to_num(0.0)
    scale = torch.exp(m - m_new).nan_to_num(0.0)
    return m_new, scale * l + p.sum(dim=-1, keepdim=True), scale * acc + p @ v
"""),
    Right("ex3", "the time axis repeated, then cut into heads", """def repeat_heads(k, n_rep):
    B, H_kv, T, d = k.shape
    return k.repeat(1, 1, n_rep, 1).reshape(B, H_kv * n_rep, T, d)
"""),
    Right("ex4", "the numbers moved counted from the shapes, tiles as lists", '''def tiled_attention(q, k, v, b_q, b_k):
    T, d_k = q.shape
    d_v = v.shape[1]
    outs, lses, moved = [], [], 0
    for Q_b in q.split(b_q):
        n = Q_b.shape[0]
        like = dict(dtype=q.dtype, device=q.device)   # the inputs' dtype and device (the prompt)
        state = (torch.full((n, 1), -math.inf, **like), torch.zeros(n, 1, **like), torch.zeros(n, d_v, **like))
        moved += n * d_k
        for K_c, V_c in zip(k.split(b_k), v.split(b_k)):
            moved += K_c.shape[0] * (d_k + d_v)
            state = online_update(*state, (Q_b @ K_c.T) / d_k ** 0.5, V_c)
        m, l, acc = state
        outs.append(acc / l)
        lses.append(m.squeeze(1) + l.squeeze(1).log())
        moved += n * d_v + n
    return torch.cat(outs), torch.cat(lses), int(moved)
'''),
]
