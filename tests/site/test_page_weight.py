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
  return {page: nav ? nav.encodedBodySize : 0, files};
}"""


def test_page_weight(browser, server):
    weights, files, mathjax = {}, {}, {}
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
