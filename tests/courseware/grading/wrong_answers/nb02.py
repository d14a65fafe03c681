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


_BLEU = '''import math
from collections import Counter


def multi_ref_bleu(hyps, refs):
    matched, total = [0] * 4, [0] * 4
    c = r = 0
    for hyp, its_refs in zip(hyps, refs):
        c += len(hyp)
        r += {ref_len}
        for n in range(1, 5):
            grams = Counter(tuple(hyp[k:k + n]) for k in range(len(hyp) - n + 1))
            most = Counter()
            for ref in its_refs:
                most {combine}= Counter(tuple(ref[k:k + n]) for k in range(len(ref) - n + 1))
            matched[n - 1] += sum({credit} for g, k in grams.items())
            total[n - 1] += sum(grams.values())
    if min(matched) == 0:
        return {zero}
    bp = 1.0 if c >= r else math.exp(1 - r / c)
    return 100 * bp * math.exp(sum(math.log(m / t) for m, t in zip(matched, total)) / 4)
'''


def _bleu(ref_len="min((abs(len(ref) - len(hyp)), len(ref)) for ref in its_refs)[1]", combine="|",
          credit="min(k, most[g])", zero="0.0"):
    return _BLEU.format(ref_len=ref_len, combine=combine, credit=credit, zero=zero)


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
    # the new Exercise 5 (lessons r3, 02-5): BLEU against several references
    Wrong("ex5", "the references' counts added, not their maximum", _bleu(combine="+")),
    Wrong("ex5", "no clipping at all", _bleu(credit="k if most[g] else 0")),
    Wrong("ex5", "r from the first reference", _bleu(ref_len="len(its_refs[0])")),
    Wrong("ex5", "r from the shortest reference", _bleu(ref_len="min(len(ref) for ref in its_refs)")),
    Wrong("ex5", "r from the mean reference length", _bleu(ref_len="sum(len(ref) for ref in its_refs) / len(its_refs)")),
    Wrong("ex5", "a tie broken towards the longer reference", _bleu(
        ref_len="min((abs(len(ref) - len(hyp)), -len(ref)) for ref in its_refs)[1] * -1")),
    Wrong("ex5", "the integer 0 when a precision is 0", _bleu(zero="0")),
    Wrong("ex5", "the mean of sentence scores, not corpus BLEU", '''import math
from collections import Counter


def multi_ref_bleu(hyps, refs):
    scores = []
    for hyp, its_refs in zip(hyps, refs):
        ps = []
        for n in range(1, 5):
            grams = Counter(tuple(hyp[k:k + n]) for k in range(len(hyp) - n + 1))
            most = Counter()
            for ref in its_refs:
                most |= Counter(tuple(ref[k:k + n]) for k in range(len(ref) - n + 1))
            ps.append((sum(min(k, most[g]) for g, k in grams.items()), sum(grams.values())))
        if min(m for m, _ in ps) == 0:
            scores.append(0.0)
            continue
        r = min((abs(len(ref) - len(hyp)), len(ref)) for ref in its_refs)[1]
        bp = 1.0 if len(hyp) >= r else math.exp(1 - r / len(hyp))
        scores.append(100 * bp * math.exp(sum(math.log(m / t) for m, t in ps) / 4))
    return sum(scores) / len(scores)
'''),
    Wrong("ex5", "sacreBLEU itself, which the exercise forbids", '''import sacrebleu


def multi_ref_bleu(hyps, refs):
    slots = max(len(rs) for rs in refs)
    streams = [[" ".join(rs[k]) if k < len(rs) else None for rs in refs] for k in range(slots)]
    return sacrebleu.corpus_bleu([" ".join(h) for h in hyps], streams, tokenize="none",
                                 smooth_method="none", force=True).score
'''),
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
    Right("ex5", "clipped counts by max over dictionaries, the closest length by sorting, logs summed in a loop",
          '''import math
from collections import Counter


def multi_ref_bleu(hyps, refs):
    hits = [0, 0, 0, 0]
    seen = [0, 0, 0, 0]
    hyp_len = ref_len = 0
    for hyp, options in zip(hyps, refs):
        hyp_len += len(hyp)
        ref_len += len(sorted(options, key=lambda ref: (abs(len(ref) - len(hyp)), len(ref)))[0])
        for n in (1, 2, 3, 4):
            mine = Counter(tuple(hyp[i:i + n]) for i in range(len(hyp) - n + 1))
            best = {}
            for ref in options:
                for gram, count in Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1)).items():
                    best[gram] = max(best.get(gram, 0), count)
            hits[n - 1] += sum(min(count, best.get(gram, 0)) for gram, count in mine.items())
            seen[n - 1] += sum(mine.values())
    if 0 in hits:
        return 0.0
    log_mean = 0.0
    for h, s in zip(hits, seen):
        log_mean += math.log(h / s) / 4
    penalty = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    return 100.0 * penalty * math.exp(log_mean)
'''),
]
