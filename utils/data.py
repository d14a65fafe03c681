"""Real data sets, downloaded once, checked, and cached.

Every file is fetched from its public source, its SHA-256 is checked against the
value recorded here, and only then is it moved (atomically) into the cache, so a
failed or interrupted download never leaves a partial or wrong file behind. Cached
files are readable by everyone (mode 0644), so a class can share one data folder; a
cached file found corrupt is removed (with a warning) and fetched again; the ``.part``
file of a download that was killed is removed by a later call.

Where files come from, in order:

1. the cache folder: ``$COURSE_DATA_DIR`` if set, else ``data/`` at the top of the repo;
2. a local mirror folder, if ``$COURSE_DATA_MIRROR`` is set (tests and CI point it
   at a copy of the files, so they never touch the network);
3. the public URL.

Data sets (see ``data/README.md`` for sources and licences):

- Multi30k (task 1, raw): English, German and French image captions, aligned
  line by line; splits ``train`` (29,000), ``val`` (1,014), ``test_2016_flickr`` (1,000).
- Tiny Shakespeare: 1,115,394 characters of plays, for character-level language models.
"""

from __future__ import annotations

import glob
import gzip
import hashlib
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DataError", "ChecksumError", "DownloadError", "DataFile", "DATA_FILES",
    "cache_dir", "check_file", "fetch", "load_multi30k", "load_multi30k_pairs", "load_tiny_shakespeare",
    "MULTI30K_SPLITS", "MULTI30K_LANGS",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
MULTI30K_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/{}"
SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
MULTI30K_SPLITS = ("train", "val", "test_2016_flickr")
MULTI30K_LANGS = ("en", "de", "fr")
MULTI30K_LINES = {"train": 29000, "val": 1014, "test_2016_flickr": 1000}


class DataError(RuntimeError):
    """Base class for data problems; the message always says what to do."""


class ChecksumError(DataError):
    """A file's SHA-256 is not the one recorded for it."""


class DownloadError(DataError):
    """A file could not be fetched (offline, blocked, missing mirror file)."""


@dataclass(frozen=True)
class DataFile:
    path: str     # relative path inside the cache (and inside a mirror)
    url: str      # public source
    sha256: str   # expected checksum of the file as downloaded


_MULTI30K_SHA = {
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
}

DATA_FILES: dict[str, DataFile] = {
    f"multi30k/{name}": DataFile(f"multi30k/{name}", MULTI30K_URL.format(name), sha)
    for name, sha in _MULTI30K_SHA.items()
}
DATA_FILES["tinyshakespeare/input.txt"] = DataFile(
    "tinyshakespeare/input.txt",
    SHAKESPEARE_URL,
    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
)


def cache_dir() -> Path:
    """Where verified files are kept: ``$COURSE_DATA_DIR`` or ``<repo>/data``."""
    return Path(os.environ.get("COURSE_DATA_DIR") or REPO_ROOT / "data")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _copy_into(tmp: Path, entry: DataFile, mirror: str | None, timeout: float) -> str:
    """Write the file's bytes into ``tmp``; return where they came from."""
    if mirror:
        src = Path(mirror).expanduser() / entry.path
        if not src.is_file():
            raise DownloadError(
                f"COURSE_DATA_MIRROR={mirror!r} has no file {entry.path!r} (looked at {src}). "
                f"Put the file there, or unset COURSE_DATA_MIRROR to download it from {entry.url}."
            )
        shutil.copyfile(src, tmp)
        return str(src)
    try:
        req = urllib.request.Request(entry.url, headers={"User-Agent": "attention-course"})
        with urllib.request.urlopen(req, timeout=timeout) as resp, open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out)
    except urllib.error.HTTPError as e:  # the server is reachable: being offline is not the problem
        raise DownloadError(
            f"could not download {entry.path}: the server answered HTTP {e.code} ({e.reason}) for {entry.url}; "
            f"the file may have moved. Download it by hand and save it as {cache_dir() / entry.path}, or set "
            f"COURSE_DATA_MIRROR to a folder that holds {entry.path}, and please report the broken URL."
        ) from e
    except (urllib.error.URLError, OSError, TimeoutError) as e:
        reason = getattr(e, "reason", e)
        raise DownloadError(
            f"could not download {entry.path} from {entry.url} ({reason}). "
            f"Are you offline? Either connect and run again, or download the file by hand and save it as "
            f"{cache_dir() / entry.path}, or set COURSE_DATA_MIRROR to a folder that holds {entry.path}."
        ) from e
    return entry.url


