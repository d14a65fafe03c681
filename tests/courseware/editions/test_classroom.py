"""The class hub's files, checked without a hub (`make test`; the hub itself runs in `make test-hub`):
the nbgitpuller link (courseware/editions/hub_link.py), JupyterHub's configuration, the npm lock of its proxy, and what
cannot run here, offline: the Zero to JupyterHub values against the chart's keys, the Dockerfile's install
commands against the Makefile's."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest
import yaml

from notebook_utils import ROOT

sys.path.insert(0, str(ROOT))
from courseware.editions import hub_link  # noqa: E402

CLASSROOM = ROOT / "classroom"


def test_the_link_has_jupyter_books_form():
    """The website's JupyterHub button (sphinx-book-theme's launch.py) builds the same link from the same settings."""
    url = hub_link.link("https://hub.example.edu", "https://github.com/attention-course/attention-course", "main",
                        "notebooks/04_scaled_dot_product_attention.ipynb")
    assert url == ("https://hub.example.edu/hub/user-redirect/git-pull?repo=https%3A//github.com/attention-course/"
                   "attention-course&urlpath=lab/tree/attention-course/notebooks/04_scaled_dot_product_attention.ipynb"
                   "&branch=main")


def test_the_settings_come_from_the_sites_config_and_the_environment(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://github.com/o/r\n  branch: trunk\nlaunch_buttons:\n  jupyterhub_url: \"https://h.example/\"\n")
    assert hub_link.settings(config, {}) == {"hub": "https://h.example", "repo": "https://github.com/o/r", "branch": "trunk"}
    env = {"COURSE_HUB_URL": "http://127.0.0.1:9", "COURSE_REPO_URL": "git://127.0.0.1:8/r", "COURSE_REPO_BRANCH": "main"}
    assert hub_link.settings(config, env) == {"hub": "http://127.0.0.1:9", "repo": "git://127.0.0.1:8/r", "branch": "main"}
    real = yaml.safe_load((ROOT / "site" / "_config.yml").read_text())
    assert hub_link.settings(env={"COURSE_HUB_URL": "https://h.example"})["repo"] == real["repository"]["url"]


def test_a_missing_or_wrong_hub_url_says_which_setting_to_fill(tmp_path):
    config = tmp_path / "_config.yml"
    config.write_text("repository:\n  url: https://github.com/o/r\nlaunch_buttons:\n  jupyterhub_url: \"\"\n")
    with pytest.raises(hub_link.LinkError, match=r"launch_buttons: jupyterhub_url:.*https://hub.example.edu.*COURSE_HUB_URL"):
        hub_link.settings(config, {})
    with pytest.raises(hub_link.LinkError, match="not an http"):
        hub_link.settings(config, {"COURSE_HUB_URL": "hub.example.edu"})
    res = subprocess.run([sys.executable, str(ROOT / "courseware" / "editions" / "hub_link.py"), "04"], capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    if "jupyterhub_url: \"\"" in (ROOT / "site" / "_config.yml").read_text():
        assert res.returncode == 2 and "launch_buttons: jupyterhub_url:" in res.stderr, res.stderr


def test_a_notebook_is_named_by_number_name_or_path():
    path = "notebooks/04_scaled_dot_product_attention.ipynb"
    assert hub_link.notebook_path("04") == hub_link.notebook_path("04_scaled_dot_product_attention") == path
    assert hub_link.notebook_path(path) == path
    with pytest.raises(hub_link.LinkError, match="names 0 notebooks"):
        hub_link.notebook_path("99")
    assert hub_link.repo_name("git://127.0.0.1:9418/attention-course") == "attention-course"


def test_the_hub_configuration_loads(tmp_path, monkeypatch):
    from traitlets.config.loader import PyFileConfigLoader

    monkeypatch.setenv("COURSE_HUB_STATE", str(tmp_path / "state"))
    monkeypatch.setenv("COURSE_HUB_ENV", "/opt/x")
    c = PyFileConfigLoader("jupyterhub_config.py", path=str(CLASSROOM)).load_config()
    assert c.Spawner.cmd == ["/opt/x/bin/jupyterhub-singleuser"]
    assert c.Spawner.environment["PATH"].startswith("/opt/x/bin:") and c.Spawner.environment["COURSE_THREADS"] == "1"
    assert c.ConfigurableHTTPProxy.command == [str(CLASSROOM / "node_modules" / ".bin" / "configurable-http-proxy")]
    assert c.JupyterHub.authenticator_class == "pam" and "services" not in c.JupyterHub
    assert oct((tmp_path / "state").stat().st_mode & 0o777) == "0o700"


def test_the_formgrader_is_off_for_everyone_and_on_for_instructors():
    def extensions(path):
        return json.loads(path.read_text())["ServerApp"]["jpserver_extensions"]

    off, on = extensions(CLASSROOM / "jupyter" / "jupyter_server_config.json"), extensions(CLASSROOM / "jupyter" / "instructor" / "jupyter_server_config.json")
    assert set(off) == set(on) and not any(off.values()) and all(on.values())
    assert "nbgrader.server_extensions.formgrader" in off


def test_the_proxy_is_pinned_and_locked():
    package = json.loads((CLASSROOM / "package.json").read_text())
    lock = json.loads((CLASSROOM / "package-lock.json").read_text())
    assert package["dependencies"] == {"configurable-http-proxy": "5.3.0"}
    chp = lock["packages"]["node_modules/configurable-http-proxy"]
    assert chp["version"] == "5.3.0" and chp["integrity"].startswith("sha512-")
    assert all("integrity" in p for name, p in lock["packages"].items() if name)


def _keys():
    keys = {}
    for line in (CLASSROOM / "z2jh-keys.tsv").read_text().splitlines():
        if line and not line.startswith("#"):
            path, kind, *rest = line.split("\t")
            keys[path] = (kind, rest == ["open"])
    return keys


def _type_ok(value, kind: str) -> bool:
    if kind == "any":
        return True
    if kind.startswith("enum:"):
        return str(value) in kind[5:].split(",")
    names = {"string": str, "boolean": bool, "object": dict, "array": list, "null": type(None)}
    for t in kind.split("|"):
        if t in ("integer", "number"):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and (t == "number" or isinstance(value, int)):
                return True
        elif isinstance(value, names[t]):
            return True
    return False


def check_values(values, keys, prefix=""):
    """Every key of a values file is one of the chart's, with a value of its type; below a key whose schema
    allows any key ("open"), nothing more is checked (as the chart's schema does)."""
    problems = []
    for k, v in values.items():
        path = f"{prefix}.{k}" if prefix else k
        if path not in keys:
            problems.append(f"{path}: not a key of the chart")
            continue
        kind, open_ = keys[path]
        if not _type_ok(v, kind):
            problems.append(f"{path}: {v!r} is not {kind}")
        elif isinstance(v, dict) and not open_:
            problems += check_values(v, keys, path)
    return problems


def test_z2jh_config_uses_only_the_charts_keys():
    values = yaml.safe_load((CLASSROOM / "config.yaml").read_text())
    keys = _keys()
    assert len(keys) > 400 and keys["singleuser.image.name"] == ("string", False) and keys["hub.extraConfig"][1]
    assert check_values(values, keys) == []
    assert check_values({"singleuser": {"imag": {}, "cpu": {"limit": "one"}}}, keys) == [
        "singleuser.imag: not a key of the chart", "singleuser.cpu.limit: 'one' is not number|null"]
    for name, code in values["hub"]["extraConfig"].items():
        compile(code, name, "exec")


def _recipe(target: str) -> list[str]:
    """The lines of a Makefile rule's recipe, joined across backslashes."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    block = re.search(rf"^{re.escape(target)}:[^\n]*\n((?:\t[^\n]*\n)+)", text, re.M).group(1)
    return [" ".join(line.split()) for line in block.splitlines()]


def _commands(text: str) -> list[str]:
    return [" ".join(shlex.split(c)).replace(" >/dev/null", "") for c in re.split(r"\s&&\s|;", text)]


def test_the_dockerfile_installs_what_make_hub_env_installs():
    """Same pip commands, same kernel, same Jupyter configuration as `make hub-env` (which `make test-hub` runs),
    and the same as `make install` (which `make test` runs) but for the hub group and a copy of the package."""
    make_vars = {"$(HUB_ENV)/bin/python": "python", "$(TORCH_VERSION)": "2.13.0", "$(KERNEL)": "attention-course",
                 "$(HUB_ENV)/etc/jupyter/": "/usr/local/etc/jupyter/", "$(BIN)/python": "python"}
    hub = " ".join(_recipe("$(HUB_STAMP)"))
    install = " ".join(_recipe("$(STAMP)"))
    for var, value in make_vars.items():
        hub, install = hub.replace(var, value), install.replace(var, value)
    hub, install = (t.replace("$(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) ", "") for t in (hub, install))
    docker = " ".join((CLASSROOM / "Dockerfile").read_text().replace("\\\n", " ").split())
    docker = docker.replace("${TORCH_INDEX:+--index-url $TORCH_INDEX} ", "")
    run = re.search(r"RUN (python -m pip install .*?) && rm -rf", docker).group(1)
    wanted = [c for c in _commands(hub) if c.startswith(("python -m pip", "python -m ipykernel", "cp -r"))]
    assert len(wanted) == 4 and _commands(run) == wanted
    made = [c for c in _commands(install) if c.startswith(("python -m pip", "python -m ipykernel"))]
    assert [c.replace("-e '.[lab,test]'", "'.[lab,test,hub]'").replace("-e .[lab,test]", ".[lab,test,hub]")
            for c in made] == wanted[:3]


def test_the_hub_group_is_pinned_for_the_charts_jupyterhub():
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        from pip._vendor import tomli as tomllib
    hub = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["hub"]
    assert "jupyterhub==5.5.4" in hub and "nbgitpuller==1.3.0" in hub
    assert "major version" in (CLASSROOM / "config.yaml").read_text() and "4.4.0" in (CLASSROOM / "z2jh-keys.tsv").read_text()
