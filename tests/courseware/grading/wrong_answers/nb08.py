"""Notebook 08: wrong answers students write for beam search with a length penalty and label smoothing."""

from wrong_answers import Right, Wrong, model_answer, variant

_SMOOTH = '''def smoothed_loss(logits, target, eps, pad_id=0):
    logp = logits.log_softmax(-1)
    V = logits.shape[-1]
    nll = -logp.gather(1, target[:, None]).squeeze(1)
    uniform = {uniform}
    loss = {mix}
    keep = target != pad_id
    return {ret}
'''


def _smooth(uniform="-logp.mean(-1)", mix="(1 - eps) * nll + eps * uniform", ret="loss[keep].mean()"):
    return _SMOOTH.format(uniform=uniform, mix=mix, ret=ret)


WRONG = [
    Wrong("ex2", "the padding averaged in", _smooth(ret="loss.mean()")),
    Wrong("ex2", "eps spread over the V - 1 wrong words", _smooth(
        uniform="-(logp.sum(-1) - logp.gather(1, target[:, None]).squeeze(1)) / (V - 1)")),
    Wrong("ex2", "eps ignored", _smooth(mix="nll")),
    Wrong("ex2", "F.cross_entropy, which the exercise forbids", "def smoothed_loss(logits, target, eps, pad_id=0):\n"
          "    return F.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=eps)\n"),
]

_BEAM = model_answer("08", "ex1")

WRONG += [
    Wrong("ex1", "no length penalty (summed log-probabilities compared)",
          variant(_BEAM, "finished.append((toks[:-1], s / penalty(len(toks))))", "finished.append((toks[:-1], s))")),
    Wrong("ex1", "the finished length counted without <eos>",
          variant(_BEAM, "finished.append((toks[:-1], s / penalty(len(toks))))",
                  "finished.append((toks[:-1], s / penalty(len(toks) - 1)))")),
    Wrong("ex1", "every <eos> candidate finishes, even below the beam_size best (it then stops the search early)",
          variant(_BEAM, "if rank < beam_size:", "if True:")),
    Wrong("ex1", "a hypothesis cut off at max_len scored as if it had an <eos> (n + 1)",
          variant(_BEAM, "finished += [(toks, s / penalty(len(toks)))", "finished += [(toks, s / penalty(len(toks) + 1))")),
    Wrong("ex1", "the live hypotheses left out when max_len is reached",
          variant(_BEAM, "finished += [(toks, s / penalty(len(toks))) for toks, s in live]", "pass")),
    Wrong("ex1", "only the single best next token of each hypothesis",
          variant(_BEAM, "top = logp[b].topk(beam_size)", "top = logp[b].topk(1)")),
    Wrong("ex1", "utils.transformer.beam_search, which the exercise forbids",
          "from utils.transformer import beam_search\n\n\n"
          "def beam_search_lp(model, src, beam_size, max_len, bos_id, eos_id, alpha=0.6):\n"
          "    tokens = beam_search(model, src, beam_size, max_len, bos_id, eos_id, length_penalty=alpha)[0]\n"
          "    tokens = [t for t in tokens if t not in (bos_id, eos_id)]\n"
          "    return tokens, model_score(model, src, tokens, bos_id, eos_id, alpha)\n"),
]

RIGHT = [
    Right("ex2", "log-softmax by logsumexp, a weighted mean over the kept positions", '''def smoothed_loss(logits, target, eps, pad_id=0):
    N, V = logits.shape
    logp = logits - logits.logsumexp(-1, keepdim=True)
    per_position = -(1 - eps) * logp[torch.arange(N), target] - eps * logp.sum(-1) / V
    keep = (target != pad_id).to(logits.dtype)
    return (per_position * keep).sum() / keep.sum()
'''),
    Right("ex1", "hypotheses as a tensor, candidates ranked by one stable sort of a (live, beam_size) score table",
          '''def beam_search_lp(model, src, beam_size, max_len, bos_id, eos_id, alpha=0.6):
    def lp(n):
        return ((5 + n) / 6) ** alpha

    model.eval()
    with torch.no_grad():
        mask = model.src_mask(src)
        memory = model.encode(src, mask)
        seqs = torch.full((1, 1), bos_id, dtype=torch.long, device=src.device)    # (n, t + 1), <bos> first
        scores = torch.zeros(1, device=src.device)                              # (n,) summed log-probabilities
        done = []
        step = 0
        while step < max_len:
            step += 1
            n = seqs.shape[0]
            out = model.decode(seqs, memory.repeat(n, 1, 1), mask.repeat(n, 1, 1, 1))
            logp = F.log_softmax(out[:, -1], dim=-1)                           # (n, V)
            top_lp, top_id = logp.topk(beam_size, dim=-1)                       # (n, K)
            total = (scores[:, None] + top_lp).flatten()                        # (n * K,), hypothesis-major
            order = torch.sort(total, descending=True, stable=True).indices.tolist()
            keep_rows, keep_ids, keep_scores = [], [], []
            for rank, j in enumerate(order):
                row, tok = divmod(j, beam_size)
                tok_id = int(top_id[row, tok])
                if tok_id == eos_id:
                    if rank < beam_size:
                        done.append((seqs[row, 1:].tolist(), float(total[j]) / lp(seqs.shape[1])))
                    continue
                keep_rows.append(row)
                keep_ids.append(tok_id)
                keep_scores.append(float(total[j]))
                if len(keep_rows) == beam_size:
                    break
            if not keep_rows:
                break
            seqs = torch.cat([seqs[keep_rows], torch.tensor(keep_ids, device=src.device)[:, None]], dim=1)
            scores = torch.tensor(keep_scores, device=src.device)
            if len(done) >= beam_size:
                break
        else:
            done += [(seqs[i, 1:].tolist(), float(scores[i]) / lp(seqs.shape[1] - 1)) for i in range(seqs.shape[0])]
        best = max(done, key=lambda d: d[1])
        return best[0], best[1]
'''),
]

