"""Notebook 03: wrong answers students write for the additive score, the context vector and the
attention decoder."""

from wrong_answers import Right, Wrong

_DEC = '''class AttentionDecoder(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb)
        self.cell = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_size)
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.W = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, H, mask, tgt_in):
        s = H[torch.arange(H.shape[0]), mask.sum(1) - 1]
        logits, weights = [], []
        for t in range(tgt_in.shape[1]):
            e = additive_score({query}, H, self.U.weight, self.W.weight, self.W.bias, self.v.weight[0])
            a, c = {attend}
            s = self.cell(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)
            logits.append(self.out(torch.cat([s, c], -1)))
            weights.append(a)
        self.weights = torch.stack(weights, 1)
        return torch.stack(logits, 1)
'''


def _dec(query="s", attend="context_vector(e, H, mask)"):
    return _DEC.format(query=query, attend=attend)


WRONG = [
    Wrong("ex1", "the bias b left out", "def additive_score(s_prev, h, U, W, b, v):\n"
          "    return torch.tanh((s_prev @ U.T)[:, None, :] + h @ W.T) @ v\n"),
    Wrong("ex1", "U and W applied without transposing (U s as s U)", "def additive_score(s_prev, h, U, W, b, v):\n"
          "    return torch.tanh((s_prev @ U.T)[:, None, :] + (h @ W.T).flip(1) + b) @ v\n"),
    Wrong("ex1", "a sigmoid instead of tanh", "def additive_score(s_prev, h, U, W, b, v):\n"
          "    return torch.sigmoid((s_prev @ U.T)[:, None, :] + h @ W.T + b) @ v\n"),
    Wrong("ex2", "pads set to zero score, not -inf", "def context_vector(e, h, mask):\n"
          "    weights = e.masked_fill(~mask, 0.0).softmax(-1)\n    return weights, (weights[..., None] * h).sum(1)\n"),
    Wrong("ex2", "softmax first, then the pads zeroed (no renormalising)", "def context_vector(e, h, mask):\n"
          "    weights = e.softmax(-1) * mask\n    return weights, (weights[..., None] * h).sum(1)\n"),
    Wrong("ex2", "the context a plain mean of the real states", "def context_vector(e, h, mask):\n"
          "    weights = e.masked_fill(~mask, float('-inf')).softmax(-1)\n"
          "    m = mask[..., None].float()\n    return weights, (h * m).sum(1) / m.sum(1)\n"),
    Wrong("ex2", "exponentials of the pads' scores too, then zeroed: a large pad score overflows (inf * 0 = NaN)",
          "def context_vector(e, h, mask):\n    top = e.masked_fill(~mask, float('-inf')).amax(-1, keepdim=True)\n"
          "    w = torch.exp(e - top) * mask\n    weights = w / w.sum(-1, keepdim=True)\n"
          "    return weights, (weights[..., None] * h).sum(1)\n", hidden_only=True),
    Wrong("ex2", "utils.rnn.masked_softmax, which the exercise forbids", "from utils.rnn import masked_softmax\n\n\n"
          "def context_vector(e, h, mask):\n    weights = masked_softmax(e, mask)\n"
          "    return weights, (weights[..., None] * h).sum(1)\n"),
    Wrong("ex4", "one context for every step (the query never changes)", _dec(query="H[torch.arange(H.shape[0]), mask.sum(1) - 1]")),
    Wrong("ex4", "the padding not masked", _dec(attend="context_vector(e, H, torch.ones_like(mask))")),
    Wrong("ex4", "utils.rnn.attend, which the exercise forbids", _dec(attend="__import__('utils.rnn').rnn.attend(e, H, mask)")),
]

RIGHT = [
    Right("ex1", "einsum", '''def additive_score(s_prev, h, U, W, b, v):
    hidden = torch.einsum("bq,aq->ba", s_prev, U)[:, None, :] + torch.einsum("bsk,ak->bsa", h, W) + b
    return torch.einsum("bsa,a->bs", torch.tanh(hidden), v)
'''),
    Right("ex2", "exponentials of the real scores, normalised by hand", '''def context_vector(e, h, mask):
    real = e.masked_fill(~mask, float("-inf"))
    w = torch.exp(real - real.amax(-1, keepdim=True))   # exp(-inf) = 0 on pads
    weights = w / w.sum(-1, keepdim=True)
    return weights, torch.einsum("bs,bsk->bk", weights, h)
'''),
    Right("ex4", "the attention layers created first, s_0 by gather, the outputs computed after the loop",
          '''class AttentionDecoder(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden=32):
        super().__init__()
        self.U = nn.Linear(hidden, hidden, bias=False)
        self.W = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)
        self.emb = nn.Embedding(vocab_size, emb)
        self.cell = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_size)

    def forward(self, H, mask, tgt_in):
        B, S, D = H.shape
        last = (mask.long().sum(dim=1) - 1).view(B, 1, 1).expand(B, 1, D)
        s = H.gather(1, last).squeeze(1)                                        # (B, D) s_0
        embedded = self.emb(tgt_in)                                             # (B, T, E)
        states, contexts, weights = [], [], []
        for t in range(tgt_in.shape[1]):
            e = additive_score(s, H, self.U.weight, self.W.weight, self.W.bias, self.v.weight.squeeze(0))
            a, c = context_vector(e, H, mask)
            s = self.cell(torch.cat((embedded[:, t], c), dim=1), s)
            states.append(s)
            contexts.append(c)
            weights.append(a)
        self.weights = torch.stack(weights, dim=1)                              # (B, T, S)
        return self.out(torch.cat((torch.stack(states, 1), torch.stack(contexts, 1)), dim=-1))
'''),
]
