"""Fixtures for the browser tests: a JupyterLab server on a scratch copy of notebooks/
and Chromium driven by Playwright. Run them with `make test-browser`; the default
`make test` deselects them (marker `browser`).

The browser is Debian's chromium (Playwright cannot download its own here): the path
comes from $COURSE_CHROMIUM, else /usr/bin/chromium, else `chromium` on PATH. Without
one (or without the playwright package) every browser test is skipped with a message
saying what to install."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
INSTALL_HINT = "install a browser (Debian: `apt-get install chromium`) and run `make test-browser`"

# JupyterLab settings for the test server: every cell kept in the page (no windowing, so the
# DOM holds all outputs), no news / update pop-ups over the notebook.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
}


def chromium_path() -> str | None:
    for candidate in (os.environ.get("COURSE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab server: its base URL, token and scratch notebook folder."""

    def __init__(self, url: str, token: str, root: Path, log: Path):
        self.url, self.token, self.root, self.log = url, token, root, log

    def tree_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}&reset"

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                     headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            body = r.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        """End every session (and its kernel), as File > Shut Down would."""
        for session in self.api("sessions"):
            self.api(f"sessions/{session['id']}", method="DELETE")


@pytest.fixture(scope="session")
def lab(tmp_path_factory) -> Lab:
    base = tmp_path_factory.mktemp("lab")
    root = base / "notebooks"
    shutil.copytree(NOTEBOOKS, root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    settings = base / "user-settings"
    for rel, value in LAB_SETTINGS.items():
        f = settings / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    port, token = _free_port(), secrets.token_hex(16)
    env = dict(os.environ)
    # the kernel imports utils from this checkout (the venv's editable install may point elsewhere)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if os.environ.get("COURSE_DATA_MIRROR"):
        env["COURSE_DATA_MIRROR"] = os.environ["COURSE_DATA_MIRROR"]
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--IdentityProvider.token={token}", "--ServerApp.open_browser=False", f"--ServerApp.root_dir={root}",
           f"--LabApp.user_settings_dir={settings}", f"--LabApp.workspaces_dir={base / 'workspaces'}"]
    if os.getuid() == 0:
        cmd.append("--allow-root")
    log = base / "jupyter.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=base)
    server = Lab(f"http://127.0.0.1:{port}", token, root, log)
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            pytest.fail(f"JupyterLab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            server.api("status")
            break
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                proc.terminate()
                pytest.fail(f"JupyterLab did not answer /api/status within 120 s:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)
    yield server
    try:
        server.shut_down_kernels()
    except OSError:
        pass
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def browser():
    playwright_api = pytest.importorskip("playwright.sync_api", reason=f"playwright is not installed: {INSTALL_HINT}")
    exe = chromium_path()
    if exe is None:
        pytest.skip(f"no Chromium found (COURSE_CHROMIUM, /usr/bin/chromium, PATH): {INSTALL_HINT}")
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, lab):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(60_000)
    yield pg
    context.close()
    lab.shut_down_kernels()  # one notebook's kernel at a time


_run_all_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report):
    for key, value in report.user_properties:
        if key == "run_all_s":
            _run_all_seconds[report.nodeid] = value


def pytest_terminal_summary(terminalreporter):
    if _run_all_seconds:
        terminalreporter.section("Run All in JupyterLab (browser), seconds")
        for nodeid, secs in sorted(_run_all_seconds.items()):
            terminalreporter.write_line(f"{secs:7.1f} s  {nodeid}")
        terminalreporter.write_line(f"{sum(_run_all_seconds.values()):7.1f} s  total")
