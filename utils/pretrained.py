"""The course's full-data translation models, shipped with the repository.

The notebooks train small models live (that is the lesson about training) and load
these for everything about *what a model learned*: alignment maps, per-head maps,
explorers, beam search against greedy. Each model is two files in ``pretrained/``:

- ``<name>.safetensors``: the weights (no pickle: nothing runs on load), in float16, or with
  ``weights="int8"`` every matrix as int8 with one float16 scale per row (embeddings per token,
  linear and recurrent layers per output unit; vectors stay float16): half the size, and on
  the course's two GRU models within 0.1 BLEU of the weights before quantizing;
- ``<name>.json``: the model's config, both vocabularies, the recipe and how it was trained;

and ``pretrained/MANIFEST.json`` records each file's SHA-256 and size, and the BLEU
each model scores on test_2016_flickr (measured on the CPU from the stored weights by
``scripts/recipes/export_pretrained.py``). :func:`load_pretrained` checks both files against
the manifest before it reads them.

    >>> pt = load_pretrained("transformer")
    >>> pt.model, pt.src_vocab, pt.tgt_vocab, pt.info["bleu"]
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from . import checks
from .checks import Float, Tensor, contract
from .data import REPO_ROOT, _sha256  # the data cache's streaming SHA-256
from .text import Vocab

__all__ = ["PretrainedError", "Pretrained", "pretrained_dir", "available", "verify_files", "load_pretrained", "build_model",
           "save_pretrained", "quantize_int8", "dequantize_int8", "MANIFEST"]

MANIFEST = "MANIFEST.json"
SCALE = ".int8_scale"  # suffix of the key holding an int8 tensor's per-row scales
WEIGHTS = ("float16", "int8")


class PretrainedError(RuntimeError):
    """A pretrained model is missing, unknown, or its files do not match the manifest."""


def pretrained_dir() -> Path:
    """``$COURSE_PRETRAINED_DIR`` or ``<repo>/pretrained``."""
    return Path(os.environ.get("COURSE_PRETRAINED_DIR") or REPO_ROOT / "pretrained")


def _manifest(folder: Path) -> dict:
    path = folder / MANIFEST
    if not path.is_file():
        raise PretrainedError(f"no {MANIFEST} in {folder}: the pretrained models come with the repository "
                              f"(restore the folder with `git checkout -- pretrained`)")
    return json.loads(path.read_text())


def available() -> list[str]:
    """Names of the models the manifest lists."""
    return sorted(_manifest(pretrained_dir()))


def _verified(folder: Path, entry: dict, filename: str) -> Path:
    path = folder / filename
    expected = entry["files"][filename]
    if not path.is_file():
        raise PretrainedError(f"{path} is missing; restore it with `git checkout -- pretrained/{filename}`")
    size, digest = path.stat().st_size, _sha256(path)
    if size != expected["bytes"] or digest != expected["sha256"]:
        raise PretrainedError(
            f"{path} is corrupted or was changed: SHA-256 {digest[:16]}… ({size:,} bytes), the manifest expects "
            f"{expected['sha256'][:16]}… ({expected['bytes']:,} bytes). Restore it with "
            f"`git checkout -- pretrained/{filename}` (or re-export it with scripts/recipes/export_pretrained.py)")
    return path


def verify_files(folder: Path | None = None) -> tuple[int, list[str]]:
    """Check every file the manifest lists against its SHA-256 and size, as :func:`load_pretrained`
    does before reading, without loading anything: (files that pass, messages of those that do not,
    each saying how to restore the file). ``folder`` defaults to :func:`pretrained_dir`."""
    folder = Path(folder) if folder is not None else pretrained_dir()
    try:
        manifest = _manifest(folder)
    except PretrainedError as e:
        return 0, [str(e)]
    passed, problems = 0, []
    for name, entry in sorted(manifest.items()):
        for filename in sorted(entry["files"]):
            try:
                _verified(folder, entry, filename)
                passed += 1
            except PretrainedError as e:
                problems.append(str(e))
    return passed, problems


@dataclass
class Pretrained:
    """A loaded model with what is needed to use it."""

    name: str
    model: nn.Module          # in eval mode
    src_vocab: Vocab
    tgt_vocab: Vocab
    info: dict = field(repr=False, default_factory=dict)  # config, recipe, training, bleu (from the json and manifest)

    def decode_fn(self, method: str = "greedy", **kwargs):
        """A ``decode_fn`` for :mod:`utils.translation` (``"greedy"`` or ``"beam"``), with the
        recipe's beam size (and length penalty) unless given."""
        recipe = self.info["recipe"]
        if self.info["kind"] == "transformer":
            from .transformer import make_decode_fn
            kwargs.setdefault("beam_size", recipe["beam"])
            kwargs.setdefault("length_penalty", recipe["length_penalty"])
        else:
            from .rnn import make_decode_fn
            kwargs.setdefault("beam_size", recipe["beam"])
        return make_decode_fn(self.model, method, **kwargs)


