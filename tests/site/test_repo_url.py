"""The repository's address on the website: one setting, REPO_URL (issue 53, item 2).

`make test-site` builds build/site/ with no repository named (as `make site` does by default); this file checks
that build has no link to the placeholder repository and no Colab launch, Repository or Show source button, that
the build says in its log what it left out, and then builds the site a second time, with
``--repo-url https://github.com/example-org/attention-course``, into build/site-repo/, and checks every launch
button, the Repository button and the links to repository files point there and nothing at the placeholder
(pytest marker `site`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
REPO_SITE = ROOT / "build" / "site-repo"
REPO = "https://github.com/example-org/attention-course"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
sys.path.insert(0, str(ROOT))
from courseware.authoring import bootstrap_cell  # noqa: E402
from courseware.editions import build_site  # noqa: E402
from courseware.editions.build_site import PLACEHOLDER_REPO, placeholder_links  # noqa: E402

pytestmark = pytest.mark.site


def _hrefs(site: Path) -> dict[str, list[str]]:
    return {p.relative_to(site).as_posix(): re.findall(r'href="([^"]+)"', p.read_text(encoding="utf-8"))
            for p in site.rglob("*.html") if not p.relative_to(site).as_posix().startswith("_static/")}


def _chapter_pages(site: Path) -> list[str]:
    return sorted(p.relative_to(site).as_posix() for p in (site / "notebooks").glob("[0-9][0-9]_*.html"))


def test_without_a_repository_no_placeholder_link_and_no_launch_or_repository_button():
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site in {SITE}: run `make site`")
    hrefs = _hrefs(SITE)
    assert placeholder_links(SITE) == 0
    colab = [h for links in hrefs.values() for h in links if "colab.research.google.com" in h]
    github_buttons = [p for p in hrefs if "btn-source-repository-button" in (SITE / p).read_text(encoding="utf-8")]
    assert colab == [] and github_buttons == [], (colab[:3], github_buttons[:3])
    downloads = sorted((SITE / "_sources" / "notebooks").glob("*.ipynb"))
    assert len(downloads) == len(NOTEBOOKS)
    named = [p.name for p in downloads if PLACEHOLDER_REPO.removeprefix("https://") in p.read_text()]
    assert named == [], f"downloads naming the placeholder repository: {named}"
    no_address = bootstrap_cell.without_repository(bootstrap_cell.snippet()).rstrip("\n")
    boots = [c.source for p in downloads for c in nbformat.read(p, as_version=4).cells if bootstrap_cell.is_bootstrap(c)]
    assert boots == [no_address] * len(downloads)   # stops, saying how to get the course's files
    print(f"build without REPO_URL: {placeholder_links(SITE)} links to the placeholder repository, "
          f"{len(colab)} Colab launch links, {len(github_buttons)} pages with a Repository button; "
          f"0 of {len(downloads)} downloads name it, each bootstrap cell says how to get the course's files")


def test_without_a_repository_the_log_says_what_it_left_out(capsys, monkeypatch):
    monkeypatch.delenv("REPO_URL", raising=False)   # in this process: the sources alone, assembled in a second
    assert build_site.main(["--prepare-only", "--out", str(ROOT / "build" / "site-norepo")]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("repository:"))
    for what in ("REPO_URL", "Repository button", "Colab launch buttons", "links of", "downloads' mentions"):
        assert what in line, line
    print(line)


@pytest.fixture(scope="module")
def repo_site():
    proc = subprocess.run([sys.executable, "courseware/editions/build_site.py", "--repo-url", REPO, "--out", str(REPO_SITE)],
                          cwd=ROOT, capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "REPO_URL"})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    print(proc.stdout.strip().splitlines()[-1])
    return REPO_SITE


def test_with_a_repository_every_launch_button_points_there(repo_site):
    hrefs = _hrefs(repo_site)
    assert placeholder_links(repo_site) == 0
    assert not [h for links in hrefs.values() for h in links if PLACEHOLDER_REPO.removeprefix("https://") in h]
    owner_name = REPO.removeprefix("https://github.com/")
    chapters = _chapter_pages(repo_site)
    assert len(chapters) >= len(NOTEBOOKS)
    launch = {}
    for page in chapters:
        colab = [h for h in hrefs[page] if "colab.research.google.com" in h]
        assert len(colab) == 1, f"{page}: {len(colab)} Colab launch links"
        stem = Path(page).stem.removesuffix("_appendix")
        assert colab[0] == f"https://colab.research.google.com/github/{owner_name}/blob/main/notebooks/{stem}.ipynb", colab
        assert REPO in hrefs[page], f"{page}: no Repository button to {REPO}"
        launch[page] = colab[0]
    to_files = [h for links in hrefs.values() for h in links if h.startswith(REPO + "/")]
    assert len(to_files) > 20, len(to_files)
    downloads = sorted((repo_site / "_sources" / "notebooks").glob("*.ipynb"))
    assert len(downloads) == len(NOTEBOOKS)
    assert not any(PLACEHOLDER_REPO in p.read_text() for p in downloads)
    assert all(REPO in p.read_text() for p in downloads)   # the bootstrap cell clones the repository named
    print(f"build with REPO_URL={REPO}: {len(launch)} Colab launch buttons, each to its notebook there; "
          f"{len(to_files)} links to its files; 0 to the placeholder; the {len(downloads)} downloads name it")
