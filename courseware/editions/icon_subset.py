"""Font Awesome on the website, only the icons its pages use (issue 53: the page weight).

pydata-sphinx-theme 0.17.1 ships Font Awesome 6.5.2 as one "SVG with JavaScript" bundle,
``_static/scripts/fontawesome.js`` (1.49 MB), that every page loads: the icon library's core (about 50 kB), which
turns each ``<i class="fa-solid fa-bars">`` into an inline ``<svg>``, and three packs of icon paths (brands, regular,
solid: about 2,000 icons, all the rest of the file). The site uses about twenty of them.

``subset(site)`` (``courseware/editions/build_site.py`` runs it on every build) rewrites that file in the built site:
the core is kept as it is, and each pack keeps only the icons named by a page or a script of the site
(``used_names``: every ``fa-<name>`` in an HTML page or a JavaScript file but Font Awesome's own, which covers the
icons a script adds later, such as the theme's ``fa-xmark``). Nothing is fetched and nothing new is vendored: the
paths come from the theme's own copy. Its source map, which describes the whole file, is left out.

    python -m courseware.editions.icon_subset build/site     # what it keeps, for a built site
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

FONTAWESOME_JS = Path("_static") / "scripts" / "fontawesome.js"
# a pack's icons, in the minified bundle: `var p={name:[width,height,[aliases],"unicode","path"],...}`, defined right
# after the pack's helper code (which ends by registering solid icons under "fa" too) and registered by
# d("fab"|"far"|"fas", p)
PACK_START = re.compile(r'"fas"===c&&d\("fa",l\)\}var p=\{')
# Font Awesome's own class names that are not icons (styles, sizes, animations): never an icon's name to keep
NOT_ICONS = {"solid", "regular", "brands", "classic", "sharp", "light", "thin", "duotone", "kit", "fw", "lg", "xs",
             "sm", "xl", "2xs", "2xl", "border", "pull-left", "pull-right", "spin", "pulse", "inverse", "stack",
             "layers", "ul", "li"}
MARK = "/* Font Awesome, only the icons the site uses (courseware/editions/icon_subset.py) */\n"
FA_CLASS = re.compile(r"\bfa-([a-z0-9]+(?:-[a-z0-9]+)*)")


def _object_end(text: str, start: int) -> int:
    """The index just past the ``}`` closing the object literal whose ``{`` is at ``start - 1`` (strings skipped)."""
    depth, i, n = 1, start, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            i = text.index('"', i + 1)   # icon data has no escaped quotes
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unterminated object literal")


def _entries(body: str) -> list[tuple[str, str]]:
    """The ``key:value`` entries of an object literal's body, split at its top-level commas: [(name, entry)]."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(body):
        c = body[i]
        if c == '"':
            i = body.index('"', i + 1)
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(body[start:i])
            start = i + 1
        i += 1
    if body[start:].strip():
        out.append(body[start:])
    return [(entry.split(":", 1)[0].strip('"'), entry) for entry in out]


def _aliases(entry: str) -> list[str]:
    """An icon's other names (its aliases; unicode code points, given as numbers, are not names)."""
    m = re.match(r'[^:]+:\[\d+,\d+,\[([^\]]*)\]', entry)
    return re.findall(r'"([^"]+)"', m.group(1)) if m else []


def subset_bundle(text: str, keep: set[str]) -> tuple[str, dict[str, int], set[str]]:
    """The bundle with each pack's icons cut down to those named in ``keep`` (by name or alias): the new text, the
    icons kept per pack (in the bundle's order), and the names of ``keep`` that no pack has."""
    out, pos, kept, found = [], 0, {}, set()
    for m in PACK_START.finditer(text):
        end = _object_end(text, m.end())
        pack = re.search(r'd\("(fa[a-z]*)",p\)', text[end:end + 2000])
        entries = _entries(text[m.end():end - 1])
        chosen = []
        for name, entry in entries:
            names = {name, *_aliases(entry)}
            if names & keep:
                chosen.append(entry)
                found |= names & keep
        kept[pack.group(1) if pack else f"pack {len(kept) + 1}"] = len(chosen)
        out += [text[pos:m.end()], ",".join(chosen), "}"]
        pos = end
    if not kept:
        raise ValueError("no icon pack found: is this Font Awesome 6's SVG-with-JavaScript bundle?")
    out.append(text[pos:])
    new = re.sub(r"\n//# sourceMappingURL=\S+\s*$", "\n", "".join(out))
    return new, kept, keep - found


def used_names(site: Path) -> set[str]:
    """Every ``fa-<name>`` named by the site's HTML pages and scripts (Font Awesome's own bundle aside), less the
    class names that are not icons."""
    names = set()
    for path in [*site.rglob("*.html"), *site.rglob("*.js")]:
        if path.name == FONTAWESOME_JS.name or "mathjax" in path.as_posix():
            continue
        names |= set(FA_CLASS.findall(path.read_text(encoding="utf-8", errors="replace")))
    return {n for n in names if n not in NOT_ICONS and not re.fullmatch(r"\d+x|rotate-\d+|flip.*|beat.*|fade|bounce|shake", n)}


def subset(site: Path) -> dict:
    """Rewrite the built site's fontawesome.js to the icons its pages and scripts use (see the module docstring);
    return what it did: bytes before and after, the icons kept per pack, the names used, and those no pack has."""
    path = site / FONTAWESOME_JS
    text = path.read_text(encoding="utf-8")
    before = len(text.encode())
    if text.startswith(MARK):
        return {"before": before, "after": before, "kept": {}, "used": [], "unknown": []}   # already done
    used = used_names(site)
    new, kept, unknown = subset_bundle(text, used)
    new = MARK + new
    path.write_text(new, encoding="utf-8")
    path.with_name(path.name + ".map").unlink(missing_ok=True)
    return {"before": before, "after": len(new.encode()), "kept": kept, "used": sorted(used), "unknown": sorted(unknown)}


def main(argv: list[str] | None = None) -> int:
    site = Path((argv if argv is not None else sys.argv[1:] or ["build/site"])[0])
    used = used_names(site)
    text = (site / FONTAWESOME_JS).read_text(encoding="utf-8")
    new, kept, unknown = subset_bundle(text, used)
    print(f"{len(used)} icon names used: {', '.join(sorted(used))}")
    print(f"fontawesome.js: {len(text.encode()) / 1e6:.2f} MB -> {len(new.encode()) / 1e6:.3f} MB; kept {kept}; "
          f"not in any pack: {sorted(unknown) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
