"""Notebook 01: wrong answers students write for one-hot vectors, the masked mean, cosine similarities
and the bag-of-embeddings classifier (the student report on 01, and mistakes written from the prompts
alone for issue 39)."""

from wrong_answers import Right, Wrong

_BAG = '''from torch import nn


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab_size, dim, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.out = nn.Linear(dim, num_classes)

    def forward(self, ids, mask):
        m = mask.unsqueeze(-1).to(self.embed.weight.dtype)
        x = self.embed(ids){times_mask}
        return self.out(x.sum(1) / {denominator})


def train_classifier(model, ids, mask, labels, steps=200, lr=0.05):
    {make_optimizer}
    losses = []
    for _ in range({steps}):
        {inner_optimizer}loss = F.cross_entropy({logits}, labels)
        {zero}
        loss.backward()
        optimizer.step()
        losses.append({record})
    return losses
'''


def _bag(times_mask=" * m", denominator="m.sum(1)", zero="optimizer.zero_grad()", record="loss.item()",
         make_optimizer="optimizer = torch.optim.Adam(model.parameters(), lr=lr)", inner_optimizer="",
         logits="model(ids, mask)", steps="steps"):
    return _BAG.format(times_mask=times_mask, denominator=denominator, zero=zero, record=record,
                       make_optimizer=make_optimizer, inner_optimizer=inner_optimizer, logits=logits, steps=steps)


def _one_hot(check="if (ids < 0).any() or (ids >= num_classes).any():\n        raise ValueError('out of range')",
             out="out = torch.zeros(len(ids), num_classes)\n    out[torch.arange(len(ids)), ids] = 1.0\n    return out"):
    return f"def one_hot(ids, num_classes):\n    {check}\n    {out}\n"


WRONG = [
    Wrong("ex1", "an integer tensor, not float", _one_hot(
        out="out = torch.zeros(len(ids), num_classes, dtype=torch.long)\n    out[torch.arange(len(ids)), ids] = 1\n    return out")),
    Wrong("ex1", "no error for an id that is too large", "def one_hot(ids, num_classes):\n"
          "    out = torch.zeros(len(ids), num_classes)\n    out[torch.arange(len(ids)), ids.clamp(max=num_classes - 1)] = 1.0\n"
          "    return out\n"),
    Wrong("ex1", "off by one: the column before the id's", _one_hot(
        out="out = torch.zeros(len(ids), num_classes)\n    out[torch.arange(len(ids)), ids - 1] = 1.0\n    return out")),
    Wrong("ex1", "F.one_hot, which the exercise forbids", _one_hot(out="return F.one_hot(ids, num_classes).float()")),
    # the student report's misses, and mistakes written from the prompt alone (issue 39)
    Wrong("ex1", "negative ids not checked (upper bound only)", _one_hot(
        check="if (ids >= num_classes).any():\n        raise ValueError('out of range')")),
    Wrong("ex1", "off-by-one range check (ids.max() > num_classes): an IndexError, not a ValueError", _one_hot(
        check="if ids.max() > num_classes or ids.min() < 0:\n        raise ValueError('out of range')")),
    Wrong("ex1", "the width taken from the ids, not num_classes", _one_hot(
        out="out = torch.zeros(len(ids), int(ids.max()) + 1)\n    out[torch.arange(len(ids)), ids] = 1.0\n    return out")),
    Wrong("ex1", "an assert instead of a ValueError", _one_hot(
        check="assert 0 <= ids.min() and ids.max() < num_classes, 'out of range'")),
    Wrong("ex1", "every row gets every id", _one_hot(
        out="out = torch.zeros(len(ids), num_classes)\n    out[:, ids] = 1.0\n    return out")),
    Wrong("ex1", "the transposed matrix (num_classes, len(ids))", _one_hot(
        out="out = torch.zeros(num_classes, len(ids))\n    out[ids, torch.arange(len(ids))] = 1.0\n    return out")),
    Wrong("ex2", "the mean over every position, padding included", "def my_masked_mean(x, mask):\n    return x.mean(1)\n"),
    Wrong("ex2", "zeroed padding divided by T", "def my_masked_mean(x, mask):\n"
          "    return (x * mask.unsqueeze(-1)).sum(1) / x.shape[1]\n"),
    Wrong("ex2", "multiplying by the mask lets NaN in the padding through", "def my_masked_mean(x, mask):\n"
          "    m = mask.unsqueeze(-1)\n    return (x * m).sum(1) / m.sum(1)\n"),
    Wrong("ex2", "one mean over all real tokens of the batch", "def my_masked_mean(x, mask):\n"
          "    return x[mask].mean(0).expand(x.shape[0], -1)\n"),
    Wrong("ex2", "divided by the number of real tokens in the whole batch", "def my_masked_mean(x, mask):\n"
          "    return x.masked_fill(~mask.unsqueeze(-1), 0).sum(1) / mask.sum()\n"),
    Wrong("ex2", "a float32 result for float64 inputs", "def my_masked_mean(x, mask):\n"
          "    out = torch.zeros(x.shape[0], x.shape[2])\n    for b in range(x.shape[0]):\n"
          "        out[b] = x[b][mask[b]].mean(0)\n    return out\n"),
    Wrong("ex2", "the mask inverted (True read as padding)", "def my_masked_mean(x, mask):\n"
          "    m = ~mask.unsqueeze(-1)\n    return x.masked_fill(~m, 0).sum(1) / m.sum(1)\n"),
    Wrong("ex2", "the first `length` columns averaged, whatever the mask says per row", "def my_masked_mean(x, mask):\n"
          "    return x[:, :int(mask.sum(1).min())].mean(1)\n"),
    Wrong("ex3", "dot products, not normalised", "def cosine_similarities(E):\n    return E @ E.T\n"),
    Wrong("ex3", "normalised along the wrong axis", "def cosine_similarities(E):\n"
          "    unit = E / E.norm(dim=0, keepdim=True)\n    return unit @ unit.T\n"),
    Wrong("ex3", "F.cosine_similarity, which the exercise forbids", "def cosine_similarities(E):\n"
          "    return F.cosine_similarity(E[:, None, :], E[None, :, :], dim=-1)\n"),
    Wrong("ex3", "squared norms (the square root forgotten)", "def cosine_similarities(E):\n"
          "    n = (E * E).sum(1, keepdim=True)\n    return (E @ E.T) / (n * n.T)\n"),
    Wrong("ex3", "divided by one row's norm only", "def cosine_similarities(E):\n"
          "    return (E @ E.T) / E.norm(dim=1, keepdim=True)\n"),
    Wrong("ex3", "the norms multiplied elementwise, not as an outer product", "def cosine_similarities(E):\n"
          "    n = E.norm(dim=1)\n    return (E @ E.T) / (n * n)\n"),
    Wrong("ex3", "the (D, D) matrix E^T E", "def cosine_similarities(E):\n"
          "    unit = E / E.norm(dim=1, keepdim=True)\n    return unit.T @ unit\n"),
    Wrong("ex3", "computed in float32 whatever the input", "def cosine_similarities(E):\n"
          "    unit = E.float() / E.float().norm(dim=1, keepdim=True)\n    return unit @ unit.T\n"),
    Wrong("ex3", "normalised by the largest entry, not the length", "def cosine_similarities(E):\n"
          "    unit = E / E.abs().amax(dim=1, keepdim=True)\n    return unit @ unit.T\n"),
    Wrong("ex4", "the padding averaged in", _bag(times_mask="", denominator="ids.shape[1]")),
    Wrong("ex4", "the real tokens summed, not averaged", _bag(denominator="1")),
    Wrong("ex4", "zero_grad forgotten (Adam still learns the task)", _bag(zero="pass")),
    Wrong("ex4", "the loss tensors kept, not floats", _bag(record="loss.detach()")),
    Wrong("ex4", "the loss tensors appended as they are", _bag(record="loss")),
    Wrong("ex4", "a new Adam created at every step", _bag(make_optimizer="pass",
          inner_optimizer="optimizer = torch.optim.Adam(model.parameters(), lr=lr)\n        ")),
    Wrong("ex4", "the learning rate ignored (0.05 written in)", _bag(
        make_optimizer="optimizer = torch.optim.Adam(model.parameters(), lr=0.05)")),
    Wrong("ex4", "SGD instead of Adam", _bag(make_optimizer="optimizer = torch.optim.SGD(model.parameters(), lr=lr)")),
    Wrong("ex4", "one step too few", _bag(steps="steps - 1")),
    Wrong("ex4", "a softmax before F.cross_entropy", _bag(logits="model(ids, mask).softmax(-1)")),
    Wrong("ex4", "trained on the first 64 captions only", _bag(logits="model(ids[:64], mask[:64])").replace(
        "labels)\n", "labels[:64])\n", 1)),
    Wrong("ex4", "the mean over real tokens taken in float32 whatever the model's dtype", _bag().replace(
        "m = mask.unsqueeze(-1).to(self.embed.weight.dtype)", "m = mask.unsqueeze(-1).float()").replace(
        "return self.out(x.sum(1) / m.sum(1))", "return self.out((x.sum(1) / m.sum(1)).float())")),
]