def build_model(kind: str, config: dict) -> nn.Module:
    """An untrained model of ``kind`` (``"transformer"`` or ``"rnn"``) from its saved config."""
    if kind == "transformer":
        from .transformer import Transformer, TransformerConfig
        return Transformer(TransformerConfig(**config))
    if kind == "rnn":
        from .rnn import Seq2Seq
        return Seq2Seq(**config)
    raise PretrainedError(f"unknown model kind {kind!r}; expected 'transformer' or 'rnn'")


def load_pretrained(name: str, device: torch.device | str = "cpu") -> Pretrained:
    """Load a shipped model by name (see :func:`available`), checksums checked first.

    The stored weights (float16, or int8 with per-row scales) are loaded into a float32
    model in eval mode on ``device``.
    Raises :class:`PretrainedError` for an unknown name or a missing or corrupted file.
    """
    from safetensors.torch import load_file

    folder = pretrained_dir()
    manifest = _manifest(folder)
    if name not in manifest:
        raise PretrainedError(f"no pretrained model {name!r}; available: {sorted(manifest)}")
    entry = manifest[name]
    meta = json.loads(_verified(folder, entry, f"{name}.json").read_text())
    stored = load_file(_verified(folder, entry, f"{name}.safetensors"))
    _check_described(folder / f"{name}.safetensors", stored, meta)
    weights = dequantize_int8(stored, f"{name}.safetensors")
    model = build_model(meta["kind"], meta["config"])
    missing, unexpected = model.load_state_dict(weights, strict=False)
    tied = set(meta.get("tied", {}))
    if unexpected or set(missing) != tied:
        raise PretrainedError(f"{name}.safetensors does not fit its config: missing {sorted(set(missing) - tied)}, "
                              f"unexpected {sorted(unexpected)}")
    model.to(device).eval()
    info = {"weights": "float16", **meta, "bleu": entry["bleu"], "files": entry["files"]}
    info.pop("src_vocab"), info.pop("tgt_vocab")
    src_vocab, tgt_vocab = Vocab(meta["src_vocab"]), Vocab(meta["tgt_vocab"])
    checks.bind_vocab(model, (src_vocab, tgt_vocab))  # the model carries its vocabularies' fingerprint
    return Pretrained(name, model, src_vocab, tgt_vocab, info)


def _check_described(path: Path, stored: dict[str, torch.Tensor], meta: dict) -> None:
    """Compare what the weights file says about itself (written by :func:`save_pretrained`: the SHA-256 of
    its tensors, the fingerprints of the vocabularies they were trained with) with its tensors and with
    the vocabularies of the json; files written before these were stored are not compared."""
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as f:
        described = f.metadata() or {}
    if "content_sha256" in described and checks.content_sha256(stored) != described["content_sha256"]:
        raise PretrainedError(f"{path} is damaged: its tensors do not match the SHA-256 stored in the file when it was "
                              f"written (bytes changed after the export); restore it with `git checkout -- "
                              f"pretrained/{path.name}` or export it again")
    for side in ("src_vocab", "tgt_vocab"):
        key = f"{side}_fingerprint"
        if key in described and checks.vocab_fingerprint(meta[side]) != described[key]:
            raise PretrainedError(f"{path.with_suffix('.json').name}: the vocab in it ({side}) is not the one {path.name} "
                                  f"was trained with (fingerprint {checks.vocab_fingerprint(meta[side])}, the weights say "
                                  f"{described[key]}): the model's ids would decode to other words; restore the json")


