"""Notebook 06: wrong answers students write for the sinusoidal encoding, RoPE and the look-back model."""

from wrong_answers import Right, Wrong

_SIN = '''def sinusoidal(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    two_i = {two_i}
    angles = pos / 10000 ** (two_i / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = {even}
    pe[:, 1::2] = {odd}
    return pe
'''


def _sin(two_i="torch.arange(0, d_model, 2, dtype=torch.float64)", even="torch.sin(angles)", odd="torch.cos(angles)"):
    return _SIN.format(two_i=two_i, even=even, odd=odd)


_ROPE = '''def rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    pos = {pos}
    omega = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    theta = pos * omega
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = {first}
    out[..., 1::2] = {second}
    return out
'''


def _rope(pos="torch.arange(offset, offset + T, dtype=torch.float64)[:, None]", first="x_even * cos - x_odd * sin",
          second="x_even * sin + x_odd * cos"):
    return _ROPE.format(pos=pos, first=first, second=second)


_LOOK = '''from torch import nn
import torch.nn.functional as F


class AddPositions(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        {store}

    def forward(self, x):
        return {add}


def lookback_accuracy(use_positions, k, seed, steps=300):
    V, T, D = 8, 12, 32
    torch.manual_seed(seed)
    emb, attn, out = nn.Embedding(V, D), nn.MultiheadAttention(D, 2, batch_first=True), nn.Linear(D, V)
    pos = AddPositions(D) if use_positions else nn.Identity()

    def logits(x):
        z = pos(emb(x))
        return out(attn(z, z, z, need_weights=False)[0])

    opt = torch.optim.Adam([*emb.parameters(), *attn.parameters(), *out.parameters()], lr=3e-3)
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randint(V, (64, T), generator=g)
        loss = F.cross_entropy(logits(x)[:, k:].reshape(-1, V), {target}.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
    x = torch.randint(V, (500, T), generator=torch.Generator().manual_seed(seed + 1000))
    with torch.no_grad():
        return (logits(x)[:, k:].argmax(-1) == {target}).float().mean().item()
'''


def _look(store='self.register_buffer("pe", sinusoidal(max_len, d_model).float())', add="x + self.pe[: x.shape[1]]",
          target="x[:, :-k]"):
    return _LOOK.format(store=store, add=add, target=target)


WRONG = [
    Wrong("ex1", "the exponent i/d instead of 2i/d", _sin(two_i="torch.arange(0, d_model // 2, dtype=torch.float64)")),
    Wrong("ex1", "sine and cosine swapped", _sin(even="torch.cos(angles)", odd="torch.sin(angles)")),
    Wrong("ex1", "sine on every dimension", _sin(odd="torch.sin(angles)")),
    Wrong("ex3", "the rotation's sign flipped (the lesson's offset matrix reused)",
          _rope(first="x_even * cos + x_odd * sin", second="-x_even * sin + x_odd * cos")),
    Wrong("ex3", "the offset ignored", _rope(pos="torch.arange(T, dtype=torch.float64)[:, None]")),
    Wrong("ex3", "positions start at 1", _rope(pos="torch.arange(offset + 1, offset + T + 1, dtype=torch.float64)[:, None]")),
    Wrong("ex4", "the encoding as a trained parameter",
          _look(store='self.pe = nn.Parameter(sinusoidal(max_len, d_model).float())')),
    Wrong("ex4", "the encoding multiplied in, not added", _look(add="x * self.pe[: x.shape[1]]")),
    Wrong("ex4", "the target k places ahead, not back", _look(target="x[:, k:]")),
    # more, written from the prompts alone (issue 39)
    Wrong("ex1", "the cosine with the exponent (2i+1)/d (as some course notes write it)",
          _sin(odd="torch.cos(pos / 10000 ** ((two_i + 1) / d_model))")),
    Wrong("ex1", "positions counted from 1", _SIN.format(two_i="torch.arange(0, d_model, 2, dtype=torch.float64)",
          even="torch.sin(angles)", odd="torch.cos(angles)").replace("torch.arange(max_len, dtype=torch.float64)", "torch.arange(1, max_len + 1, dtype=torch.float64)")),
    Wrong("ex1", "sines in the first half, cosines in the second (not interleaved)", '''def sinusoidal(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    angles = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)
'''),
    Wrong("ex1", "the width hard-coded as 16", _sin(two_i="torch.arange(0, 16, 2, dtype=torch.float64)")),
    Wrong("ex1", "the base 1000 instead of 10000", _SIN.format(two_i="torch.arange(0, d_model, 2, dtype=torch.float64)",
          even="torch.sin(angles)", odd="torch.cos(angles)").replace("10000 **", "1000 **")),
    Wrong("ex3", "the rotate-half convention (dimension i paired with i + d/2)", '''def rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    a, b = x[..., : d // 2], x[..., d // 2:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
'''),
    Wrong("ex3", "the exponent i/d instead of 2i/d", _ROPE.format(pos="torch.arange(offset, offset + T, dtype=torch.float64)[:, None]",
          first="x_even * cos - x_odd * sin", second="x_even * sin + x_odd * cos").replace(
              "-torch.arange(0, d, 2, dtype=torch.float64) / d", "-torch.arange(0, d // 2, dtype=torch.float64) / d")),
    Wrong("ex3", "float32 returned for float64 input", _rope().replace("return out", "return out.float()")),
    Wrong("ex3", "x rotated in place (its views written to)", '''def rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2].clone(), x[..., 1::2].clone()
    x[..., 0::2] = x_even * cos - x_odd * sin
    x[..., 1::2] = x_even * sin + x_odd * cos
    return x
'''),
    Wrong("ex3", "T read from x.shape[1] (right only for 3-d inputs)", _rope().replace("T, d = x.shape[-2], x.shape[-1]", "T, d = x.shape[1], x.shape[-1]")),
    Wrong("ex3", "the base argument ignored (always 10000)", _rope().replace("omega = base **", "omega = 10000.0 **")),
    Wrong("ex4", "the table sliced by the batch size, not the length", _look(add="x + self.pe[: x.shape[0]]")),
    Wrong("ex4", "the table kept as a plain attribute, not a buffer",
          _look(store='self.pe = sinusoidal(max_len, d_model).float()')),
    Wrong("ex4", "the table kept in float64 (the model's float32 activations become float64)",
          _look(store='self.register_buffer("pe", sinusoidal(max_len, d_model))')),
    Wrong("ex4", "a table of max_len rows whatever the length: T = max_len assumed", _look(add="x + self.pe")),
]

