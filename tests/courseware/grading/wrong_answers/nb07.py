"""Notebook 07: wrong answers students write for the decoder mask, the decoder layer and the block."""

from wrong_answers import Right, Wrong

_MASK = '''def decoder_self_mask(tgt, pad_id=0):
    T = tgt.shape[1]
    causal = {causal}
    real = {real}
    return {ret}
'''


def _mask(causal="torch.ones(T, T, dtype=torch.bool).tril()", real="(tgt != pad_id)[:, None, None, :]",
          ret="causal & real"):
    return _MASK.format(causal=causal, real=real, ret=ret)


_DEC = '''def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):
    a = layer.self_attn(x, x, x, attn_mask={self_mask}, need_weights=False)[0]
    x = {first}
    c = layer.multihead_attn(x, memory, memory, key_padding_mask={pad}, need_weights=False)[0]
    x = layer.norm2(x + c)
    f = layer.linear2(F.relu(layer.linear1(x)))
    return layer.norm3(x + f)
'''


def _dec(self_mask="tgt_mask", first="layer.norm1(x + a)", pad="memory_key_padding_mask"):
    return _DEC.format(self_mask=self_mask, first=first, pad=pad)


_BLOCK = '''class Block(nn.Module):
    def __init__(self, d_model, num_heads, residual=True):
        super().__init__()
        self.residual = residual
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        h = self.ln1(x)
        a = {attn}
        x = {after_attn}
        f = self.ffn(self.ln2(x))
        return {out}
'''


def _block(attn="self.attn(h, h, h, need_weights=False)[0]", after_attn="x + a if self.residual else a",
           out="x + f if self.residual else f"):
    return _BLOCK.format(attn=attn, after_attn=after_attn, out=out)


_DEC_ADDITIVE = '''def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):
    self_mask = torch.zeros(tgt_mask.shape).masked_fill(tgt_mask, float("-inf"))
    pad = torch.zeros(memory_key_padding_mask.shape).masked_fill(memory_key_padding_mask, float("-inf"))
    a = layer.self_attn(x, x, x, attn_mask=self_mask, need_weights=False)[0]
    x = layer.norm1(x + a)
    c = layer.multihead_attn(x, memory, memory, key_padding_mask=pad, need_weights=False)[0]
    x = layer.norm2(x + c)
    return layer.norm3(x + layer.linear2(F.relu(layer.linear1(x))))
'''

_DEC_PARALLEL = '''def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):
    a = layer.self_attn(x, x, x, attn_mask=tgt_mask, need_weights=False)[0]
    c = layer.multihead_attn(x, memory, memory, key_padding_mask=memory_key_padding_mask, need_weights=False)[0]
    x = layer.norm1(x + a)
    x = layer.norm2(x + c)
    return layer.norm3(x + layer.linear2(F.relu(layer.linear1(x))))
'''

_BLOCK_GELU = _BLOCK.format(attn="self.attn(h, h, h, need_weights=False)[0]", after_attn="x + a if self.residual else a",
                            out="x + f if self.residual else f").replace(
    "nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))",
    "nn.Sequential(nn.Linear(d_model, 2 * d_model), nn.GELU(), nn.Linear(2 * d_model, d_model))")
_BLOCK_NARROW = _BLOCK_GELU.replace("2 * d_model", "d_model").replace("nn.GELU()", "nn.ReLU()")
_BLOCK_SEQ_FIRST = _BLOCK.format(attn="self.attn(h, h, h, need_weights=False)[0]", after_attn="x + a if self.residual else a",
                                 out="x + f if self.residual else f").replace(", batch_first=True)", ")")

