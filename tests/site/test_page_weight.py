"""What a page of the website weighs as a browser loads it (issue 53, item 5): every page of build/site/ opened
from 127.0.0.1 in a fresh Chromium context (nothing cached), the bytes of the page and of every file it loaded
(the Resource Timing API's encodedBodySize) summed. Prints the smallest, median and largest page and the largest
files; a page without maths loads no MathJax (build_site.py leaves its script out). Marker `site`.
"""

from __future__ import annotations

import re
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "site"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_site import OfflinePage, browser, server, site_pages  # noqa: E402,F401  (the fixtures, shared)

pytestmark = pytest.mark.site

WEIGHT_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const files = performance.getEntriesByType('resource').map(r => ({name: r.name, bytes: r.encodedBodySize}));
  const icons = document.querySelectorAll('svg.svg-inline--fa').length;
  const undrawn = [...document.querySelectorAll(':is(i, span):is(.fa-solid, .fas, .fa-regular, .far, .fa-brands, .fab), svg.missing')]
      .map(e => e.outerHTML.slice(0, 120));
  return {page: nav ? nav.encodedBodySize : 0, files, icons, undrawn};
}"""
ICON_SCRIPT_BUDGET = 100_000     # bytes: Font Awesome's core (about 50 kB) and the icons used
ASSET_BUDGET = 1_100_000         # bytes of scripts, style sheets and fonts a page loads, MathJax aside (measured: 1.00 MB)


def test_page_weight(browser, server):
    weights, files, mathjax, undrawn, assets = {}, {}, {}, {}, {}
    for path in site_pages():
        tab = OfflinePage(browser, server)   # a fresh context: nothing cached
        page = tab.open(path)
        page.wait_for_timeout(300)
        report = page.evaluate(WEIGHT_JS)
        tab.close()
        weights[path] = report["page"] + sum(f["bytes"] for f in report["files"])
        for f in report["files"]:
            name = re.sub(r"\?.*", "", f["name"].removeprefix(server))
            files[name] = max(files.get(name, 0), f["bytes"])
        mathjax[path] = any("mathjax" in f["name"].lower() for f in report["files"])
        assets[path] = sum(f["bytes"] for f in report["files"] if "mathjax" not in f["name"].lower()
                           and re.search(r"\.(js|css|woff2?|ttf)(\?|$)", f["name"]))
        if report["undrawn"] or not report["icons"]:
            undrawn[path] = report["undrawn"] or "no icon drawn"
    sizes = sorted(weights.values())
    print(f"\npage weight over {len(sizes)} pages: smallest {sizes[0] / 1e6:.2f} MB, median "
          f"{statistics.median(sizes) / 1e6:.2f} MB, largest {sizes[-1] / 1e6:.2f} MB; "
          f"{sum(mathjax.values())} pages load MathJax")
    for name, size in sorted(files.items(), key=lambda kv: -kv[1])[:6]:
        print(f"  {size / 1e6:5.2f} MB  {name}")
    for path in sorted(weights, key=weights.get)[:3] + sorted(weights, key=weights.get)[-3:]:
        print(f"  {weights[path] / 1e6:5.2f} MB  {path}")
    no_maths = [p for p in weights if mathjax[p] and 'class="math' not in (SITE / p).read_text(encoding="utf-8")
                and "\\(" not in (SITE / p).read_text(encoding="utf-8")]
    assert no_maths == [], f"pages without maths that load MathJax: {no_maths}"
    icon_script = files.get("_static/scripts/fontawesome.js", 0)
    assert 0 < icon_script <= ICON_SCRIPT_BUDGET, f"fontawesome.js: {icon_script} bytes"
    assert undrawn == {}, f"icons Font Awesome's script did not draw: {dict(list(undrawn.items())[:3])}"
    webfonts = sorted(name for name in files if "/fontawesome/webfonts/" in name)
    assert webfonts == [], f"Font Awesome's webfonts loaded: {webfonts}"
    heavy = {p: a for p, a in assets.items() if a > ASSET_BUDGET}
    assert heavy == {}, f"pages loading more than {ASSET_BUDGET} bytes of scripts, styles and fonts (MathJax aside): {heavy}"
    print(f"fontawesome.js {icon_script / 1e3:.0f} kB, no Font Awesome webfont; scripts, styles and fonts other than "
          f"MathJax: {min(assets.values()) / 1e6:.2f}-{max(assets.values()) / 1e6:.2f} MB a page")
