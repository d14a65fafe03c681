"""The sandbox autograde runs a student's kernel in (courseware/grading/sandbox.py) and the registry of what each exercise
removes (courseware/grading/registry.py). The sandbox tests need Debian's bubblewrap and are skipped, saying
why, only where it is not installed: where it is, a sandbox that cannot start fails the tests (a course
checked out under /tmp once made every sandbox fail, and the tests skipped); the round trip
(tests/courseware/grading/test_nbgrader_roundtrip.py) autogrades in it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from courseware.grading.hidden import forbidden_names
from courseware.grading.registry import REGISTRY, WATCH_ONLY, entries, forbid_targets, resolve
from courseware.grading.sandbox import Sandbox, bwrap, probe

ROOT = Path(__file__).resolve().parents[3]


def sandboxed(code: str, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    with Sandbox(env={k: str(v) for k, v in env.items()}) as box:
        out = subprocess.run(box.wrap([sys.executable, "-c", textwrap.dedent(code)]), capture_output=True, text=True,
                             timeout=timeout)
        out.records = sorted(p.name for p in box.records.iterdir())
        return out


needs_bwrap = pytest.mark.skipif(bwrap() is None, reason="bubblewrap is not installed (make sandbox-tools)")


@needs_bwrap
def test_the_sandbox_starts_wherever_bubblewrap_is_installed():
    assert probe() is None, f"bubblewrap is installed but cannot make a sandbox: {probe()}"


@needs_bwrap
def test_the_sandbox_starts_for_a_python_environment_under_tmp(tmp_path):
    """A checkout, and its .venv, may live under /tmp: the sandbox's private /tmp must not hide them."""
    import tempfile

    assert str(tmp_path).startswith(tempfile.gettempdir())
    venv = tmp_path / "checkout" / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from courseware.grading.sandbox import probe; "
            "print(probe() or 'ok')")
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code, str(ROOT)], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "ok", out.stdout + out.stderr


@needs_bwrap
def test_the_sandbox_sees_no_repository_no_other_process_no_network_and_writes_only_records():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        out = sandboxed(f"""
            import os, socket, json
            seen = {{"uid": os.getuid(), "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
                    "repo": os.path.exists({str(ROOT / 'notebooks')!r}), "utils": __import__("utils").__file__}}
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2)
                seen["network"] = True
            except OSError:
                seen["network"] = False
            for path in ("/course/utils/attention.py", "/etc/passwd", "/x"):
                try:
                    open(path, "a").close()
                    seen[path] = "written"
                except OSError:
                    seen[path] = "refused"
            open("/records/ok", "w").write("ok")
            print(json.dumps(seen))
        """)
    finally:
        server.close()
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen["uid"] == 65534 and not seen["repo"] and not seen["network"]
    assert seen["utils"] == "/course/utils/__init__.py"
    assert max(seen["pids"]) < 10, seen["pids"]   # its own PID namespace: a few processes of its own
    assert all(seen[p] == "refused" for p in ("/course/utils/attention.py", "/etc/passwd", "/x")), seen
    assert out.records == ["ok"]


@needs_bwrap
def test_the_kernel_gets_fresh_file_descriptors_never_autogrades_terminal_or_log(capfd):
    """ipykernel keeps a duplicate of the stdout and stderr it started with, and reads its stdin: a
    submission once wrote fake lines into the instructor's log and read the instructor's typed-ahead line."""
    import nbformat
    from nbclient import NotebookClient

    code = textwrap.dedent("""
        import json, os, sys
        seen = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in range(64) if os.path.exists(f"/proc/self/fd/{fd}")}
        try:
            seen["tty"] = open("/dev/tty").name
        except OSError as e:
            seen["tty"] = type(e).__name__
        seen["read"] = os.read(0, 100).decode()
        for fd, target in list(seen.items()):     # every descriptor it was given that is not a socket
            if isinstance(fd, int) and not target.startswith(("socket:", "anon_inode:")):
                try:
                    os.write(fd, b"\\x1b[2J FORGED: all submissions graded, no errors\\n")
                except OSError:
                    pass
        sys.stdout.write("SEEN " + json.dumps(seen) + "\\n")   # one write: its line is whole
        sys.stdout.flush()
    """)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    with Sandbox() as box:
        NotebookClient(nb, kernel_name="python3", kernel_manager_class=box.kernel_manager_class(),
                       timeout=120).execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs)
    # the forged lines reach the cell's own output through ipykernel's pipe, on a thread of their own:
    # they may land after the SEEN line on the same line, so read the JSON document and nothing after it
    line = next(line for line in text.splitlines() if line.startswith("SEEN "))
    seen, _ = json.JSONDecoder().raw_decode(line[5:])
    host = capfd.readouterr()
    assert "FORGED" not in host.out + host.err, "the kernel wrote into autograde's own output"
    assert seen["0"] == "/dev/null" and seen["read"] == "" and seen["tty"] != "/dev/tty", seen
    assert not any(v.startswith("/dev/pts") or v == "/dev/tty" for v in seen.values()), seen


