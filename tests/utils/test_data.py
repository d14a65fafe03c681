"""utils.data: mirror, cache, checksum and offline behaviour. Never touches the network."""

from __future__ import annotations

import hashlib
import io
import os
import stat
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from utils import data

MIRROR = os.environ.get("COURSE_DATA_MIRROR")
needs_mirror = pytest.mark.skipif(not MIRROR, reason="COURSE_DATA_MIRROR is not set (the Makefile sets it when ../shared/data exists)")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty cache folder for each test."""
    d = tmp_path / "cache"
    monkeypatch.setenv("COURSE_DATA_DIR", str(d))
    return d


@pytest.fixture
def fake_entry(monkeypatch, tmp_path):
    """Register a small made-up data file whose mirror copy we control."""
    mirror = tmp_path / "mirror"
    (mirror / "fake").mkdir(parents=True)
    payload = b"hello attention\n" * 100
    (mirror / "fake" / "file.txt").write_bytes(payload)
    entry = data.DataFile("fake/file.txt", "http://127.0.0.1:9/unreachable/file.txt", hashlib.sha256(payload).hexdigest())
    monkeypatch.setitem(data.DATA_FILES, entry.path, entry)
    return entry, mirror


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def test_mirror_fills_cache_and_verifies(cache, fake_entry, monkeypatch):
    entry, mirror = fake_entry
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(mirror))
    path = data.fetch(entry.path)
    assert path == cache / entry.path
    assert path.read_bytes() == (mirror / entry.path).read_bytes()
    # Second call is served from the cache even if the mirror disappears.
    (mirror / entry.path).unlink()
    assert data.fetch(entry.path) == path
    assert _leftovers(cache) == [path]


def test_wrong_checksum_raises_and_leaves_no_file(cache, fake_entry, monkeypatch):
    entry, mirror = fake_entry
    (mirror / entry.path).write_bytes(b"tampered")
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(mirror))
    with pytest.raises(data.ChecksumError, match="sha256") as e:
        data.fetch(entry.path)
    assert "Nothing was saved" in str(e.value)
    assert _leftovers(cache) == []


def test_offline_error_is_clear_and_leaves_no_file(cache, fake_entry, monkeypatch):
    entry, _ = fake_entry
    monkeypatch.delenv("COURSE_DATA_MIRROR", raising=False)
    with pytest.raises(data.DownloadError) as e:
        data.fetch(entry.path, timeout=2)
    msg = str(e.value)
    assert entry.url in msg and "offline" in msg and "COURSE_DATA_MIRROR" in msg
    assert _leftovers(cache) == []


def test_missing_mirror_file_says_where_it_looked(cache, fake_entry, monkeypatch, tmp_path):
    entry, _ = fake_entry
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(tmp_path / "empty"))
    with pytest.raises(data.DownloadError, match="has no file"):
        data.fetch(entry.path)
    assert _leftovers(cache) == []


def test_corrupt_cache_is_removed_and_fetched_again(cache, fake_entry, monkeypatch):
    entry, mirror = fake_entry
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(mirror))
    path = data.fetch(entry.path)
    path.write_bytes(b"changed by hand")
    with pytest.warns(UserWarning, match=r"file\.txt was corrupt or changed .*removed it and fetching a fresh copy"):
        assert data.fetch(entry.path) == path
    assert path.read_bytes() == (mirror / entry.path).read_bytes()
    # corrupt, and the source is gone too: the corrupt copy is still not left in the cache
    path.write_bytes(b"changed again")
    (mirror / entry.path).unlink()
    with pytest.warns(UserWarning, match="removed it"), pytest.raises(data.DownloadError, match="has no file"):
        data.fetch(entry.path)
    assert _leftovers(cache) == []


class _FakeResponse(io.BytesIO):
    """What urlopen returns, enough for fetch(): a readable context manager."""


def _serve(monkeypatch, payload=None, error=None):
    """Make urllib.request.urlopen answer with ``payload`` or raise ``error``; no network."""
    def urlopen(req, timeout=None):
        if error is not None:
            raise error
        return _FakeResponse(payload)

    monkeypatch.delenv("COURSE_DATA_MIRROR", raising=False)
    monkeypatch.setattr(urllib.request, "urlopen", urlopen)


def test_http_404_says_the_server_answered_not_offline(cache, fake_entry, monkeypatch):
    entry, _ = fake_entry
    _serve(monkeypatch, error=urllib.error.HTTPError(entry.url, 404, "Not Found", {}, None))
    with pytest.raises(data.DownloadError) as e:
        data.fetch(entry.path)
    msg = str(e.value)
    assert "HTTP 404 (Not Found)" in msg and entry.url in msg and "may have moved" in msg
    assert "offline" not in msg and "COURSE_DATA_MIRROR" in msg
    assert _leftovers(cache) == []


def test_downloaded_files_are_readable_by_everyone(cache, fake_entry, monkeypatch):
    entry, mirror = fake_entry
    _serve(monkeypatch, payload=(mirror / entry.path).read_bytes())
    path = data.fetch(entry.path)
    assert path.read_bytes() == (mirror / entry.path).read_bytes()
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(mirror))  # from a mirror too
    path.unlink()
    assert stat.S_IMODE(data.fetch(entry.path).stat().st_mode) == 0o644


def test_a_killed_download_leaves_no_part_file_for_long(cache, fake_entry, monkeypatch):
    entry, mirror = fake_entry
    monkeypatch.setenv("COURSE_DATA_MIRROR", str(mirror))
    folder = cache / "fake"
    folder.mkdir(parents=True)
    orphan, running = folder / "file.txt.k1ll3d.part", folder / "file.txt.st1ll.part"
    orphan.write_bytes(b"half a file")
    running.write_bytes(b"a download still running")
    old = time.time() - data.STALE_PART_SECONDS - 1
    os.utime(orphan, (old, old))
    path = data.fetch(entry.path)
    assert not orphan.exists() and running.exists()  # another download may still be writing to a recent one
    os.utime(running, (old, old))
    assert data.fetch(entry.path) == path and not running.exists()  # cleaned on a later call, cache hit or not
    assert _leftovers(cache) == [path]


def test_unknown_names_are_rejected():
    with pytest.raises(KeyError, match="known files"):
        data.fetch("multi30k/nope.gz")
    with pytest.raises(ValueError, match="split"):
        data.load_multi30k("dev", "en")
    with pytest.raises(ValueError, match="language"):
        data.load_multi30k("train", "es")


@needs_mirror
def test_checksums_match_sources_md():
    """The checksums in utils.data are the ones published in the mirror's SOURCES.md (the mirror the tests use,
    wherever the checkout lives: a clone under /tmp has no shared/ beside it)."""
    sources = Path(MIRROR) / "SOURCES.md"
    assert sources.is_file(), f"the data mirror {MIRROR} has no SOURCES.md"
    text = sources.read_text()
    for entry in data.DATA_FILES.values():
        assert f"| {entry.path} | {entry.sha256} |" in text, entry.path


@needs_mirror
def test_multi30k_real_files(cache):
    for split, n in data.MULTI30K_LINES.items():
        pairs = data.load_multi30k_pairs(split, "de", "en")
        assert len(pairs) == n
    assert data.load_multi30k("val", "fr")[0]
    expected = {f"{s}.{l}.gz" for s in data.MULTI30K_SPLITS for l in ("de", "en")} | {"val.fr.gz"}
    assert {p.name for p in (cache / "multi30k").iterdir()} == expected


@needs_mirror
def test_tiny_shakespeare(cache):
    text = data.load_tiny_shakespeare()
    assert len(text) == 1_115_394
    assert len(set(text)) == 65
    assert text.startswith("First Citizen:")
