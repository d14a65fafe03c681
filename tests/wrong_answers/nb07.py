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
]

RIGHT = [
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