RIGHT = [
    Right("ex1", "an identity matrix indexed by the ids", '''def one_hot(ids, num_classes):
    if ids.min() < 0 or ids.max() >= num_classes:
        raise ValueError(f"ids must be in 0..{num_classes - 1}")
    return torch.eye(num_classes)[ids]
'''),
    Right("ex2", "torch.where, then a division by the counts", '''def my_masked_mean(x, mask):
    kept = torch.where(mask[..., None], x, torch.zeros((), dtype=x.dtype))
    return kept.sum(dim=1) / mask.sum(dim=1, keepdim=True).to(x.dtype)
'''),
    Right("ex3", "the normalised rows by F.normalize", '''def cosine_similarities(E):
    unit = F.normalize(E, dim=-1)
    return unit @ unit.T
'''),
    Right("ex4", "torch.where for the masked mean, nn.CrossEntropyLoss, model.zero_grad before the forward",
          '''from torch import nn


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab_size, dim, num_classes):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.out = nn.Linear(dim, num_classes)

    def forward(self, ids, mask):
        e = self.embed(ids)                                                    # (B, T, D)
        e = torch.where(mask[..., None], e, torch.zeros((), dtype=e.dtype))
        counts = mask.sum(dim=1, keepdim=True).clamp(min=1).to(e.dtype)        # (B, 1)
        return self.out(e.sum(dim=1) / counts)


def train_classifier(model, ids, mask, labels, steps=200, lr=0.05):
    criterion = nn.CrossEntropyLoss()
    opt = torch.optim.Adam(model.parameters(), lr)
    history = []
    for step in range(steps):
        model.zero_grad()
        loss = criterion(model(ids, mask), labels)
        loss.backward()
        opt.step()
        history.append(float(loss))
    return history
'''),
]