def check_file(path: str, folder: Path | str | None = None) -> str:
    """The state of data file ``path`` (a key of :data:`DATA_FILES`) in ``folder`` (default: the
    cache, :func:`cache_dir`): ``"ok"`` when its SHA-256 is the recorded one, ``"missing"`` or
    ``"corrupt"``. Nothing is fetched or removed (``make doctor`` reports with it)."""
    if path not in DATA_FILES:
        raise KeyError(f"unknown data file {path!r}; known files: {sorted(DATA_FILES)}")
    file = Path(folder if folder is not None else cache_dir()).expanduser() / DATA_FILES[path].path
    if not file.is_file():
        return "missing"
    return "ok" if _sha256(file) == DATA_FILES[path].sha256 else "corrupt"


STALE_PART_SECONDS = 600.0  # a .part file nobody has written to for this long is left from a killed download


def _remove_stale_parts(dest: Path) -> None:
    """Delete the ``<name>.*.part`` files beside ``dest`` untouched for :data:`STALE_PART_SECONDS`
    (a download that is still running, maybe another user's, keeps writing to its own)."""
    for part in dest.parent.glob(glob.escape(dest.name) + ".*.part"):
        try:
            if time.time() - part.stat().st_mtime > STALE_PART_SECONDS:
                part.unlink()
        except OSError:
            pass  # removed meanwhile, or not ours to remove


def fetch(path: str, *, timeout: float = 60.0) -> Path:
    """Return the local path of a verified data file, fetching it if needed.

    ``path`` is a key of :data:`DATA_FILES`, e.g. ``"multi30k/train.de.gz"``.
    Raises :class:`DownloadError` when it cannot be fetched and
    :class:`ChecksumError` when the bytes fetched are not the expected ones; in
    both cases nothing is left in the cache. A corrupt file already in the cache is
    removed, with a warning, and fetched again.
    """
    if path not in DATA_FILES:
        raise KeyError(f"unknown data file {path!r}; known files: {sorted(DATA_FILES)}")
    entry = DATA_FILES[path]
    dest = cache_dir() / entry.path
    if dest.parent.is_dir():
        _remove_stale_parts(dest)
    if dest.is_file():
        got = _sha256(dest)
        if got == entry.sha256:
            return dest
        try:
            dest.unlink()
        except OSError as e:
            raise ChecksumError(
                f"the cached file {dest} is corrupt or was changed (sha256 {got}, expected {entry.sha256}) and "
                f"could not be removed ({e}). Delete it and run again to download a fresh copy."
            ) from e
        warnings.warn(f"the cached file {dest} was corrupt or changed (sha256 {got}, expected {entry.sha256}); "
                      f"removed it and fetching a fresh copy", stacklevel=2)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        source = _copy_into(tmp, entry, os.environ.get("COURSE_DATA_MIRROR"), timeout)
        got = _sha256(tmp)
        if got != entry.sha256:
            raise ChecksumError(
                f"{entry.path} fetched from {source} has sha256 {got}, but {entry.sha256} was expected: "
                f"the download was corrupted or the source changed. Nothing was saved; run again, and if it "
                f"keeps failing, check the source or report it."
            )
        os.chmod(tmp, 0o644)  # mkstemp made it 0600: let the other users of a shared data folder read it
        os.replace(tmp, dest)
    finally:
        if tmp.exists():
            tmp.unlink()
    return dest


def load_multi30k(split: str, lang: str) -> list[str]:
    """The raw caption lines of one Multi30k split in one language."""
    if split not in MULTI30K_SPLITS:
        raise ValueError(f"unknown Multi30k split {split!r}; choose one of {MULTI30K_SPLITS}")
    if lang not in MULTI30K_LANGS:
        raise ValueError(f"unknown Multi30k language {lang!r}; choose one of {MULTI30K_LANGS}")
    with gzip.open(fetch(f"multi30k/{split}.{lang}.gz"), "rt", encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f]
    if len(lines) != MULTI30K_LINES[split]:
        raise DataError(f"multi30k {split}.{lang} has {len(lines)} lines, expected {MULTI30K_LINES[split]}")
    return lines


def load_multi30k_pairs(split: str, src: str = "de", tgt: str = "en") -> list[tuple[str, str]]:
    """Aligned (source, target) caption pairs of one split, e.g. German -> English."""
    if src == tgt:
        raise ValueError(f"source and target language are both {src!r}")
    return list(zip(load_multi30k(split, src), load_multi30k(split, tgt)))


def load_tiny_shakespeare() -> str:
    """The whole tiny-shakespeare text as one string."""
    return fetch("tinyshakespeare/input.txt").read_text(encoding="utf-8")
