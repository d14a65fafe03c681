"""Notebook 01: wrong answers students write for one-hot vectors, the masked mean, cosine similarities
and the bag-of-embeddings classifier."""

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
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        loss = F.cross_entropy(model(ids, mask), labels)
        {zero}
        loss.backward()
        optimizer.step()
        losses.append({record})
    return losses
'''


def _bag(times_mask=" * m", denominator="m.sum(1)", zero="optimizer.zero_grad()", record="loss.item()"):
    return _BAG.format(times_mask=times_mask, denominator=denominator, zero=zero, record=record)


WRONG = [
    Wrong("ex1", "an integer tensor, not float", "def one_hot(ids, num_classes):\n"
          "    if (ids < 0).any() or (ids >= num_classes).any():\n        raise ValueError('out of range')\n"
          "    out = torch.zeros(len(ids), num_classes, dtype=torch.long)\n"
          "    out[torch.arange(len(ids)), ids] = 1\n    return out\n"),
    Wrong("ex1", "no error for an id that is too large", "def one_hot(ids, num_classes):\n"
          "    out = torch.zeros(len(ids), num_classes)\n    out[torch.arange(len(ids)), ids.clamp(max=num_classes - 1)] = 1.0\n"
          "    return out\n"),
    Wrong("ex1", "off by one: the column before the id's", "def one_hot(ids, num_classes):\n"
          "    if (ids < 0).any() or (ids >= num_classes).any():\n        raise ValueError('out of range')\n"
          "    out = torch.zeros(len(ids), num_classes)\n    out[torch.arange(len(ids)), ids - 1] = 1.0\n    return out\n"),
    Wrong("ex1", "F.one_hot, which the exercise forbids", "def one_hot(ids, num_classes):\n"
          "    if (ids < 0).any() or (ids >= num_classes).any():\n        raise ValueError('out of range')\n"
          "    return F.one_hot(ids, num_classes).float()\n"),
    Wrong("ex2", "the mean over every position, padding included", "def my_masked_mean(x, mask):\n    return x.mean(1)\n"),
    Wrong("ex2", "zeroed padding divided by T", "def my_masked_mean(x, mask):\n"
          "    return (x * mask.unsqueeze(-1)).sum(1) / x.shape[1]\n"),
    Wrong("ex2", "multiplying by the mask lets NaN in the padding through", "def my_masked_mean(x, mask):\n"
          "    m = mask.unsqueeze(-1)\n    return (x * m).sum(1) / m.sum(1)\n", hidden_only=True),
    Wrong("ex3", "dot products, not normalised", "def cosine_similarities(E):\n    return E @ E.T\n"),
    Wrong("ex3", "normalised along the wrong axis", "def cosine_similarities(E):\n"
          "    unit = E / E.norm(dim=0, keepdim=True)\n    return unit @ unit.T\n"),
    Wrong("ex3", "F.cosine_similarity, which the exercise forbids", "def cosine_similarities(E):\n"
          "    return F.cosine_similarity(E[:, None, :], E[None, :, :], dim=-1)\n"),
    Wrong("ex4", "the padding averaged in", _bag(times_mask="", denominator="ids.shape[1]")),
    Wrong("ex4", "the real tokens summed, not averaged", _bag(denominator="1")),
    Wrong("ex4", "zero_grad forgotten (Adam still learns the task)", _bag(zero="pass"), hidden_only=True),
    Wrong("ex4", "the loss tensors kept, not floats", _bag(record="loss.detach()"), hidden_only=True),
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
