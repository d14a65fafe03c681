"""A chapter's "Download .ipynb" on the website (courseware/editions/build_site.py's ``download_edition``), built
with and without a repository named (issue 53): with one, every mention of the placeholder address names it; without
one, no mention of the placeholder is left, the sentences around it still read, and the bootstrap cell stops saying
how to get the course (tests/courseware/authoring/test_bootstrap_cell.py runs that cell). The built site's downloads
are checked both ways under `make test-site` (tests/site/test_repo_url.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from courseware.authoring import bootstrap_cell  # noqa: E402
from courseware.editions import build_site  # noqa: E402

PLACEHOLDER = build_site.PLACEHOLDER_REPO
NB03 = ROOT / "notebooks" / "03_additive_attention.ipynb"   # the placeholder in its bootstrap and in 3 sentences


@pytest.mark.parametrize("text, expected", [
    (f"`NOTATION.md` in the course's repository (<{PLACEHOLDER}>); the papers",
     "`NOTATION.md` in the course's repository; the papers"),
    (f"(NOTATION.md in the course's repository, {PLACEHOLDER}); the papers",
     "(NOTATION.md in the course's repository); the papers"),
    (f"in the scripts folder of the course's repository, <{PLACEHOLDER}>; its results",
     "in the scripts folder of the course's repository; its results"),
    (f"(in the scripts folder of the course's repository, <{PLACEHOLDER}>) trains",
     "(in the scripts folder of the course's repository) trains"),
    (f"the notation table, [NOTATION.md]({PLACEHOLDER}/blob/main/NOTATION.md) in the course's repository --",
     "the notation table, NOTATION.md in the course's repository --"),
])
def test_unname_repository_drops_the_address_and_keeps_the_sentence(text, expected):
    assert build_site.unname_repository(text) == expected


def test_unname_repository_refuses_a_mention_it_does_not_know():
    with pytest.raises(ValueError, match="does not know"):
        build_site.unname_repository(f"clone {PLACEHOLDER} first")


def test_the_download_of_03_both_ways():
    from courseware.editions.nbgrader_course import release

    mentions = nbformat.writes(release(nbformat.read(NB03, as_version=4))).count(PLACEHOLDER)
    assert mentions >= 4   # the bootstrap cell and three sentences
    without = build_site.download_edition(NB03, None)
    text = nbformat.writes(without)
    assert PLACEHOLDER not in text and PLACEHOLDER.removeprefix("https://") not in text
    boot = [c for c in without.cells if bootstrap_cell.is_bootstrap(c)]
    assert len(boot) == 1
    assert boot[0].source == bootstrap_cell.without_repository(bootstrap_cell.snippet()).rstrip("\n")
    repo = "https://github.com/example-org/attention-course"
    named = nbformat.writes(build_site.download_edition(NB03, repo))
    assert PLACEHOLDER not in named and named.count(repo) == mentions
