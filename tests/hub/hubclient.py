"""A class hub on 127.0.0.1 and its users, driven as people drive them: for tests/hub and courseware/measure/bench_hub.py.

``ClassHub`` starts JupyterHub with classroom/jupyterhub_config.py (PAM logins, real single-user servers,
configurable-http-proxy from classroom/node_modules) and stops it. ``Person`` is one account: it logs in
with its password (the hub checks it with PAM and gives back a token), starts its own server and then
works only through that server: the contents API, the nbgrader assignment list's REST calls (what the
JupyterLab "Assignments" tab does), nbgitpuller's link, and code or shell commands run in its own kernel
(so they run as that person, with that person's permissions). Needs root (it adds accounts).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import socket
import subprocess
import time
import uuid
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "classroom" / "jupyterhub_config.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClassHub:
    def __init__(self, env: Path, workdir: Path, instructors_group: str, students_group: str):
        self.env, self.workdir = Path(env), Path(workdir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.exchange = self.workdir / "exchange"
        self.token = secrets.token_hex(32)
        self.log = self.workdir / "jupyterhub.log"
        self.vars = {
            "COURSE_HUB_ENV": str(self.env),
            "COURSE_HUB_STATE": str(self.workdir / "state"),
            "COURSE_EXCHANGE": str(self.exchange),
            "COURSE_HUB_BIND_URL": f"{self.url}/",
            "COURSE_HUB_INSTRUCTORS_GROUP": instructors_group,
            "COURSE_HUB_STUDENTS_GROUP": students_group,
            "COURSE_HUB_SERVICE_TOKEN": self.token,
        }
        self.proc = None

    def start(self, timeout: float = 60) -> float:
        env = {**os.environ, **self.vars, "CONFIGPROXY_AUTH_TOKEN": secrets.token_hex(32)}
        t = time.time()
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([str(self.env / "bin" / "jupyterhub"), "-f", str(CONFIG), "--port", str(self.port),
                                          "--ip", "127.0.0.1", "--JupyterHub.hub_port", str(free_port())],
                                         cwd=self.workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        while time.time() - t < timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyterhub exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=2).ok:
                    return time.time() - t
            except requests.ConnectionError:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"jupyterhub did not answer in {timeout} s:\n{self.tail()}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()   # it stops the users' servers and its proxy (cleanup_servers, cleanup_proxy)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()

    def tail(self, n: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-n:] if self.log.exists() else ""

    def api(self, method: str, path: str, **kw) -> requests.Response:
        """The hub's REST API with the course-admin service's token."""
        r = requests.request(method, f"{self.url}/hub/api{path}", headers={"Authorization": f"token {self.token}"},
                             timeout=60, **kw)
        if not r.ok:
            raise RuntimeError(f"{method} /hub/api{path}: {r.status_code} {r.text[:500]}")
        return r


class Person:
    """One account on the hub: ``login``, ``start``, then everything through its own server."""

    def __init__(self, hub: ClassHub, name: str, password: str):
        self.hub, self.name, self.password = hub, name, password
        self.token = self._kernel = None
        self.base = f"{hub.url}/user/{name}"

    # the hub: log in (PAM, via the token API) and start the server
    def login(self) -> None:
        self.hub.api("POST", f"/users/{self.name}") if not self._exists() else None
        r = requests.post(f"{self.hub.url}/hub/api/users/{self.name}/tokens", timeout=60,
                          json={"auth": {"username": self.name, "password": self.password}, "note": "tests/hub"})
        if not r.ok:
            raise RuntimeError(f"{self.name} could not log in: {r.status_code} {r.text[:300]}")
        self.token = r.json()["token"]
        self.browser = self.browser_login()

    def browser_login(self) -> requests.Session:
        """The login form, as a browser fills it in: a session holding the hub's cookie (the hub's pages,
        such as an nbgitpuller link, take no API token)."""
        session = requests.Session()
        session.get(f"{self.hub.url}/hub/login", timeout=60)
        r = session.post(f"{self.hub.url}/hub/login", allow_redirects=False, timeout=60,
                         data={"username": self.name, "password": self.password, "_xsrf": session.cookies.get("_xsrf", "")})
        if r.status_code != 302:
            raise RuntimeError(f"{self.name}: the login form answered {r.status_code}: {r.text[:300]}")
        return session

    def _exists(self) -> bool:
        return requests.get(f"{self.hub.url}/hub/api/users/{self.name}", headers={"Authorization": f"token {self.hub.token}"},
                            timeout=30).ok

    def start(self, timeout: float = 180) -> float:
        t = time.time()
        r = self.hub_request("POST", f"/users/{self.name}/server")
        if r.status_code not in (201, 202, 400):   # 400: already running
            raise RuntimeError(f"{self.name}: starting the server: {r.status_code} {r.text[:300]}")
        while time.time() - t < timeout:
            server = self.hub_request("GET", f"/users/{self.name}").json().get("servers", {}).get("")
            if server and server.get("ready"):
                return time.time() - t
            time.sleep(0.3)
        raise RuntimeError(f"{self.name}'s server did not start in {timeout} s:\n{self.hub.tail()}")

    def hub_request(self, method: str, path: str, **kw) -> requests.Response:
        return requests.request(method, f"{self.hub.url}/hub/api{path}", headers=self.headers, timeout=60, **kw)

    @property
    def headers(self) -> dict:
        return {"Authorization": f"token {self.token}"}

    # the person's own server
    def request(self, method: str, path: str, ok=True, **kw) -> requests.Response:
        kw.setdefault("timeout", 120)
        r = requests.request(method, f"{self.base}{path}", headers=self.headers, **kw)
        if ok and not r.ok:
            raise RuntimeError(f"{self.name}: {method} {path}: {r.status_code} {r.text[:800]}")
        return r

    def read_notebook(self, path: str) -> dict:
        return self.request("GET", f"/api/contents/{path}?content=1").json()["content"]

    def write_notebook(self, path: str, nb: dict) -> None:
        self.request("PUT", f"/api/contents/{path}", json={"type": "notebook", "format": "json", "content": nb})

    def read_text(self, path: str) -> str:
        return self.request("GET", f"/api/contents/{path}?content=1&type=file&format=text").json()["content"]

    def listdir(self, path: str) -> list[str]:
        return [c["name"] for c in self.request("GET", f"/api/contents/{path}?content=1").json()["content"]]

    def assignments(self, action: str | None = None, assignment: str = "", course: str = "attention-course"):
        """nbgrader's assignment list (the JupyterLab Assignments tab): list, fetch, submit, fetch_feedback."""
        if action is None:
            r = self.request("GET", "/assignments", params={"course_id": course}).json()
        else:
            r = self.request("POST", f"/assignments/{action}", params={"course_id": course, "assignment_id": assignment},
                             timeout=300).json()
        if not r.get("success"):
            raise RuntimeError(f"{self.name}: {action or 'list'} {assignment} failed:\n{r.get('value')}")
        return r["value"]

    def pull(self, link: str) -> list[str]:
        """Open an nbgitpuller link as the browser does: the hub sends the person to their server's
        /git-pull page, whose script then streams /git-pull/api; returns the lines it reported."""
        from urllib.parse import parse_qs, urlsplit

        page = self.browser.get(link, timeout=120)   # the hub, then the server's OAuth with the hub, then its page
        if not page.ok or f"/user/{self.name}/git-pull" not in page.url:
            raise RuntimeError(f"{self.name}: the link led to {page.url} ({page.status_code})")
        q = {k: v[0] for k, v in parse_qs(urlsplit(page.url).query).items()}
        params = {"repo": q["repo"], "branch": q.get("branch", ""), "targetpath": q["repo"].rstrip("/").split("/")[-1]}
        lines = []
        with self.request("GET", "/git-pull/api", params=params, stream=True, timeout=300) as r:
            for raw in r.iter_lines(decode_unicode=True):
                if not raw or not raw.startswith("data: "):
                    continue
                event = json.loads(raw[len("data: "):])
                lines.append(event.get("output", "") or event.get("message", ""))
                if event.get("phase") == "error":
                    raise RuntimeError(f"{self.name}: nbgitpuller: {event.get('message')}\n{event.get('output', '')}")
                if event.get("phase") == "finished":
                    return lines
        raise RuntimeError(f"{self.name}: nbgitpuller's stream ended without 'finished': {lines}")

    # code in the person's own kernel (so: as that person)
    def kernel(self, name: str = "attention-course") -> str:
        return self.request("POST", "/api/kernels", json={"name": name}).json()["id"]

    def run(self, code: str, timeout: float = 600) -> str:
        """Run code in the person's kernel (started on first use); its stdout, or RuntimeError with the traceback."""
        if self._kernel is None:
            self._kernel = self.kernel()
        return asyncio.run(self._execute(self._kernel, code, timeout))

    async def _execute(self, kid: str, code: str, timeout: float) -> str:
        from tornado.httpclient import HTTPRequest
        from tornado.websocket import websocket_connect

        url = f"{self.base.replace('http', 'ws', 1)}/api/kernels/{kid}/channels"
        # (a kernel's websocket opens once the kernel answers: minutes when many start at once on 2 cores)
        ws = await websocket_connect(HTTPRequest(url, headers=self.headers, connect_timeout=timeout, request_timeout=timeout))
        msg_id = uuid.uuid4().hex
        ws.write_message(json.dumps({
            "header": {"msg_id": msg_id, "username": self.name, "session": uuid.uuid4().hex,
                       "msg_type": "execute_request", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        out, error = [], None
        deadline = time.time() + timeout
        try:
            while True:
                raw = await asyncio.wait_for(ws.read_message(), max(1.0, deadline - time.time()))
                if raw is None:
                    raise RuntimeError(f"{self.name}: the kernel's websocket closed")
                msg = json.loads(raw)
                if msg.get("parent_header", {}).get("msg_id") != msg_id:
                    continue
                kind = msg["msg_type"]
                if kind == "stream":
                    out.append(msg["content"]["text"])
                elif kind == "error":
                    error = "\n".join(msg["content"]["traceback"])
                elif kind == "status" and msg["content"]["execution_state"] == "idle":
                    break
        finally:
            ws.close()
        if error:
            raise RuntimeError(f"{self.name}'s kernel: {error}\nstdout: {''.join(out)[-3000:]}")
        return "".join(out)

    def sh(self, command: str, timeout: float = 600) -> str:
        """A shell command run from the person's own kernel (their home as the current folder); its output,
        or RuntimeError with the output when it fails."""
        code = ("import json, os, subprocess\n"
                f"_r = subprocess.run({command!r}, shell=True, capture_output=True, text=True, cwd=os.path.expanduser('~'))\n"
                "print(json.dumps({'rc': _r.returncode, 'out': _r.stdout[-20000:], 'err': _r.stderr[-20000:]}))\n")
        result = json.loads(self.run(code, timeout=timeout).strip().splitlines()[-1])
        if result["rc"] != 0:
            raise RuntimeError(f"{self.name}$ {command}\nexit {result['rc']}\n{result['out']}\n{result['err']}")
        return result["out"] + result["err"]

    def can_read(self, paths: list[str]) -> dict[str, bool]:
        """For each path, whether this person can list it (a folder) or read it (a file), tried in their kernel."""
        code = ("import json, os\n"
                "def _try(p):\n"
                "    try:\n"
                "        os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read(1)\n"
                "        return True\n"
                "    except OSError:\n"
                "        return False\n"
                f"print(json.dumps({{p: _try(p) for p in {list(paths)!r}}}))\n")
        return json.loads(self.run(code).strip().splitlines()[-1])
