"""The website's environment (.venv-site) is installed from what `python -m courseware site-requirements` prints:
every requirement of pyproject.toml's `site` group, a line with a comment after it included (pypdfium2's was
dropped once, and the PDF's empty-frame scan found no renderer)."""

import re
from pathlib import Path

from courseware.editions.site_requirements import site_requirements

ROOT = Path(__file__).resolve().parents[3]


def test_every_requirement_of_the_site_group_is_printed():
    text = (ROOT / "pyproject.toml").read_text()
    block = re.search(r"(?ms)^site = \[\n(.*?)^\]", text).group(1)
    quoted = re.findall(r'^\s*"([^"]+)"', block, re.M)
    assert site_requirements(text) == quoted and "pypdfium2==5.15.2" in quoted


def test_a_comment_after_a_requirement_keeps_it():
    text = 'site = [\n    "a==1",   # why a\n    "b==2",\n    # a line of comment only\n]\n'
    assert site_requirements(text) == ["a==1", "b==2"]
