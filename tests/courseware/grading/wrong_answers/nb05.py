"""Notebook 05: wrong answers students write for the head split and the multi-head module."""

from wrong_answers import Right, Wrong

_SPLIT = '''def split_heads(x, num_heads):
    B, T, d = x.shape
    return {split}


def merge_heads(x):
    B, H, T, d_h = x.shape
    return {merge}
'''


def _split(split="x.view(B, T, num_heads, d // num_heads).transpose(1, 2)",
           merge="x.transpose(1, 2).reshape(B, T, H * d_h)"):
    return _SPLIT.format(split=split, merge=merge)


_MHA = '''class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h, self.d_h = num_heads, d_model // num_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        Tk = x_kv.shape[1]
        q = self.w_q(x_q).view(B, Tq, self.h, self.d_h).transpose(1, 2)
        k = self.w_k(x_kv).view(B, Tk, self.h, self.d_h).transpose(1, 2)
        v = self.w_v(x_kv).view(B, Tk, self.h, self.d_h).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / {scale}
        if mask is not None:
            scores = {fill}
        self.weights = scores.softmax(-1)
        out = {merge}
        return {ret}
'''


def _mha(scale="math.sqrt(self.d_h)", fill='scores.masked_fill(~mask, float("-inf"))',
         merge="(self.weights @ v).transpose(1, 2).reshape(B, Tq, d)", ret="self.w_o(out)"):
    return _MHA.format(scale=scale, fill=fill, merge=merge, ret=ret)


