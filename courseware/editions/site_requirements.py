"""Print the `site` dependency group of pyproject.toml, one requirement a line, for
`pip install -r /dev/stdin` (the Makefile's .venv-site: the website's build needs none of the
course's own dependencies). Standard library only, Python 3.10 included."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def site_requirements(text: str) -> list[str]:
    block = re.search(r"(?ms)^site = \[\n(.*?)^\]", text)
    if block is None:
        raise SystemExit("pyproject.toml has no `site = [...]` optional dependency group")
    # one quoted requirement a line, a comment after it allowed (TOML's own rule)
    return re.findall(r'^\s*"([^"]+)",?\s*(?:#.*)?$', block.group(1), re.M)


if __name__ == "__main__":
    print("\n".join(site_requirements((ROOT / "pyproject.toml").read_text())))
    sys.exit(0)
