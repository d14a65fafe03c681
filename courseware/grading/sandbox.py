"""The sandbox autograde runs a student's kernel in (Debian's ``bubblewrap``), and what the kernel does
first inside it (:func:`lockdown`). See INSTRUCTORS.md, "What the sandbox guarantees".

Outside (``courseware/editions/nbgrader_course.py``'s ``ExerciseSectionExecute``): a :class:`Sandbox` is a fresh folder
outside the course directory with a copy of ``utils/`` and of the part of ``courseware/`` a notebook's cells
import (its grading checks, quizzes and sections; read-only inside, at ``/course``), an empty
``records`` folder (the only place the kernel can write that outlives it, ``/records`` inside), an
``inputs`` folder the judge process writes each check's hidden inputs to (``/inputs``, read-only inside) and the
kernel's sockets (ZeroMQ over Unix sockets: the kernel has no network at all). Its
:meth:`Sandbox.kernel_manager_class` is a Jupyter kernel manager that starts the kernel through
``bwrap`` with

- its own PID namespace (it sees no other process; when the kernel exits every process it started is
  killed with it, before the judge is asked anything), its own network (none), IPC and UTS namespaces;
- another OS identity: as root, the kernel is started as ``nobody`` (uid 65534) with no capabilities; as
  any other user, in a user namespace of its own as uid 65534, with none of the caller's capabilities;
- a file system of its own: the Python environment, ``/usr`` and a few files of ``/etc`` read-only, a
  private ``/tmp`` that disappears with it, ``pretrained/`` and ``runs/`` read-only, the course's data
  cache (its files read-only, the folder private and writable, so a loader may add a file from the
  mirror), and nothing else: not the course directory (source notebooks, gradebook, other submissions), not the
  repository, not the judge.

Inside, autograde's first cell (before any student code) calls :func:`lockdown`: threads and
processes become impossible (``RLIMIT_NPROC`` at the number of tasks the kernel already has, which the
kernel cannot raise again), TorchScript and ``torch.compile`` are replaced by functions that raise.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

SANDBOX_ENV = "COURSE_GRADING_SANDBOX"      # "off": autograde without a sandbox (tests on machines without bwrap)
SANDBOXED_ENV = "COURSE_GRADING_SANDBOXED"  # set inside the sandbox
NOBODY = 65534
# fixed limits on the kernel, set before it starts (prlimit): hard limits the kernel, as nobody with no
# capabilities, cannot raise. Its memory: at most 3/4 of this computer's (address space), its private /tmp
# and data folder 1 GiB each (memory-backed), no file larger than 256 MiB, no core dumps.
FILE_LIMIT = 256 * 2**20
TMP_LIMIT = 2**30


def memory_limit() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return 16 * 2**30


ROOT = Path(__file__).resolve().parents[2]
KERNEL_LEAVES_OUT = ("editions", "authoring", "measure", "setup")   # courseware/ folders the kernel never needs


class SandboxUnavailable(RuntimeError):
    pass


def bwrap() -> str | None:
    return shutil.which("bwrap") or (os.path.exists("/usr/bin/bwrap") and "/usr/bin/bwrap") or None


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """None when a sandbox can be made here, else why not (for skips and error messages); tried once
    per process."""
    import subprocess

    exe = bwrap()
    if exe is None:
        return "bubblewrap is not installed (Debian: apt-get install bubblewrap)"
    try:
        with Sandbox() as box:
            out = subprocess.run(box.wrap([sys.executable, "-c", "import os; print(os.getuid())"]),
                                 capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        return f"bwrap could not start: {e}"
    if out.returncode != 0 or out.stdout.strip() != str(NOBODY):
        return f"bwrap could not start a sandbox here (exit {out.returncode}): {out.stderr.strip()[-500:]}"
    return None


def _ancestors(path: Path) -> list[Path]:
    return [p for p in reversed(path.parents) if str(p) != "/"]


class Sandbox:
    """A folder of its own and the ``bwrap`` command line around a kernel. Use as a context manager
    (:meth:`close` removes the folder). ``env``: extra variables for the kernel."""

    def __init__(self, env: dict[str, str] | None = None, utils_dir: str | os.PathLike | None = None,
                 trusted: list[str] | None = None):
        self.root = Path(tempfile.mkdtemp(prefix="course-sandbox-"))   # 0700: no other user of the host
        # (a student on a hub) can look in; bwrap binds what the kernel needs from it
        self.course = self.root / "course"
        self.records = self.root / "records"
        self.inputs = self.root / "inputs"    # the judge writes each check's hidden inputs here: /inputs, read-only
        self.sock = self.root / "sock"
        self.as_root = os.geteuid() == 0
        shutil.copytree(Path(utils_dir) if utils_dir else ROOT / "utils", self.course / "utils",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        # what a notebook's cells import of the machinery (its checks, quizzes, sections), never the tools
        # that build editions or hold the course's secrets
        shutil.copytree(ROOT / "courseware", self.course / "courseware",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", *KERNEL_LEAVES_OUT))
        for d in (self.records, self.sock):
            d.mkdir(parents=True)
        if trusted is not None:   # the course's own cells: they may still call what the exercises remove.
            import json             # By hash only: their sources hold the hidden tests

            from courseware.grading.registry import cell_hash

            (self.course / "trusted.json").write_text(json.dumps(sorted(cell_hash(s) for s in trusted)))
        for dirpath, dirnames, filenames in os.walk(self.course):
            os.chmod(dirpath, 0o755)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o644)
        self.inputs.mkdir(mode=0o755)
        os.chmod(self.inputs, 0o755)
        if self.as_root:   # the kernel runs as nobody: these two are its to write
            for d in (self.records, self.sock):
                os.chown(d, NOBODY, NOBODY)
        self.env = dict(env or {})
        self.processes: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def stop(self, timeout: float = 30) -> None:
        """Make sure the sandbox is gone: its outer ``bwrap`` has exited (so its PID namespace, and every
        process the kernel started, with it), killed if the kernel manager left it running."""
        import subprocess

        for process in self.processes:
            if process.poll() is None:
                process.kill()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                raise SandboxUnavailable("the sandbox did not exit") from None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def _binds(self) -> list[str]:
        args: list[str] = []
        made: set[str] = set()
        bound: list[str] = []   # what is bound (not the folders made on the way to it)

        def dirs_for(dest: Path):
            for p in _ancestors(dest):
                if str(p) not in made and str(p) not in ("/usr", "/tmp", "/proc", "/dev"):
                    made.add(str(p))
                    args.extend(["--perms", "0755", "--dir", str(p)])

        def ro(src, dest=None, try_=False):
            src = Path(src)
            dest = Path(dest or src)
            if not src.exists():
                return
            dirs_for(dest)
            args.extend(["--ro-bind-try" if try_ else "--ro-bind", str(src), str(dest)])
            made.add(str(dest))
            bound.append(str(dest))

        # the private /tmp first: what is bound below may live under the host's /tmp (a checkout, its
        # Python environment), and a tmpfs mounted after it would hide it
        args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(TMP_LIMIT), "--tmpfs", "/tmp"]
        args += ["--ro-bind", "/usr", "/usr"]
        made.add("/usr")
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
            if os.path.islink(top):
                args += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                args += ["--ro-bind", top, top]
            made.add(top)
        for f in ("/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/ld.so.cache", "/etc/localtime",
                  "/etc/hosts", "/etc/mime.types", "/etc/fonts"):
            ro(f, try_=True)
        # the Python environment(s): this interpreter's, and what it was made from
        # (sys.prefix's real path too: a kernelspec written through a linked environment names that path)
        for prefix in sorted({sys.prefix, os.path.realpath(sys.prefix), sys.base_prefix, sys.exec_prefix,
                              os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}):
            if not any(prefix == m or prefix.startswith(m + "/") for m in bound + ["/usr"]):
                ro(prefix)
        ro(self.course / "utils", "/course/utils")
        ro(self.course / "courseware", "/course/courseware")
        if (self.course / "trusted.json").is_file():
            ro(self.course / "trusted.json", "/course/trusted.json")
        for name in ("pretrained", "runs"):
            ro(ROOT / name, f"/course/{name}")
        # the data cache: a private, writable folder (a loader copies a missing file from the mirror into
        # it; the copy goes with the sandbox), every file already cached bound in read-only
        data = Path(os.path.realpath(os.environ.get("COURSE_DATA_DIR") or str(ROOT / "data")))
        args += ["--perms", "1777", "--size", str(TMP_LIMIT), "--tmpfs", "/course/data"]
        made.add("/course/data")
        for path in sorted(data.rglob("*")) if data.is_dir() else []:
            dest = f"/course/data/{path.relative_to(data)}"
            if path.is_dir():
                args += ["--perms", "1777", "--dir", dest]
            elif path.is_file() and not path.name.endswith(".part"):
                args += ["--ro-bind", str(path), dest]
        mirror = os.environ.get("COURSE_DATA_MIRROR")
        if mirror and os.path.isdir(mirror):
            ro(os.path.realpath(mirror), "/course/mirror")
        dirs_for(self.sock)
        args += ["--bind", str(self.sock), str(self.sock)]
        args += ["--bind", str(self.records), "/records"]
        args += ["--ro-bind", str(self.inputs), "/inputs"]
        return args

    def environment(self) -> dict[str, str]:
        prefix_bin = os.path.join(sys.prefix, "bin")
        env = {
            "PATH": f"{prefix_bin}:/usr/local/bin:/usr/bin:/bin",
            "HOME": "/tmp", "IPYTHONDIR": "/tmp/.ipython", "MPLCONFIGDIR": "/tmp/.matplotlib",
            "JUPYTER_RUNTIME_DIR": "/tmp/.jupyter", "PYTHONPATH": "/course", "PYTHONDONTWRITEBYTECODE": "1",
            "MPLBACKEND": "Agg", "COURSE_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
            "COURSE_DATA_DIR": "/course/data", "LANG": "C.UTF-8", SANDBOXED_ENV: "1",
        }
        if os.environ.get("COURSE_DATA_MIRROR") and os.path.isdir(os.environ["COURSE_DATA_MIRROR"]):
            env["COURSE_DATA_MIRROR"] = "/course/mirror"
        env.update(self.env)
        return env

    def wrap(self, cmd: list[str]) -> list[str]:
        """``cmd`` (a kernel's command line) as it runs in the sandbox."""
        exe = bwrap()
        if exe is None:
            raise SandboxUnavailable("bubblewrap is not installed (Debian: apt-get install bubblewrap)")
        args = [exe, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                "--die-with-parent", "--new-session", "--clearenv"]
        if self.as_root:
            args += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            args += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
        args += self._binds()
        for k, v in self.environment().items():
            args += ["--setenv", k, v]
        args += ["--chdir", "/tmp", "--"]
        prlimit = shutil.which("prlimit") or "/usr/bin/prlimit"
        if os.path.exists(prlimit):
            args += [prlimit, f"--as={memory_limit()}", f"--fsize={FILE_LIMIT}", "--core=0", "--"]
        if self.as_root:
            setpriv = shutil.which("setpriv") or "/usr/bin/setpriv"
            args += [setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all",
                     "--bounding-set=-all", "--no-new-privs"]
        return args + list(cmd)

    def kernel_manager_class(self):
        """A Jupyter ``AsyncKernelManager`` whose kernel runs in this sandbox, over Unix sockets."""
        from jupyter_client.manager import AsyncKernelManager

        box = self

        class SandboxKernelManager(AsyncKernelManager):
            def __init__(self, **kwargs):
                super().__init__(**kwargs)
                self.transport = "ipc"
                self.ip = str(box.sock / "k")
                self.connection_file = str(box.sock / "kernel.json")

            async def _async_launch_kernel(self, kernel_cmd, **kw):
                # fresh file descriptors: no terminal, no log of autograde's. The kernel reads nothing
                # (stdin is /dev/null: never the instructor's typed-ahead line) and what it prints outside
                # its messages goes to a file of the sandbox's, removed with it, never to autograde's output
                import subprocess

                log = open(box.root / "kernel.log", "wb")
                kw.update(stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True)
                try:
                    return await super()._async_launch_kernel(kernel_cmd, **kw)
                finally:
                    log.close()                          # the kernel holds its own copy

            async def _async_post_start_kernel(self, **kw):
                process = getattr(self.provisioner, "process", None)
                if process is not None:
                    box.processes.append(process)
                return await super()._async_post_start_kernel(**kw)

            def format_kernel_cmd(self, extra_arguments=None):
                cmd = super().format_kernel_cmd(extra_arguments)
                if box.as_root and os.path.exists(self.connection_file):
                    os.chown(self.connection_file, NOBODY, NOBODY)
                return box.wrap(cmd)

        return SandboxKernelManager


# ---------------------------------------------------------------------------------------------
# Inside the sandbox.

def _own_tasks() -> int:
    uid, n = os.getuid(), 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    for line in f:
                        if line.startswith("Uid:"):
                            n += int(line.split()[1]) == uid
                            break
        except OSError:
            continue
    return n


def _unavailable(what):
    def refuse(*args, **kwargs):
        raise RuntimeError(f"{what} is not available while an exercise is graded (INSTRUCTORS.md, 'What the sandbox guarantees')")
    return refuse


def lockdown() -> None:
    """Autograde's first cell in the sandbox, before any student code: no new threads or processes
    (an operating-system limit the kernel cannot raise again), no TorchScript or compilation (code that
    would run outside the Python-level call watch)."""
    import resource
    import threading
    import _thread

    if not os.environ.get(SANDBOXED_ENV):
        raise RuntimeError("courseware.grading.sandbox.lockdown() is for autograde's sandbox only")
    import torch

    torch.set_num_threads(1)
    notebook = os.environ.get("COURSE_GRADING_NOTEBOOK")
    if notebook:   # every implementation of what an exercise asks for, removed before any student code runs
        import json

        from courseware.grading.registry import remove, trust

        trusted = Path(__file__).resolve().parents[2] / "trusted.json"
        if trusted.is_file():
            trust(json.loads(trusted.read_text()))
        remove(notebook)
    torch.jit.script = torch.jit.trace = torch.jit.trace_module = _unavailable("TorchScript")
    torch.jit._script.script = torch.jit._trace.trace = _unavailable("TorchScript")
    torch.compile = _unavailable("torch.compile")
    threading.Thread.start = _unavailable("a thread")
    _thread.start_new_thread = _thread.start_new = _unavailable("a thread")
    os.fork = os.forkpty = _unavailable("a process")
    n = _own_tasks()
    resource.setrlimit(resource.RLIMIT_NPROC, (n, n))
    records = os.environ.get("COURSE_GRADING_RECORDS")
    if records:   # autograde checks this mark: no mark, no grade
        Path(records, "lockdown.ok").write_text(f"{n} tasks\n")
