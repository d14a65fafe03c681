"""The nbgitpuller link that puts the course (or one notebook) into a student's home on a class JupyterHub.

Both addresses are set once, in ``site/_config.yml`` (the website's "JupyterHub" launch button is built
from the same two settings, by Jupyter Book, in the same form):

- the hub: ``launch_buttons: jupyterhub_url:`` (e.g. ``"https://hub.example.edu"``);
- the repository: ``repository: url:`` and ``branch:`` (also in pyproject.toml and CITATION.cff).

``COURSE_HUB_URL``, ``COURSE_REPO_URL`` and ``COURSE_REPO_BRANCH`` override them for one run (the hub
test uses them for its hub on 127.0.0.1 and its local repository)::

    python -m courseware hub-link            # the whole course: JupyterLab opens in its notebooks/ folder
    python -m courseware hub-link 04         # one notebook (a number, a name or a path)

Opening the link logs the student in, clones the repository into ``~/<repository name>`` the first time
and pulls it every later time, keeping the student's own edits (INSTRUCTORS.md, "Running a class on a hub").
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "site" / "_config.yml"


class LinkError(ValueError):
    pass


def settings(config: Path = CONFIG, env=os.environ) -> dict:
    """hub, repo and branch from site/_config.yml, each overridden by its environment variable."""
    import yaml

    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    repository = data.get("repository") or {}
    hub = env.get("COURSE_HUB_URL") or (data.get("launch_buttons") or {}).get("jupyterhub_url") or ""
    repo = env.get("COURSE_REPO_URL") or repository.get("url") or ""
    branch = env.get("COURSE_REPO_BRANCH") or repository.get("branch") or "main"
    where = config.relative_to(ROOT) if config.is_relative_to(ROOT) else config
    if not hub.strip():
        raise LinkError(f"no hub URL: set `launch_buttons: jupyterhub_url:` in {where} to your JupyterHub's address, "
                        "e.g. \"https://hub.example.edu\" (or COURSE_HUB_URL for one run)")
    if urlsplit(hub).scheme not in ("http", "https") or not urlsplit(hub).netloc:
        raise LinkError(f"the hub URL {hub!r} is not an http(s) address such as \"https://hub.example.edu\"")
    if not repo.strip():
        raise LinkError(f"no repository URL: set `repository: url:` in {where} (or COURSE_REPO_URL for one run)")
    return {"hub": hub.strip().rstrip("/"), "repo": repo.strip(), "branch": branch.strip()}


def repo_name(repo: str) -> str:
    """The folder nbgitpuller clones into by default: the repository URL's last part (as it is: a URL
    ending in .git gives a folder ending in .git)."""
    return repo.rstrip("/").split("/")[-1]


def notebook_path(name: str, root: Path = ROOT) -> str:
    """notebooks/<file>.ipynb for a number (04), a name or a path; the repository-relative path."""
    every = sorted((root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    hits = [p for p in every if p.name.startswith(name) or p.stem == Path(name).stem]
    if len(hits) != 1:
        raise LinkError(f"{name!r} names {len(hits)} notebooks: give a number such as 04, a name or a path")
    return hits[0].relative_to(root).as_posix()


def link(hub: str, repo: str, branch: str, path: str = "notebooks") -> str:
    """nbgitpuller's link, in the form Jupyter Book's JupyterHub button uses (JupyterLab)."""
    query = urlencode({"repo": repo, "urlpath": f"lab/tree/{repo_name(repo)}/{path}", "branch": branch}, safe="/")
    return f"{hub}/hub/user-redirect/git-pull?{query}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Print the nbgitpuller link to the course, or to one notebook, on the class hub.")
    ap.add_argument("notebook", nargs="?", help="a number (04), a name or a path; none: the whole course")
    args = ap.parse_args(argv)
    try:
        s = settings()
        print(link(s["hub"], s["repo"], s["branch"], notebook_path(args.notebook) if args.notebook else "notebooks"))
    except LinkError as e:
        print(f"hub_link: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
