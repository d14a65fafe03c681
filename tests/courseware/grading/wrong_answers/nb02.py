"""Notebook 02: wrong answers students write (the student report on 02, the lesson's pitfalls, and mistakes written
from the prompts alone for issue 39)."""

from wrong_answers import Right, Wrong

_STEP = '''def gru_step(x_t, h, gru):
    gi = x_t @ gru.weight_ih_l0.T + gru.bias_ih_l0
    gh = h @ gru.weight_hh_l0.T + gru.bias_hh_l0
    {chunks}
    r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)
    n = torch.tanh({n})
    return {out}


def masked_encode(x, mask, gru):
    h = x.new_zeros(x.shape[0], gru.hidden_size)
    for t in range(x.shape[1]):
        h = {update}
    return h
'''


def _step(chunks="i_r, i_z, i_n = gi.chunk(3, dim=-1)\n    h_r, h_z, h_n = gh.chunk(3, dim=-1)", n="i_n + r * h_n",
          out="(1 - z) * n + z * h", update="torch.where(mask[:, t, None], gru_step(x[:, t], h, gru), h)"):
    return _STEP.format(chunks=chunks, n=n, out=out, update=update)


_SEQ = '''class TinySeq2Seq(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb)
        self.encoder = nn.GRU(emb, hidden, batch_first=True)
        self.decoder = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_size)

    def forward(self, src, src_mask, tgt_in):
        c = {context}
        s, logits = {start}, []
        for t in range(tgt_in.shape[1]):
            s = self.decoder(torch.cat([self.emb(tgt_in[:, {t}]), c], -1), s)
            logits.append(self.out(torch.cat([s, c], -1)))
        return torch.stack(logits, 1)
'''


def _seq(context="masked_encode(self.emb(src), src_mask, self.encoder)", start="c", t="t"):
    return _SEQ.format(context=context, start=start, t=t)


WRONG = [
    Wrong("ex1", "the state after the padding (the last column)", "def last_real_state(states, mask):\n"
          "    return states[:, -1]\n"),
    Wrong("ex1", "off by one: the position after the last real token", "def last_real_state(states, mask):\n"
          "    last = (mask.sum(1)).clamp(max=states.shape[1] - 1)\n    return states[torch.arange(states.shape[0]), last]\n"),
    Wrong("ex1", "the first real token's state", "def last_real_state(states, mask):\n"
          "    return states[torch.arange(states.shape[0]), mask.float().argmax(1)]\n"),
    Wrong("ex3", "the reset and update chunks swapped",
          _step(chunks="i_z, i_r, i_n = gi.chunk(3, dim=-1)\n    h_z, h_r, h_n = gh.chunk(3, dim=-1)")),
    Wrong("ex3", "z and 1 - z swapped", _step(out="z * n + (1 - z) * h")),
    Wrong("ex3", "the reset gate applied outside the bias", _step(n="i_n + r * (h @ gru.weight_hh_l0[2 * h.shape[1]:].T) "
                                                                 "+ gru.bias_hh_l0[2 * h.shape[1]:]")),
    Wrong("ex3", "the pads update the state", _step(update="gru_step(x[:, t], h, gru)")),
    Wrong("ex3", "nn.GRUCell's forward, which the exercise forbids", '''def gru_step(x_t, h, gru):
    cell = nn.GRUCell(gru.input_size, gru.hidden_size)
    with torch.no_grad():
        cell.weight_ih.copy_(gru.weight_ih_l0), cell.weight_hh.copy_(gru.weight_hh_l0)
        cell.bias_ih.copy_(gru.bias_ih_l0), cell.bias_hh.copy_(gru.bias_hh_l0)
    return cell(x_t, h)


def masked_encode(x, mask, gru):
    h = x.new_zeros(x.shape[0], gru.hidden_size)
    for t in range(x.shape[1]):
        h = torch.where(mask[:, t, None], gru_step(x[:, t], h, gru), h)
    return h
'''),
    Wrong("ex4", "the decoder started from zeros, not from c", _seq(start="torch.zeros_like(c)")),
    Wrong("ex4", "the encoder's own forward (nn.GRU), which the exercise forbids", _seq(
        context="self.encoder(torch.nn.utils.rnn.pack_padded_sequence(self.emb(src), src_mask.sum(1), batch_first=True, "
                "enforce_sorted=False))[1][0]")),
    Wrong("ex4", "the decoder reads the next target token (looks ahead)", _seq(t="min(t + 1, tgt_in.shape[1] - 1)")),
    Wrong("ex4", "the context after the padding", _seq(context="self.encoder(self.emb(src))[1][0]")),
    # issue 39: written from the prompts alone
    Wrong("ex1", "the set-up cell's lengths instead of the mask", "def last_real_state(states, mask):\n"
          "    return states[torch.arange(states.shape[0]), lengths - 1]\n"),
    Wrong("ex1", "the set-up cell's batch size", "def last_real_state(states, mask):\n"
          "    return states[torch.arange(B), mask.sum(1) - 1]\n"),
    Wrong("ex1", "the longest sentence's last position for every row", "def last_real_state(states, mask):\n"
          "    return states[:, mask.sum(1).max() - 1]\n"),
    Wrong("ex1", "gather, then squeeze(): a batch of one loses its batch axis", "def last_real_state(states, mask):\n"
          "    last = (mask.sum(1) - 1)[:, None, None].expand(-1, 1, states.shape[-1])\n"
          "    return states.gather(1, last).squeeze()\n"),
    Wrong("ex1", "the mask read the other way round (True = pad)", "def last_real_state(states, mask):\n"
          "    return states[torch.arange(states.shape[0]), (~mask).sum(1) - 1]\n"),
    Wrong("ex1", "the states as float32 whatever they came in", "def last_real_state(states, mask):\n"
          "    return states[torch.arange(states.shape[0]), mask.sum(1) - 1].float()\n"),
    Wrong("ex3", "masked_encode starts from the set-up cell's size D", _step().replace(
        "h = x.new_zeros(x.shape[0], gru.hidden_size)", "h = x.new_zeros(x.shape[0], D)")),
    Wrong("ex3", "the state reset to zero at the pads", _step(update="torch.where(mask[:, t, None], gru_step(x[:, t], h, gru), torch.zeros_like(h))")),
    Wrong("ex3", "the last time step never read", _step().replace("for t in range(x.shape[1]):", "for t in range(x.shape[1] - 1):")),
    Wrong("ex3", "tanh for the gates instead of a sigmoid", _step().replace(
        "r, z = torch.sigmoid(i_r + h_r), torch.sigmoid(i_z + h_z)", "r, z = torch.tanh(i_r + h_r), torch.tanh(i_z + h_z)")),
    Wrong("ex3", "the hidden-side bias left out", _step().replace("gh = h @ gru.weight_hh_l0.T + gru.bias_hh_l0", "gh = h @ gru.weight_hh_l0.T")),
    Wrong("ex3", "the state detached at every step (no gradient through time)", _step(
        update="torch.where(mask[:, t, None], gru_step(x[:, t], h.detach(), gru), h.detach())")),
    Wrong("ex3", "the weights read through .data (no gradient reaches them)", _step().replace(
        "gi = x_t @ gru.weight_ih_l0.T + gru.bias_ih_l0", "gi = x_t @ gru.weight_ih_l0.data.T + gru.bias_ih_l0.data")),
    Wrong("ex4", "the state not carried: every step starts again from c", _SEQ.format(
        context="masked_encode(self.emb(src), src_mask, self.encoder)", start="c", t="t").replace(
        "s = self.decoder(torch.cat([self.emb(tgt_in[:, t]), c], -1), s)", "s = self.decoder(torch.cat([self.emb(tgt_in[:, t]), c], -1), c)")),
    Wrong("ex4", "the output layer reads [c, s_t], the two halves swapped", _seq().replace(
        "logits.append(self.out(torch.cat([s, c], -1)))", "logits.append(self.out(torch.cat([c, s], -1)))")),
    Wrong("ex4", "the decoder reads [c, emb(y)], the two halves swapped", _seq().replace(
        "torch.cat([self.emb(tgt_in[:, t]), c], -1)", "torch.cat([c, self.emb(tgt_in[:, t])], -1)")),
    Wrong("ex4", "the previous target read at t - 1 (tgt_in shifted once more)", _seq(t="t - 1")),
    Wrong("ex4", "log-probabilities returned instead of logits", _seq().replace(
        "return torch.stack(logits, 1)", "return torch.stack(logits, 1).log_softmax(-1)")),
    Wrong("ex4", "the context zeroed where the decoder reads it, kept only as s_0", _seq().replace(
        "torch.cat([self.emb(tgt_in[:, t]), c], -1)", "torch.cat([self.emb(tgt_in[:, t]), torch.zeros_like(c)], -1)")),
]

