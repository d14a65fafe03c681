"""The map of the files (LAYOUT.md, the module lists of utils/ and courseware/, the tools' READMEs) is generated
from the tree, so it cannot fall behind: this fails when it is stale or when a new top-level entry has
no description."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from courseware.authoring import file_map  # noqa: E402


def test_map_is_current():
    res = subprocess.run([sys.executable, "-m", "courseware", "file-map", "--check"],
                         capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 0, res.stderr


def test_every_module_and_script_is_on_the_map():
    layout = (ROOT / "LAYOUT.md").read_text(encoding="utf-8")
    modules = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
               for p in (ROOT / "utils").rglob("*.py") if p != ROOT / "utils" / "__init__.py"]
    machinery = [".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                 for p in (ROOT / "courseware").glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    machinery += [f"courseware.{p.parent.name}" for p in (ROOT / "courseware").glob("*/__init__.py")]
    tools = [p for g in file_map.GROUPS for p in (ROOT / g).glob("*.py") if p.name != "__init__.py"]
    assert len(modules) >= 20 and len(machinery) >= 7 and len(tools) >= 27
    for mod in modules + machinery:
        assert f"`{mod}`" in layout, f"{mod} is not on LAYOUT.md"
    for p in tools:
        assert p.relative_to(ROOT).as_posix() in layout, f"{p} is not on LAYOUT.md"
    assert sorted(p.name for p in (ROOT / "scripts").iterdir() if p.is_dir() and p.name != "__pycache__") == \
        ["benchmarks", "recipes"], "scripts/ holds only the recipes and the benchmarks"
    assert not list((ROOT / "scripts").glob("[!_]*.py")), "scripts/ holds folders by job, not loose scripts"


def test_the_check_notices_a_stale_list(tmp_path, monkeypatch):
    """--check is not a test that cannot fail: a module missing from the list makes it stale."""
    outputs = file_map.outputs()
    init = ROOT / "utils" / "__init__.py"
    assert "``utils.attention``" in outputs[init]
    monkeypatch.setattr(file_map, "modules", lambda package="utils": [("utils.attention", "Attention")])
    assert file_map.outputs()[init] != outputs[init]