WRONG = [
    Wrong("ex1", "a reshape without the transpose (heads cut across time)",
          _split(split="x.reshape(B, num_heads, T, d // num_heads)", merge="x.reshape(B, T, H * d_h)")),
    Wrong("ex1", "head i takes every h-th feature, not a contiguous slice",
          _split(split="x.view(B, T, d // num_heads, num_heads).permute(0, 3, 1, 2)",
                 merge="x.permute(0, 2, 3, 1).reshape(B, T, H * d_h)")),
    Wrong("ex1", "merge without the transpose back", _split(merge="x.reshape(B, T, H * d_h)")),
    # the student report (student_03_05.md): passed every visible check before issue 39
    Wrong("ex1", "merge with .view after the transpose (fails on a contiguous (B, H, T, d_k) tensor)",
          _split(merge="x.transpose(1, 2).view(B, T, H * d_h)")),
    Wrong("ex1", "d_k hard-coded to the lesson's 4", _split(split="x.view(B, T, num_heads, 4).transpose(1, 2)")),
    # written from the prompt alone
    Wrong("ex1", "num_heads read as the head size (right only when d_k = H)",
          _split(split="x.view(B, T, -1, num_heads).transpose(1, 2)")),
    Wrong("ex1", "merge unpacks the shape as (B, T, H, d_k)", _SPLIT.format(
        split="x.view(B, T, num_heads, d // num_heads).transpose(1, 2)",
        merge="x.transpose(1, 2).reshape(B, T, H * d_h)").replace("B, H, T, d_h = x.shape", "B, T, H, d_h = x.shape")),
    Wrong("ex1", "merge concatenates the heads along time", _split(merge="torch.cat(x.unbind(1), dim=1)")),
    Wrong("ex1", "split moves the feature axis, not the time axis", _split(
        split="x.view(B, T, num_heads, d // num_heads).permute(0, 2, 3, 1)",
        merge="x.permute(0, 3, 1, 2).reshape(B, T, H * d_h)")),
    Wrong("ex1", "split returns the chunks as a tuple", _split(split="x.chunk(num_heads, dim=-1)",
                                                               merge="torch.cat(x, dim=-1)")),
    Wrong("ex1", "split with .view on the whole tensor (fails on a non-contiguous x)", _split(
        split="x.view(B * T * d).view(B, T, num_heads, d // num_heads).transpose(1, 2)")),
    Wrong("ex2", "scaled by the model width, not the head size", _mha(scale="math.sqrt(d)")),
    Wrong("ex2", "the output projection left out", _mha(ret="out")),
    Wrong("ex2", "the heads merged without the transpose", _mha(merge="(self.weights @ v).reshape(B, Tq, d)")),
    # the student report (student_03_05.md): passed every visible check before issue 39
    Wrong("ex2", "the mask convention inverted (True = blocked)", _mha(fill='scores.masked_fill(mask, float("-inf"))')),
    Wrong("ex2", "the mask applied after the softmax, not renormalised", _mha().replace(
        "        self.weights = scores.softmax(-1)\n",
        "        self.weights = scores.softmax(-1)\n        if mask is not None:\n            self.weights = self.weights * mask\n")
          .replace('scores = scores.masked_fill(~mask, float("-inf"))', 'pass')),
    Wrong("ex2", "softmax over the queries (dim=-2)", _mha().replace("scores.softmax(-1)", "scores.softmax(-2)")),
    # written from the prompt alone
    Wrong("ex2", "keys and values projected from x_q (always self-attention)", _mha()
          .replace("self.w_k(x_kv)", "self.w_k(x_q)").replace("self.w_v(x_kv)", "self.w_v(x_q)")
          .replace("Tk = x_kv.shape[1]", "Tk = Tq")),
    Wrong("ex2", "the mask added to the scores as numbers (True = +1)", _mha(fill="scores + mask")),
    Wrong("ex2", "a (B, Tk) padding mask assumed: the mask indexed as mask[:, None, None, :]",
          _mha(fill='scores.masked_fill(~mask[:, None, None, :] if mask.dim() == 2 else ~mask, float("-inf"))')),
    Wrong("ex2", "self.weights kept before the masking (the raw scores' softmax)", _mha().replace(
        "        if mask is not None:\n            scores = scores.masked_fill(~mask, float(\"-inf\"))\n        self.weights = scores.softmax(-1)\n",
        "        self.weights = scores.softmax(-1)\n        if mask is not None:\n            scores = scores.masked_fill(~mask, float(\"-inf\"))\n"
        "        attn = scores.softmax(-1)\n").replace("(self.weights @ v)", "(attn @ v)")),
    Wrong("ex2", "self.weights averaged over the heads, as nn.MultiheadAttention returns by default",
          _mha(merge="(self.weights @ v).transpose(1, 2).reshape(B, Tq, d)\n        self.weights = self.weights.mean(1)")),
    Wrong("ex2", "the masked scores filled with 0 instead of -inf", _mha(fill="scores.masked_fill(~mask, 0.0)")),
    Wrong("ex2", "nn.MultiheadAttention inside, which the exercise forbids", '''class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.inner = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
        self.w_q, self.w_k, self.w_v = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.w_o = self.inner.out_proj

    def forward(self, x_q, x_kv, mask=None):
        d = x_q.shape[-1]
        with torch.no_grad():
            self.inner.in_proj_weight.copy_(torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight]))
            self.inner.in_proj_bias.copy_(torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias]))
        out, self.weights = self.inner(x_q, x_kv, x_kv, attn_mask=None if mask is None else ~mask,
                                       average_attn_weights=False)
        return out
'''),
]

RIGHT = [
    Right("ex1", "unflatten and flatten", '''def split_heads(x, num_heads):
    return x.unflatten(-1, (num_heads, -1)).transpose(-3, -2)


def merge_heads(x):
    return x.transpose(-3, -2).flatten(-2)
'''),
    Right("ex1", "reshape and permute", '''def split_heads(x, num_heads):
    B, T, d = x.shape
    return x.reshape(B, T, num_heads, -1).permute(0, 2, 1, 3)


def merge_heads(x):
    B, H, T, d_h = x.shape
    return x.permute(0, 2, 1, 3).reshape(B, T, -1)
'''),
    Right("ex2", "einsum per head and torch.where for the mask", '''class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
        self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

    def forward(self, x_q, x_kv, mask=None):
        B, Tq, d = x_q.shape
        h = self.num_heads
        q = self.w_q(x_q).reshape(B, Tq, h, d // h)
        k = self.w_k(x_kv).reshape(B, -1, h, d // h)
        v = self.w_v(x_kv).reshape(B, -1, h, d // h)
        scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(d // h)
        if mask is not None:
            scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
        self.weights = torch.softmax(scores, dim=-1)
        return self.w_o(torch.einsum("bhqk,bkhd->bqhd", self.weights, v).reshape(B, Tq, d))
'''),
]