RIGHT = [
    Right("ex1", "torch.gather", '''def last_real_state(states, mask):
    last = (mask.sum(1) - 1)[:, None, None].expand(-1, 1, states.shape[-1])
    return states.gather(1, last)[:, 0]
'''),
    Right("ex3", "the gates' rows sliced by index, the pads by a 0/1 blend", '''def gru_step(x_t, h, gru):
    H = gru.hidden_size
    Wi, Wh, bi, bh = gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0
    r = torch.sigmoid(x_t @ Wi[:H].T + bi[:H] + h @ Wh[:H].T + bh[:H])
    z = torch.sigmoid(x_t @ Wi[H:2 * H].T + bi[H:2 * H] + h @ Wh[H:2 * H].T + bh[H:2 * H])
    n = torch.tanh(x_t @ Wi[2 * H:].T + bi[2 * H:] + r * (h @ Wh[2 * H:].T + bh[2 * H:]))
    return (1 - z) * n + z * h


def masked_encode(x, mask, gru):
    h = torch.zeros(x.shape[0], gru.hidden_size, dtype=x.dtype)
    for t in range(x.shape[1]):
        m = mask[:, t, None].to(x.dtype)
        h = m * gru_step(x[:, t], h, gru) + (1 - m) * h
    return h
'''),
    Right("ex4", "all target embeddings at once, the states collected, one output layer call at the end",
          '''class TinySeq2Seq(nn.Module):
    def __init__(self, vocab_size, emb=16, hidden=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb)
        self.encoder = nn.GRU(input_size=emb, hidden_size=hidden, num_layers=1, batch_first=True)
        self.decoder = nn.GRUCell(emb + hidden, hidden)
        self.out = nn.Linear(2 * hidden, vocab_size)

    def forward(self, src, src_mask, tgt_in):
        context = masked_encode(self.emb(src), src_mask, self.encoder)          # (B, H)
        T = tgt_in.shape[1]
        ctx = context.unsqueeze(1).expand(-1, T, -1)                            # (B, T, H)
        steps_in = torch.cat([self.emb(tgt_in), ctx], dim=2)                    # (B, T, E + H)
        state, states = context, []
        for t in range(T):
            state = self.decoder(steps_in[:, t], state)
            states.append(state)
        return self.out(torch.cat([torch.stack(states, dim=1), ctx], dim=2))   # (B, T, V)
'''),
]