@contract
def quantize_int8(w: Float["R C ..."]) -> tuple[Tensor["R C ..."], Float["R"]]:
    """Symmetric int8 per row: ``w ≈ q * scale`` with ``q`` (R, ...) int8 in [-127, 127] and
    ``scale`` (R,) float16 = max |row| / 127 (rounded to float16 first, so ``q`` is rounded against
    the scale that is stored). An all-zero row (a padding embedding) gets scale 0 and stays zero."""
    w = w.detach().float()
    scale = (w.flatten(1).abs().amax(1) / 127).half()                        # (R,)
    shape = (-1,) + (1,) * (w.dim() - 1)
    safe = torch.where(scale == 0, torch.ones_like(scale), scale).float().view(shape)
    q = torch.round(w / safe).clamp(-127, 127).to(torch.int8)
    return q, scale


def dequantize_int8(state: dict[str, torch.Tensor], source: str = "the weights") -> dict[str, torch.Tensor]:
    """Undo :func:`quantize_int8` for every int8 tensor that has a ``<key>.int8_scale`` entry
    (float32 results); other tensors pass through. An int8 tensor without its scales, or scales
    of the wrong length, raise :class:`PretrainedError`."""
    out = {}
    for k, v in state.items():
        if k.endswith(SCALE):
            if k[: -len(SCALE)] not in state:
                raise PretrainedError(f"{source}: {k} has no tensor {k[: -len(SCALE)]!r} to scale")
            continue
        if v.dtype == torch.int8:
            scale = state.get(k + SCALE)
            if scale is None or scale.shape != (v.shape[0],):
                raise PretrainedError(f"{source}: int8 tensor {k} {tuple(v.shape)} needs per-row scales "
                                      f"{k + SCALE} of shape ({v.shape[0]},), got "
                                      f"{None if scale is None else tuple(scale.shape)}")
            v = v.float() * scale.float().view((-1,) + (1,) * (v.dim() - 1))
        out[k] = v
    return out


def _tied_names(model: nn.Module) -> dict[str, str]:
    """Parameters that share storage with an earlier one: {later name: first name}."""
    first: dict[int, str] = {}
    tied = {}
    for k, v in model.state_dict(keep_vars=True).items():
        ptr = v.data_ptr()
        if v.numel() and ptr in first:
            tied[k] = first[ptr]
        else:
            first[ptr] = k
    return tied


def save_pretrained(folder: Path, name: str, kind: str, model: nn.Module, config: dict, src_vocab: Vocab,
                    tgt_vocab: Vocab, weights: str = "float16", **meta) -> dict:
    """Write ``<name>.safetensors`` (shared tensors once; ``weights``: ``"float16"``, or ``"int8"``
    for every matrix as int8 with per-row float16 scales, :func:`quantize_int8`) and ``<name>.json``;
    return their manifest ``files`` entry. ``config`` rebuilds the model with
    :func:`build_model`; ``meta``: recipe, training provenance, …"""
    from safetensors.torch import save_file

    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    folder.mkdir(parents=True, exist_ok=True)
    tied = _tied_names(model)
    state = {}
    for k, v in model.state_dict().items():
        if k in tied:
            continue
        v = v.detach().cpu()
        if weights == "int8" and v.is_floating_point() and v.dim() >= 2:
            state[k], state[k + SCALE] = quantize_int8(v)
        else:
            state[k] = v.half() if v.is_floating_point() else v
    state = {k: v.contiguous() for k, v in state.items()}
    files = {}
    for filename, write in (
        (f"{name}.safetensors", lambda p: save_file(state, str(p), metadata={
            "format": "pt", "course_model": name, "weights": weights, "content_sha256": checks.content_sha256(state),
            "src_vocab_fingerprint": checks.vocab_fingerprint(src_vocab),
            "tgt_vocab_fingerprint": checks.vocab_fingerprint(tgt_vocab)})),
        (f"{name}.json", lambda p: p.write_text(json.dumps(
            dict(name=name, kind=kind, config=config, tied=tied, weights=weights, **meta,
                 src_vocab=src_vocab.to_list(), tgt_vocab=tgt_vocab.to_list()), indent=1) + "\n")),
    ):
        path = folder / filename
        tmp = path.with_name(path.name + ".part")
        try:
            write(tmp)
            os.chmod(tmp, 0o644)  # readable by everyone sharing the checkout
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
        files[filename] = dict(sha256=_sha256(path), bytes=path.stat().st_size)
    return files