WRONG = [
    Wrong("ex1", "the causal part transposed (keys after the query allowed)", _mask(causal="torch.ones(T, T, dtype=torch.bool).triu()")),
    Wrong("ex1", "padding masked on the query axis", _mask(real="(tgt != pad_id)[:, None, :, None]")),
    Wrong("ex1", "torch's convention (True = blocked)", _mask(ret="~(causal & real)")),
    Wrong("ex1", "the padding ignored", _mask(ret="causal.expand(tgt.shape[0], 1, T, T)")),
    Wrong("ex2", "no mask in the self-attention", _dec(self_mask="None")),
    Wrong("ex2", "the residual left out of the first sub-layer", _dec(first="layer.norm1(a)")),
    Wrong("ex2", "the memory's padding not masked", _dec(pad="None")),
    Wrong("ex2", "the layer called, which the exercise forbids",
          "def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):\n"
          "    return layer(x, memory, tgt_mask=tgt_mask, memory_key_padding_mask=memory_key_padding_mask)\n"),
    Wrong("ex4", "the residual flag ignored (always residual)", _block(after_attn="x + a", out="x + f")),
    Wrong("ex4", "attention skipped: the block passes its input through the FFN only",
          _block(attn="torch.zeros_like(h)")),
    Wrong("ex4", "post-LN instead of pre-LN", _block(attn="self.attn(x, x, x, need_weights=False)[0]",
                                                    after_attn="self.ln1(x + a) if self.residual else self.ln1(a)",
                                                    out="x + f if self.residual else f")),
    # the student report (student_07_10.md): four mistakes that passed every visible check before issue 39
    Wrong("ex1", "the pad id hard-coded as 0 (pad_id ignored)", _mask(real="(tgt != 0)[:, None, None, :]")),
    Wrong("ex2", "the masks made additive with masked_fill (crashes when a mask is None)", _DEC_ADDITIVE),
    Wrong("ex4", "an FFN of width 2·d with GELU instead of 4·d with ReLU", _BLOCK_GELU),
    Wrong("ex4", "only the query normalised: attn(ln1(x), x, x)", _block(attn="self.attn(h, x, x, need_weights=False)[0]")),
    # more, written from the prompts alone (issue 39)
    Wrong("ex1", "the head axis left out: a (B, T, T) mask", _mask(real="(tgt != pad_id)[:, None, :]")),
    Wrong("ex1", "a token may not attend itself (strictly earlier keys only)", _mask(causal="torch.ones(T, T, dtype=torch.bool).tril(-1)")),
    Wrong("ex1", "the mask returned as integers", _mask(ret="(causal & real).long()")),
    Wrong("ex1", "id 0 treated as padding as well as pad_id", _mask(real="((tgt != pad_id) & (tgt != 0))[:, None, None, :]")),
    Wrong("ex1", "padded queries blocked too (their whole row False)",
          _mask(real="(tgt != pad_id)[:, None, None, :] & (tgt != pad_id)[:, None, :, None]")),
    Wrong("ex2", "a causal mask built inside, tgt_mask ignored", _dec(self_mask="torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).triu(1)")),
    Wrong("ex2", "GELU in the feed-forward network", _DEC.format(self_mask="tgt_mask", first="layer.norm1(x + a)", pad="memory_key_padding_mask").replace("F.relu", "F.gelu")),
    Wrong("ex2", "the cross-attention's query taken before the first sub-layer (sub-layers side by side)", _DEC_PARALLEL),
    Wrong("ex2", "the last norm applied to the FFN's output before the residual sum",
          _DEC.format(self_mask="tgt_mask", first="layer.norm1(x + a)", pad="memory_key_padding_mask").replace(
              "return layer.norm3(x + f)", "return x + layer.norm3(f)")),
    Wrong("ex2", "the memory padding mask inverted (read as True = real)", _dec(pad="~memory_key_padding_mask")),
    Wrong("ex4", "the FFN not widened: d_model -> d_model -> d_model", _BLOCK_NARROW),
    Wrong("ex4", "residual=False still adds the residual around the FFN", _block(out="x + f")),
    Wrong("ex4", "the residual adds the normalised input: x <- ln1(x) + attn(ln1(x))", _block(after_attn="h + a if self.residual else a")),
    Wrong("ex4", "batch_first left out of nn.MultiheadAttention (attention across the batch)", _BLOCK_SEQ_FIRST),
    Wrong("ex4", "the residual stream normalised at the end of the block", _block(out="self.ln2(x + f) if self.residual else f")),
]

RIGHT = [
    Right("ex1", "padding found by a running count of pad ids (right-padded batches)", '''def decoder_self_mask(tgt, pad_id=0):
    B, T = tgt.shape
    real = (tgt == pad_id).long().cumsum(-1) == 0                 # (B, T): before the first pad
    allowed = torch.tril(torch.ones(T, T, device=tgt.device)).bool()
    return allowed.unsqueeze(0).unsqueeze(0) & real.view(B, 1, 1, T)
'''),
    Right("ex2", "masks passed by keyword with need_weights left at its default", '''def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):
    x = layer.norm1(x + layer.self_attn(query=x, key=x, value=x, attn_mask=tgt_mask)[0])
    x = layer.norm2(x + layer.multihead_attn(query=x, key=memory, value=memory,
                                             key_padding_mask=memory_key_padding_mask)[0])
    return layer.norm3(x + layer.linear2(torch.relu(layer.linear1(x))))
'''),
    Right("ex1", "position comparisons instead of tril", '''def decoder_self_mask(tgt, pad_id=0):
    T = tgt.shape[1]
    pos = torch.arange(T, device=tgt.device)
    return (pos[None, :] <= pos[:, None])[None, None] & (tgt != pad_id)[:, None, None, :]
'''),
    Right("ex2", "ReLU as a clamp, the sub-layers named one by one", '''def decoder_layer_forward(layer, x, memory, tgt_mask, memory_key_padding_mask):
    sa, _ = layer.self_attn(x, x, x, attn_mask=tgt_mask)
    h1 = layer.norm1(x + sa)
    ca, _ = layer.multihead_attn(h1, memory, memory, key_padding_mask=memory_key_padding_mask)
    h2 = layer.norm2(h1 + ca)
    return layer.norm3(h2 + layer.linear2(layer.linear1(h2).clamp(min=0)))
'''),
    Right("ex4", "the residual as a branch on the flag, the FFN built step by step", '''class Block(nn.Module):
    def __init__(self, d_model, num_heads, residual=True):
        super().__init__()
        self.residual = residual
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d_model)
        self.ffn = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        h = self.ln1(x)
        a, _ = self.attn(h, h, h)
        if self.residual:
            x = x + a
            return x + self.ffn(self.ln2(x))
        return self.ffn(self.ln2(a))
'''),
]