RIGHT = [
    Right("ex1", "float32 throughout (angles in float32)", '''def sinusoidal(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float32)[:, None]
    angles = pos / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    pe = torch.zeros(max_len, d_model)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return pe
'''),
    Right("ex3", "angles in PyTorch's default float32 (review 06-1)", '''def rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = torch.arange(offset, offset + T)[:, None] * base ** (-torch.arange(0, d, 2) / d)
    cos, sin = theta.cos().to(x.dtype), theta.sin().to(x.dtype)
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).flatten(-2)
'''),
    Right("ex1", "frequencies by exp and log, sine and cosine interleaved by stacking", '''def sinusoidal(max_len, d_model):
    pos = torch.arange(max_len, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    return torch.stack([torch.sin(pos * freq), torch.cos(pos * freq)], dim=-1).reshape(max_len, d_model)
'''),
    Right("ex3", "complex numbers", '''def rope(x, offset=0, base=10000.0):
    T, d = x.shape[-2], x.shape[-1]
    theta = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * base ** (
        -torch.arange(0, d, 2, dtype=torch.float64) / d)
    z = torch.view_as_complex(x.double().reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(theta), theta)).reshape(x.shape).to(x.dtype)
'''),
    Right("ex4", "the formula written again (float64, exp and log), the model as an nn.Module, loss over transposed logits",
          '''import math

from torch import nn
import torch.nn.functional as F


class AddPositions(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)                        # (L, 1)
        rate = torch.exp(torch.arange(0, d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
        table = torch.zeros(max_len, d_model, dtype=torch.float64)
        table[:, 0::2] = torch.sin(pos * rate)
        table[:, 1::2] = torch.cos(pos * rate)
        self.register_buffer("table", table.to(torch.get_default_dtype()))

    def forward(self, x):
        return x + self.table[: x.size(1)].unsqueeze(0)


class LookBack(nn.Module):
    def __init__(self, use_positions):
        super().__init__()
        self.emb = nn.Embedding(8, 32)
        self.pos = AddPositions(32) if use_positions else None
        self.attn = nn.MultiheadAttention(32, 2, batch_first=True)
        self.head = nn.Linear(32, 8)

    def forward(self, ids):
        z = self.emb(ids)
        if self.pos is not None:
            z = self.pos(z)
        mixed, _ = self.attn(z, z, z)
        return self.head(mixed)


def lookback_accuracy(use_positions, k, seed, steps=300):
    torch.manual_seed(seed)
    model = LookBack(use_positions)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(seed)
    for step in range(steps):
        seqs = torch.randint(0, 8, (64, 12), generator=gen)
        logits = model(seqs)
        loss = F.cross_entropy(logits[:, k:].transpose(1, 2), seqs[:, : 12 - k])
        opt.zero_grad()
        loss.backward()
        opt.step()
    test = torch.randint(0, 8, (500, 12), generator=torch.Generator().manual_seed(seed + 1000))
    model.eval()
    with torch.no_grad():
        right = model(test)[:, k:].argmax(dim=-1) == test[:, : 12 - k]
    return right.float().mean().item()
'''),
]
