"""Notebook 03: wrong answers students write for the additive score, the context vector and the
attention decoder."""

from wrong_answers import Right, Wrong, model_answer, variant

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
          "    return weights, (weights[..., None] * h).sum(1)\n"),
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

_SCORE = "def additive_score(s_prev, h, U, W, b, v):\n    return {body}\n"


def _score(body):
    return _SCORE.format(body=body)


_CV = '''def context_vector(e, h, mask):
    {weights}
    return weights, {context}
'''


def _cv(weights, context="(weights[..., None] * h).sum(1)"):
    return _CV.format(weights=weights, context=context)


_ANSWER4 = model_answer("03", "ex4")
_LOOP = "        for t in range(tgt_in.shape[1]):\n"
_STEP = "            s = self.cell(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)\n"

WRONG += [
    # the student report (student_03_05.md): passed every visible check before issue 39
    Wrong("ex1", "the set-up cell's globals B and A used to reshape s W_s, not the arguments' shapes",
          _score("torch.tanh((s_prev @ U.T).view(B, 1, A) + h @ W.T + b) @ v")),
    Wrong("ex2", "a plain exp without the max subtracted (overflows at scores of a few hundred)",
          _cv("w = torch.exp(e) * mask\n    weights = w / w.sum(-1, keepdim=True)")),
    Wrong("ex2", "the max taken over every position, pads included (a large pad score underflows the real ones)",
          _cv("w = torch.exp(e - e.amax(-1, keepdim=True)) * mask\n    weights = w / w.sum(-1, keepdim=True)")),
    Wrong("ex4", "scored with the new state s_t (the cell stepped first, with the previous context)",
          variant(variant(_ANSWER4, _LOOP, "        c = torch.zeros_like(s)\n" + _LOOP + _STEP), _STEP + "            logits", "            logits")),
    Wrong("ex4", "U and W swapped (U applied to h, W with its bias to s)",
          variant(_ANSWER4, "additive_score(s, h, self.U.weight, self.W.weight, self.W.bias,",
                  "additive_score(s, h, self.W.weight, self.U.weight, self.W.bias,")),
    # written from the prompts alone (issue 39)
    Wrong("ex1", "v forgotten (the tanh's entries summed)",
          _score("torch.tanh((s_prev @ U.T)[:, None, :] + h @ W.T + b).sum(-1)")),
    Wrong("ex1", "the bias added after the tanh", _score("(torch.tanh((s_prev @ U.T)[:, None, :] + h @ W.T) + b) @ v")),
    Wrong("ex1", "U and W used untransposed (s U, h W: runs when Dq = Dk = A)",
          _score("torch.tanh((s_prev @ U)[:, None, :] + h @ W + b) @ v")),
    Wrong("ex1", "U applied to h and W to s (runs when Dq = Dk)",
          _score("torch.tanh((s_prev @ W.T)[:, None, :] + h @ U.T + b) @ v")),
    Wrong("ex1", "squeeze() at the end (a batch of one or one position loses its axis)",
          _score("(torch.tanh((s_prev @ U.T)[:, None, :] + h @ W.T + b) @ v[:, None]).squeeze()")),
    Wrong("ex1", "the set-up cell's global S used to expand s W_s",
          _score("torch.tanh((s_prev @ U.T)[:, None, :].expand(-1, S, -1) + h @ W.T + b) @ v")),
    Wrong("ex1", "the tanh applied after v", _score("torch.tanh(((s_prev @ U.T)[:, None, :] + h @ W.T + b) @ v)")),
    Wrong("ex2", "the mask inverted (the pads kept, the real tokens dropped)",
          _cv("weights = e.masked_fill(mask, float('-inf')).softmax(-1)")),
    Wrong("ex2", "pads filled with -100, not -inf (real scores of -300 then lose to the pads)",
          _cv("weights = e.masked_fill(~mask, -100.0).softmax(-1)")),
    Wrong("ex2", "a softmax over the batch axis", _cv("weights = e.masked_fill(~mask, float('-inf')).softmax(0)")),
    Wrong("ex2", "the context a mean of the weighted states, not their sum",
          _cv("weights = e.masked_fill(~mask, float('-inf')).softmax(-1)", context="(weights[..., None] * h).mean(1)")),
    Wrong("ex2", "a plain exp, the NaN it gives replaced by 0 (nan_to_num)",
          _cv("w = torch.exp(e) * mask\n    weights = torch.nan_to_num(w / w.sum(-1, keepdim=True))")),
    Wrong("ex2", "scores clamped to ±50 before a plain exp (changes the softmax of large scores)",
          _cv("w = torch.exp(e.clamp(-50, 50)) * mask\n    weights = w / w.sum(-1, keepdim=True)")),
    Wrong("ex2", "scores multiplied by the mask (pads score 0)", _cv("weights = (e * mask).softmax(-1)")),
    Wrong("ex4", "s_0 the state at the last position (a pad's state in a padded sequence)",
          variant(_ANSWER4, "s = h[torch.arange(h.shape[0]), mask.sum(1) - 1]", "s = h[:, -1]")),
    Wrong("ex4", "s_0 = 0", variant(_ANSWER4, "s = h[torch.arange(h.shape[0]), mask.sum(1) - 1]",
                                    "s = h.new_zeros(h.shape[0], h.shape[2])")),
    Wrong("ex4", "the logits from the state alone (out reads s_t, not [s_t, c_t])",
          variant(variant(_ANSWER4, "self.out = nn.Linear(2 * hidden, vocab_size)", "self.out = nn.Linear(hidden, vocab_size)"),
                  "logits.append(self.out(torch.cat([s, c], -1)))", "logits.append(self.out(s))")),
    Wrong("ex4", "the cell fed the previous step's context (c_{t-1}, zero at step 1)",
          variant(variant(_ANSWER4, _LOOP, "        c_prev = torch.zeros_like(s)\n" + _LOOP),
                  _STEP, _STEP.replace(", c], -1)", ", c_prev], -1)") + "            c_prev = c\n")),
    Wrong("ex4", "self.weights keeps only the last step's weights",
          variant(_ANSWER4, "self.weights = torch.stack(weights, 1)",
                  "self.weights = weights[-1][:, None, :].expand(-1, len(weights), -1)")),
    Wrong("ex4", "the embedding of the next token (tgt_in[:, t + 1]), the last step fed its own",
          variant(_ANSWER4, "self.emb(tgt_in[:, t])", "self.emb(tgt_in[:, min(t + 1, tgt_in.shape[1] - 1)])")),
    Wrong("ex4", "the attention's sizes hard-coded to the default hidden = 32",
          variant(variant(variant(_ANSWER4, "nn.Linear(hidden, hidden, bias=False)", "nn.Linear(32, 32, bias=False)"),
                          "nn.Linear(hidden, hidden)  ", "nn.Linear(32, 32)  "),
                  "nn.Linear(hidden, 1, bias=False)", "nn.Linear(32, 1, bias=False)")),
]

RIGHT += [
    Right("ex1", "W h_i + b first, s U^T unsqueezed, v by a product and a sum", '''def additive_score(s_prev, h, U, W, b, v):
    keys = torch.matmul(h, W.transpose(0, 1)) + b          # (B, S, A)
    query = torch.matmul(s_prev, U.transpose(0, 1))         # (B, A)
    return (torch.tanh(keys + query.unsqueeze(1)) * v).sum(dim=-1)
'''),
    Right("ex2", "the max over the real scores subtracted, pads zeroed by torch.where", '''def context_vector(e, h, mask):
    z = e.masked_fill(~mask, float("-inf"))
    z = z - z.max(dim=-1, keepdim=True).values
    w = torch.where(mask, z.exp(), torch.zeros_like(e))
    weights = w / w.sum(dim=-1, keepdim=True)
    return weights, torch.bmm(weights.unsqueeze(1), h).squeeze(1)
'''),
]
