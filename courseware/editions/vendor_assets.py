"""Refresh the JavaScript/CSS/font files that the offline slide decks and hand-outs
(``courseware/editions/build_decks.py``) and the course website (``courseware/editions/build_site.py``) load from the
npm registry, and rewrite ``vendor/README.md`` with each file's SHA-256.

    python -m courseware vendor-assets          # needs `npm` and the registry; run it to change a version

Only the files the decks use are kept (``FILES`` below): reveal.js's script, core and white-theme
style sheets, the woff fonts that theme uses and the speaker-notes plugin; KaTeX's script, style
sheet, auto-render extension and its woff2 fonts; MathJax's combined TeX-to-CommonHTML component
(every TeX extension built in) and its woff fonts. ``tests/courseware/editions/test_decks.py`` checks that every
vendored file still has the SHA-256 listed in ``vendor/README.md``.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from utils.data import _sha256 as sha256  # the course's streaming SHA-256

ROOT = Path(__file__).resolve().parents[2]
VENDOR = ROOT / "vendor"

# npm package -> (version, globs of files inside the package to keep, what the decks use them for)
PACKAGES = {
    "reveal.js": (
        # the version nbconvert 7's reveal template is written for (its default reveal_url_prefix)
        "4.0.2",
        [
            "LICENSE",
            "dist/reveal.js",
            "dist/reveal.css",
            "dist/theme/white.css",
            "dist/theme/fonts/source-sans-pro/LICENSE",
            "dist/theme/fonts/source-sans-pro/source-sans-pro.css",
            "dist/theme/fonts/source-sans-pro/*.woff",
            "plugin/notes/notes.js",
        ],
        "slides (reveal.js core, white theme, speaker notes plugin)",
    ),
    "katex": (
        "0.19.1",
        [
            "LICENSE",
            "dist/katex.min.js",
            "dist/katex.min.css",
            "dist/contrib/auto-render.min.js",
            "dist/fonts/*.woff2",
        ],
        "maths in slides and hand-outs (KaTeX with its auto-render extension)",
    ),
    "mathjax": (
        # MathJax 3 (Sphinx 7's default major version); the one combined component the website loads,
        # with every TeX extension built in (so nothing is fetched later), and its CommonHTML fonts
        "3.2.2",
        [
            "LICENSE",
            "es5/tex-chtml-full.js",
            "es5/output/chtml/fonts/woff-v2/*.woff",
        ],
        "maths on the course website (`make site`, courseware/editions/build_site.py; Sphinx's `mathjax_path`)",
    ),
}


def vendored_dir(name: str) -> Path:
    version = PACKAGES[name][0]
    return VENDOR / f"{name}-{version}"


def _fetch(name: str, version: str, globs: list[str], tmp: Path) -> dict:
    info = json.loads(subprocess.run(
        ["npm", "pack", f"{name}@{version}", "--json", "--pack-destination", str(tmp)],
        check=True, capture_output=True, text=True, cwd=tmp).stdout)[0]
    tarball = tmp / info["filename"]
    dest = vendored_dir(name)
    if dest.exists():
        shutil.rmtree(dest)
    kept = []
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            rel = member.name.removeprefix("package/")
            if member.isfile() and any(fnmatch.fnmatch(rel, g) for g in globs):
                out = dest / rel
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(tar.extractfile(member).read())
                kept.append(rel)
    missing = [g for g in globs if not any(fnmatch.fnmatch(k, g) for k in kept)]
    if missing:
        raise SystemExit(f"{name}@{version}: nothing in the package matches {missing}")
    return {"integrity": info["integrity"],
            "url": f"https://registry.npmjs.org/{name}/-/{info['filename'].split('/')[-1]}"}


def write_readme(sources: dict) -> None:
    lines = [
        "# Vendored web assets",
        "",
        "The offline slide decks and hand-outs (`make slides`, `make handouts`, built by",
        "`courseware/editions/build_decks.py`) and the course website (`make site`, `courseware/editions/build_site.py`) load",
        "these files from a copy placed next to the built pages, so they open with no network. They are",
        "committed so that a learner can build offline. Only the files the pages use are kept.",
        "",
        "To refresh or change a version: edit `PACKAGES` in `courseware/editions/vendor_assets.py` and run",
        "`python -m courseware vendor-assets` (it uses `npm pack`, which checks the registry's",
        "integrity hash, and rewrites this file); `tests/courseware/editions/test_decks.py` checks every file below",
        "against its SHA-256.",
        "",
    ]
    total = 0
    for name, (version, _, use) in PACKAGES.items():
        d = vendored_dir(name)
        src = sources[name]
        files = sorted(p for p in d.rglob("*") if p.is_file())
        size = sum(p.stat().st_size for p in files)
        total += size
        lines += [
            f"## {name} {version}",
            "",
            f"Used for: {use}. License: `{d.relative_to(VENDOR)}/LICENSE`"
            + (" (fonts: SIL Open Font License, `dist/theme/fonts/source-sans-pro/LICENSE`)" if name == "reveal.js" else "")
            + ".",
            "",
            f"Source: {src['url']} (npm integrity `{src['integrity']}`); {len(files)} files, {size:,} bytes.",
            "",
            "| file | bytes | SHA-256 |",
            "|---|---|---|",
        ]
        lines += [f"| `{p.relative_to(VENDOR).as_posix()}` | {p.stat().st_size:,} | `{sha256(p)}` |" for p in files]
        lines.append("")
    lines.append(f"Total: {total:,} bytes.")
    (VENDOR / "README.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    if shutil.which("npm") is None:
        print("npm is needed to refresh the vendored assets (the committed copies work without it)")
        return 1
    VENDOR.mkdir(exist_ok=True)
    sources = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (version, globs, _) in PACKAGES.items():
            sources[name] = _fetch(name, version, globs, Path(tmp))
            print(f"vendored {name}@{version} into {vendored_dir(name).relative_to(ROOT)}")
    write_readme(sources)
    print(f"wrote {(VENDOR / 'README.md').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