@needs_bwrap
def test_the_kernel_has_fixed_limits_on_memory_file_size_and_its_private_folders():
    """A submission must not fill the host's memory or disk for the length of a cell's timeout."""
    from courseware.grading.sandbox import FILE_LIMIT, TMP_LIMIT, memory_limit

    out = sandboxed(f"""
        import errno, json, os, resource
        seen = {{"as": resource.getrlimit(resource.RLIMIT_AS), "fsize": resource.getrlimit(resource.RLIMIT_FSIZE)}}
        try:
            resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            seen["raised"] = True
        except (ValueError, OSError):
            seen["raised"] = False
        try:
            bytearray({memory_limit()} + 1)
            seen["memory"] = "allocated"
        except MemoryError:
            seen["memory"] = "refused"
        block = b"x" * 2**24
        try:
            with open("/tmp/big", "wb") as f:
                for _ in range({FILE_LIMIT} // 2**24 + 1):
                    f.write(block)
            seen["file"] = "written"
        except OSError as e:
            seen["file"] = errno.errorcode[e.errno]
        os.remove("/tmp/big")
        written = 0
        try:
            for i in range({TMP_LIMIT} // {FILE_LIMIT} + 2):
                with open(f"/tmp/part{{i}}", "wb") as f:
                    for _ in range({FILE_LIMIT} // 2**24 - 1):
                        f.write(block)
                        written += len(block)
            seen["tmp"] = "filled"
        except OSError as e:
            seen["tmp"] = errno.errorcode[e.errno]
        seen["tmp_written"] = written
        print(json.dumps(seen))
    """)
    seen = json.loads(out.stdout)
    assert seen["as"][1] == memory_limit() and seen["fsize"][1] == FILE_LIMIT and not seen["raised"], seen
    assert seen["memory"] == "refused" and seen["file"] == "EFBIG", seen
    assert seen["tmp"] == "ENOSPC" and seen["tmp_written"] <= TMP_LIMIT, seen


def test_no_file_of_the_sandbox_holds_a_hidden_block():
    """The course's cells are handed to the sandbox by hash (courseware.grading.registry.cell_hash): the files
    the kernel can read hold no line of any notebook's hidden tests (issue 48, item 1, for the files)."""
    from courseware.editions.nbgrader_course import course_cells

    # a line the hidden block shares with utils/ or courseware/ (which the student has anyway) is no leak
    library = "\n".join(p.read_text() for package in ("utils", "courseware") for p in (ROOT / package).rglob("*.py"))
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        trusted = course_cells(path)
        hidden = {line.strip() for s in trusted if "BEGIN HIDDEN TESTS" in s
                  for line in s.split("### BEGIN HIDDEN TESTS", 1)[1].split("### END HIDDEN TESTS", 1)[0].splitlines()
                  if len(line.strip()) > 24}
        assert hidden, f"{path.name}: no hidden block found: the test would check nothing"
        with Sandbox(trusted=sorted(trusted)) as box:
            text = "\n".join(p.read_text(errors="replace") for p in box.root.rglob("*") if p.is_file())
        leaked = [line for line in hidden if line in text and line not in library]
        assert not leaked, f"{path.name}: hidden lines in the sandbox's files: {leaked[:3]}"