_STOP = "            if not live or len(finished) >= beam_size:\n"
_ELSE = "        else:  # max_len reached: the live hypotheses compete as they are\n"

WRONG += [
    # the student report (student_01_08.md): passed every visible check before issue 39
    Wrong("ex1", "the live hypotheses compete after every stop, not only when max_len is reached",
          variant(_BEAM, _ELSE, "        if True:  # the live hypotheses compete\n")),
    Wrong("ex1", "the live hypotheses compete only when nothing has finished",
          variant(_BEAM, _ELSE, "        if not finished:  # the live hypotheses compete\n")),
    Wrong("ex2", "the pad id hard-coded to 0", _smooth(ret="loss[target != 0].mean()")),
    # written from the prompts alone (issue 39)
    Wrong("ex1", "the search stops at the first finished hypothesis",
          variant(_BEAM, _STOP, _STOP.replace("len(finished) >= beam_size", "finished"))),
    Wrong("ex1", "alpha hard-coded to 0.6 in the penalty",
          variant(_BEAM, "return ((5 + n) / 6) ** alpha", "return ((5 + n) / 6) ** 0.6")),
    Wrong("ex1", "<eos> kept in the returned tokens",
          variant(_BEAM, "finished.append((toks[:-1], s / penalty(len(toks))))", "finished.append((toks, s / penalty(len(toks))))")),
    Wrong("ex1", "the prefix's log-probability not carried (each candidate scored by its last token)",
          variant(_BEAM, "(toks + [tok], s + lp)", "(toks + [tok], lp)")),
    Wrong("ex1", "the penalty (5 + n) ** alpha / 6",
          variant(_BEAM, "return ((5 + n) / 6) ** alpha", "return (5 + n) ** alpha / 6")),
    Wrong("ex1", "the finished hypotheses counted per step, not over all the steps",
          variant(variant(_BEAM, "            cands.sort(key=lambda c: -c[1])\n",
                          "            cands.sort(key=lambda c: -c[1])\n            before = len(finished)\n"),
                  _STOP, _STOP.replace("len(finished) >= beam_size", "len(finished) - before >= beam_size"))),
    Wrong("ex1", "max_len counted with <bos> (one step fewer)",
          variant(_BEAM, "for _ in range(max_len):", "for _ in range(max_len - 1):")),
    Wrong("ex1", "hypotheses cut off at max_len compared by their summed log-probability, no penalty",
          variant(_BEAM, "finished += [(toks, s / penalty(len(toks))) for toks, s in live]",
                  "finished += [(toks, s) for toks, s in live]")),
    Wrong("ex2", "the pads' loss zeroed but the sum divided by N", _smooth(ret="(loss * keep).sum() / len(target)")),
    Wrong("ex2", "keep = target > pad_id (right only while the pad id is the smallest id)",
          _smooth(ret="loss[target > pad_id].mean()")),
    Wrong("ex2", "eps times the summed log-probabilities, not their mean", _smooth(uniform="-logp.sum(-1)")),
    Wrong("ex2", "the right word left out of the eps/V share",
          _smooth(uniform="-(logp.sum(-1) - logp.gather(1, target[:, None]).squeeze(1)) / V")),
    Wrong("ex2", "log_softmax over the positions (dim=0)",
          _SMOOTH.format(uniform="-logp.mean(-1)", mix="(1 - eps) * nll + eps * uniform", ret="loss[keep].mean()")
          .replace("logits.log_softmax(-1)", "logits.log_softmax(0)")),
    Wrong("ex2", "softmax, then log (-inf when a logit is far below the largest)",
          _SMOOTH.format(uniform="-logp.mean(-1)", mix="(1 - eps) * nll + eps * uniform", ret="loss[keep].mean()")
          .replace("logits.log_softmax(-1)", "logits.softmax(-1).log()")),
    Wrong("ex2", "the per-position losses returned, not their mean", _smooth(ret="loss[keep]")),
]

RIGHT += [
    Right("ex2", "the smoothed target built as an (N, V) tensor, padded rows weighted 0", '''def smoothed_loss(logits, target, eps, pad_id=0):
    V = logits.shape[1]
    q = torch.full_like(logits, eps / V)
    q[torch.arange(len(target)), target] += 1 - eps
    per_position = -(q * torch.log_softmax(logits, dim=1)).sum(dim=1)
    real = target.ne(pad_id)
    return per_position.masked_select(real).sum() / real.sum()
'''),
]
