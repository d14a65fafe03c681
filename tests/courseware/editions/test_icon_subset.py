"""courseware/editions/icon_subset.py: the website's Font Awesome bundle cut down to the icons its pages use.

A small bundle laid out as Font Awesome 6's minified SVG-with-JavaScript build is (each pack's helper code ending in
``"fas"===c&&d("fa",l)}``, then ``var p={...}``, then ``d("fas",p)``); the site's own copy is checked under
`make test-site` (tests/site/test_page_weight.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))
from courseware.editions import icon_subset  # noqa: E402

HELPER = 'function d(c,l){L.styles[c]=l;"fas"===c&&d("fa",l)}'


def pack(prefix: str, icons: dict[str, str]) -> str:
    body = ",".join(f"{name}:{value}" for name, value in icons.items())
    return f'(function(){{{HELPER}var p={{{body}}};(function(){{d("{prefix}",p),d("fa-x",p)}})}})();'


BRANDS = {'"github"': '[496,512,[],"f09b","M165.9 397.4c0 2-2.3 3.6-5.2 3.6z"]',
          "python": '[448,512,[],"f3e2","M439.8 200.5c-7.7-30.9z"]'}
SOLID = {"0": '[320,512,[],"30","M0 192C0 103.6z"]',
         '"bars"': '[448,512,["navicon"],"f0c9","M0 96C0 78.3z"]',
         '"magnifying-glass"': '[512,512,[128269,"search"],"f002","M416 208c0 45.9z"]',
         '"circle-half-stroke"': '[512,512,[9680,"adjust"],"f042","M448 256c0-106z"]',
         '"duo"': '[512,512,[],"f000",["M1 1z","M2 2z"]]'}
BUNDLE = "/*! core */var L={styles:{}};" + pack("fab", BRANDS) + pack("fas", SOLID) + "\n//# sourceMappingURL=fontawesome.js.map\n"


def test_each_pack_keeps_only_the_icons_named_by_name_or_alias():
    new, kept, unknown = icon_subset.subset_bundle(BUNDLE, {"bars", "search", "duo", "not-an-icon"})
    assert kept == {"fab": 0, "fas": 3}
    assert unknown == {"not-an-icon"}
    packs = re.findall(r"var p=\{(.*?)\};", new)
    assert packs == ["", ",".join(f"{k}:{SOLID[k]}" for k in ('"bars"', '"magnifying-glass"', '"duo"'))]
    assert new.startswith("/*! core */var L={styles:{}};") and new.count(HELPER) == 2   # the code is kept
    assert "sourceMappingURL" not in new          # the map described the whole bundle


def test_no_icon_named_keeps_empty_packs_and_the_bundle_still_parses_as_the_same_shape():
    new, kept, _ = icon_subset.subset_bundle(BUNDLE, set())
    assert kept == {"fab": 0, "fas": 0}
    assert new.count("var p={}") == 2


def test_a_file_that_is_not_the_bundle_is_refused():
    with pytest.raises(ValueError, match="no icon pack"):
        icon_subset.subset_bundle("console.log('hello')", {"bars"})


def test_used_names_are_read_from_pages_and_scripts_not_styles_or_the_bundle(tmp_path):
    (tmp_path / "_static" / "scripts").mkdir(parents=True)
    (tmp_path / "index.html").write_text('<i class="fa-solid fa-bars fa-lg"></i><i class="fab fa-github"></i>')
    (tmp_path / "_static" / "theme.js").write_text('e.classList="fa-solid fa-xmark"')
    (tmp_path / "_static" / "theme.css").write_text(".fa-anchor:before{content:'x'}")
    (tmp_path / "_static" / "scripts" / "fontawesome.js").write_text(BUNDLE + '"fa-unused"')
    assert icon_subset.used_names(tmp_path) == {"bars", "github", "xmark"}


def test_subset_rewrites_the_sites_copy_once_and_drops_its_map(tmp_path):
    scripts = tmp_path / "_static" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "fontawesome.js").write_text(BUNDLE)
    (scripts / "fontawesome.js.map").write_text("{}")
    (tmp_path / "page.html").write_text('<i class="fa-brands fa-python"></i><i class="fa-solid fa-adjust"></i>')
    done = icon_subset.subset(tmp_path)
    assert done["kept"] == {"fab": 1, "fas": 1} and done["unknown"] == [] and done["after"] < done["before"]
    assert not (scripts / "fontawesome.js.map").exists()
    text = (scripts / "fontawesome.js").read_text()
    assert text.startswith(icon_subset.MARK) and '"circle-half-stroke"' in text and "python:" in text
    assert '"bars"' not in text and '"github"' not in text
    assert icon_subset.subset(tmp_path)["kept"] == {}        # a second run leaves it as it is
    assert (scripts / "fontawesome.js").read_text() == text