@needs_bwrap
def test_the_sandboxs_folder_on_the_host_is_private_and_removed():
    import stat

    with Sandbox() as box:
        assert stat.S_IMODE(box.root.stat().st_mode) == 0o700
        root = box.root
    assert not root.exists()


@needs_bwrap
def test_a_helper_process_does_not_outlive_the_sandbox():
    """A detached helper (new session, double fork) that would write into the records after the kernel
    exits is killed with the sandbox's PID namespace."""
    start = time.time()
    out = sandboxed("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(2)
                open("/records/late", "w").write("forged")
            os._exit(0)
        time.sleep(0.2)
        print("kernel exits")
    """)
    assert out.returncode == 0 and "kernel exits" in out.stdout, out.stderr
    assert time.time() - start < 2, "the sandbox waited for the helper instead of killing it"
    time.sleep(3)
    assert out.records == []


@needs_bwrap
def test_lockdown_leaves_no_thread_process_torchscript_or_registered_builtin():
    out = sandboxed("""
        import json, os, subprocess, sys, threading
        import torch
        import courseware.grading.sandbox, utils.scale
        courseware.grading.sandbox.lockdown()
        got = {}
        def attempt(name, f):
            try:
                f()
                got[name] = "ran"
            except BaseException as e:
                got[name] = type(e).__name__
        attempt("thread", lambda: threading.Thread(target=print).start())
        def fresh_thread():
            del sys.modules["_thread"]
            import _thread
            _thread.start_new_thread(print, ("x",))
        attempt("thread, _thread re-imported", fresh_thread)
        attempt("subprocess", lambda: subprocess.run(["true"]))
        attempt("torchscript", lambda: torch.jit.script(lambda x: x))
        k = torch.randn(1, 2, 3, 4)
        attempt("repeat_interleave", lambda: k.repeat_interleave(2, dim=1))
        attempt("aten repeat_interleave", lambda: torch.ops.aten.repeat_interleave.self_int(k, 2, 1))
        def disabled():
            with torch._C.DisableTorchFunction():
                torch.repeat_interleave(k, 2, dim=1)
        attempt("repeat_interleave, torch functions disabled", disabled)
        attempt("utils.scale.repeat_kv", lambda: utils.scale.repeat_kv(k, 2))
        f = utils.scale.online_softmax_update.__wrapped__  # the code behind its contract's door
        import types
        attempt("clone", lambda: types.FunctionType(f.__code__, f.__globals__)(None, None, None, None, None))
        attempt("honest", lambda: k[:, :, None].expand(1, 2, 2, 3, 4).reshape(1, 4, 3, 4))
        print(json.dumps(got))
    """, COURSE_GRADING_NOTEBOOK="10")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got.pop("honest") == "ran"
    assert got.pop("subprocess") in ("BlockingIOError", "RuntimeError")
    assert got.pop("thread, _thread re-imported") == "RuntimeError"   # "can't start new thread": the OS limit
    assert got.pop("thread") == got.pop("torchscript") == "RuntimeError"
    assert all(v == "ForbiddenCall" for v in got.values()), got


def test_every_registry_entry_resolves_and_is_a_target_of_the_watch():
    for notebook, exercises in REGISTRY.items():
        for exercise in exercises:
            for entry in entries(notebook, exercise):
                resolve(entry)
            names = forbidden_names(forbid_targets(notebook, exercise))
            assert len(names) >= len(entries(notebook, exercise)), (notebook, exercise)
        assert WATCH_ONLY.get(notebook, set()) <= {e for es in exercises.values() for e in es}


def test_every_hidden_checks_own_forbid_list_is_in_the_registry():
    """The notebooks' hidden checks name what they forbid; the registry must hold each (so that autograde
    removes it), with every other implementation of the same function."""
    import ast

    import nbformat

    from courseware.grading.hidden import hidden_block

    def name_of(node):
        if isinstance(node, ast.Tuple):
            return node.elts[1].value
        if isinstance(node, ast.Attribute):
            return node.value.attr if node.attr == "__wrapped__" else node.attr
        return node.id

    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        number = path.name[:2]
        for cell in nb.cells:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id") or ""
            block = hidden_block(cell.source) if cell.cell_type == "code" else None
            if not block:
                continue
            listed = " ".join(entries(number, gid.split("_")[0]))
            classes = [resolve(e) for e in entries(number, gid.split("_")[0]) if isinstance(resolve(e), type)]
            listed += " " + " ".join(a for c in classes for a in vars(c))   # a class entry covers its methods
            for call in ast.walk(ast.parse(block)):
                if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "hidden_check":
                    for kw in call.keywords:
                        if kw.arg == "forbid":
                            value = kw.value
                            if isinstance(value, ast.Name):   # forbid=FORBID, assigned in the block
                                value = next(n.value for n in ast.walk(ast.parse(block)) if isinstance(n, ast.Assign)
                                             and getattr(n.targets[0], "id", "") == value.id)
                            for element in value.elts:
                                name = name_of(element)
                                assert name in listed, f"{path.name} {gid}: {name} is forbidden there, not in the registry"


def test_removal_outside_a_sandbox_too_each_notebook_keeps_its_honest_operations():
    """remove() for every notebook in one fresh process: each removed Python entry raises ForbiddenCall,
    and the operations the model answers use (matmul, softmax, masked_fill, log_softmax, topk) still run."""
    code = textwrap.dedent("""
        import inspect, json, torch
        from courseware.grading.registry import REGISTRY, WATCH_ONLY, remove, resolve
        from courseware.grading.hidden import ForbiddenCall
        bad = []
        for nb in REGISTRY:
            remove(nb)
        for nb, exercises in REGISTRY.items():
            for entry in {e for es in exercises.values() for e in es} - WATCH_ONLY.get(nb, set()):
                if entry.startswith("aten::"):
                    continue
                obj = resolve(entry)
                if isinstance(obj, type):   # a module's forward, or else the class's first method (sacreBLEU's BLEU)
                    methods = [getattr(obj, k) for k, v in vars(obj).items()
                               if not k.startswith("__") and inspect.isfunction(getattr(v, "__func__", v))]
                    fn = getattr(obj, "forward", None) or methods[0]
                else:
                    fn = obj
                try:
                    inspect.unwrap(fn)()   # behind a contract's door: the door itself would refuse no arguments
                    bad.append(entry)
                except ForbiddenCall:
                    pass
                except TypeError:
                    bad.append(entry + " (not replaced)")
        x = torch.randn(2, 3, 4)
        (x @ x.mT).softmax(-1).masked_fill(x[..., :3] > 0, 0).log_softmax(-1).topk(2)
        for call in (lambda: torch.nn.functional.one_hot(torch.tensor([0, 1]), 2),
                     lambda: torch.nn.functional.cross_entropy(torch.randn(3, 4), torch.tensor([0, 1, 2])),
                     lambda: torch.nn.functional.cosine_similarity(x, x, dim=-1),
                     lambda: torch.nn.functional.scaled_dot_product_attention(x, x, x)):
            try:
                call()
                bad.append("an aten op still runs")
            except ForbiddenCall:
                pass
        print(json.dumps(bad))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_releases_keep_their_contract():
    """Grade ids (nbgrader refuses a submission whose ids moved) and the names the checks rely on (an
    attribute the prompt renamed fails honest work made against the last release) are those of
    classroom/release_contract.json. A release that must change them: list the change in INSTRUCTORS.md
    ("Releases and their contract"), with a migration for submissions already made, then
    `python -m courseware.grading.registry contract`."""
    from courseware.grading.registry import CONTRACT_FILE, contracts

    stored = json.loads((ROOT / CONTRACT_FILE).read_text())
    now = contracts(sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    assert sorted(now) == sorted(stored), "notebooks added or renamed since the last release"
    for name in now:
        assert now[name]["cells"] == stored[name]["cells"], f"{name}: grade ids or points changed since the last release"
        for exercise, names in stored[name]["names"].items():
            gone = set(names) - set(now[name]["names"].get(exercise, []))
            assert not gone, f"{name} {exercise}: the checks no longer find {sorted(gone)} (renamed in the prompt?)"


def test_the_screen_flags_capabilities_and_no_cell_of_the_course():
    import nbformat

    from courseware.grading.hidden import screen
    from courseware.sections import exercise_cells

    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in exercise_cells(nb.cells):   # what autograde runs: the Exercises section, not the appendix
            if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
                assert screen(cell.source) == [], (path.name, cell.metadata.get("nbgrader", {}).get("grade_id"))
    samples = {
        "f.__code__ = g.__code__": "dunder access",
        "x = getattr(torch, 'repeat_' + 'interleave')": "computed getattr",
        "import torch\ntorch.allclose = lambda *a: True": "assignment to a module",
        "class T(torch.Tensor):\n    pass": "a subclass of torch.Tensor",
        "import threading": "threads",
        "data = open('/etc/passwd').read()": "open()",
        "from courseware.grading import hidden as grading": "the grader",
        "torch.ops.aten.one_hot(x, 3)": "PyTorch's internals",
        "layer._sa_block(x, None, None)": "a private attribute",
    }
    for code, what in samples.items():
        assert any(what in flag for flag in screen(code)), (code, screen(code))


def test_hidden_inputs_are_drawn_from_the_key_and_the_published_seeds_without_one():
    import torch

    from courseware.grading.hidden import keyed_seeds

    def inputs():
        g = torch.Generator().manual_seed(14)
        torch.manual_seed(3)
        return torch.randn(4, generator=g), torch.randn(2)

    published = inputs()
    a = keyed_seeds(inputs, "00" * 32, "ex1_check")()
    b = keyed_seeds(inputs, "00" * 32, "ex1_check")()
    c = keyed_seeds(inputs, "11" * 32, "ex1_check")()
    d = keyed_seeds(inputs, "00" * 32, "ex1_check2")()
    assert all(torch.equal(x, y) for x, y in zip(a, b))                      # the kernel and the judge agree
    assert not any(torch.equal(x, y) for x, y in zip(a, published))         # the published seeds say nothing
    assert not torch.equal(a[0], c[0]) and not torch.equal(a[0], d[0])      # another secret, another check
    assert torch.Generator is torch._C.Generator and all(torch.equal(x, y) for x, y in zip(inputs(), published))


def test_autograde_takes_exactly_one_verdict_line_and_only_with_its_nonce():
    sys.path.insert(0, str(ROOT))
    from courseware.editions.nbgrader_course import JudgeProcess

    from courseware.grading.hidden import READY_LINE, VERDICTS_LINE

    class Fake:
        def __init__(self, out):
            self.out, self.returncode = out, 0

        def communicate(self, *args, **kwargs):
            return self.out, ""

    judge = JudgeProcess.__new__(JudgeProcess)
    judge.log, judge.nonce = None, "abc123"
    good = f"{READY_LINE}\n{VERDICTS_LINE}abc123 " + json.dumps({"ex1_check": None}) + "\n"
    forged = f"{VERDICTS_LINE}" + json.dumps({"ex1_check": None}) + "\n"
    for out, passed in ((good, True), (good + forged, False), (forged.join([READY_LINE + "\n", ""]), False),
                        (good.replace("abc123", "abc124"), False)):
        judge.proc = Fake(out)
        verdicts = judge.decide("/nonexistent")
        assert (verdicts == {"ex1_check": None}) == passed, (out, verdicts)
        assert passed or "*" in verdicts


def test_review_lists_what_removal_leaves_to_the_watch():
    """courseware.grading.registry.review: the exercises whose rule rests on the call watch alone (autograde marks
    their check cells for a person), and only those: each listed ATen overload has no composite kernel that
    removal could override, each listed entry is in the exercise's registry or is an overload of one."""
    import torch

    from courseware.grading.registry import review

    assert review("09") == {"ex4": ("aten::scaled_dot_product_attention",)}   # WATCH_ONLY: the course's GPT uses it
    assert review("03") == {} and review("07") == {}
    assert set(review("02")) == {"ex3"}   # nn.GRUCell stays for Exercise 4's decoder
    for notebook, exercises in REGISTRY.items():
        for exercise, left in review(notebook).items():
            listed = entries(notebook, exercise)
            for entry in left:
                assert entry in listed or entry.split(".")[0] in listed, (notebook, exercise, entry)
                if entry.startswith("aten::") and entry not in WATCH_ONLY.get(notebook, set()):
                    assert not torch._C._dispatch_has_kernel_for_dispatch_key(entry, "CompositeImplicitAutograd")
