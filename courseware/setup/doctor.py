"""``make doctor`` / ``python -m courseware doctor``: what this computer has, and what to do.

Prints the OS, Python, PyTorch and its build (CUDA, MPS or CPU only), the device the course will
use (:func:`utils.training.get_device`) and its threads (:func:`utils.training.set_cpu_threads`),
JupyterLab and the widget extension, whether the course's kernel is registered, and whether the data
cache and the shipped models pass their checksums (:func:`utils.data.check_file`,
:func:`utils.pretrained.verify_files`). Every problem is listed at the end with what to do about it;
the exit status is 1 when there is one. Paste the whole output into a bug report.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

KERNEL = "attention-course"
INSTALL = "run `make install` (without make: `python -m courseware install`)"


@dataclass
class Problem:
    what: str
    fix: str


def _version(dist: str) -> str | None:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return None


def _hosted() -> str | None:
    """'Colab' or 'Kaggle' when running there (they bring their own Jupyter front end)."""
    if "google.colab" in sys.modules or os.environ.get("COLAB_RELEASE_TAG"):
        return "Colab"
    if os.environ.get("KAGGLE_KERNEL_RUN_TYPE"):
        return "Kaggle"
    return None


def _lower_end(dist: str) -> str | None:
    """The lowest version of ``dist`` the installed course package accepts (its ``>=``), if any."""
    try:
        reqs = md.requires("attention-course") or []
    except md.PackageNotFoundError:
        return None
    for req in reqs:
        name = req.split(">=")[0].split("==")[0].split(";")[0].strip().lower()
        if name == dist and ">=" in req:
            return req.split(">=")[1].split(",")[0].split(";")[0].strip()
    return None


def _older(a: str, b: str) -> bool:
    """a < b for plain release numbers (2.12.1 < 2.13.0); a local label (+cpu) is ignored."""
    def key(v: str) -> tuple:
        parts = []
        for p in v.split("+")[0].split("."):
            digits = "".join(ch for ch in p if ch.isdigit()) if p else ""
            parts.append(int(digits) if digits and p[: len(digits)] == digits else 0)
            if digits != p:
                break
        return tuple(parts)
    return key(a) < key(b)


def check_python(problems: list[Problem]) -> str:
    v = sys.version_info
    text = f"{platform.python_version()} ({sys.executable})"
    if v < (3, 10):
        problems.append(Problem(f"Python {platform.python_version()} is older than the course needs (3.10)",
                                "install Python 3.10 or newer and make the environment again (`make clean install`)"))
    return text


def check_torch(problems: list[Problem]):
    try:
        import torch
    except ImportError as e:
        problems.append(Problem(f"PyTorch cannot be imported ({e})", INSTALL))
        return None, "not installed"
    build = []
    if torch.version.cuda:
        build.append(f"CUDA {torch.version.cuda}")
    if getattr(torch.version, "hip", None):
        build.append(f"ROCm {torch.version.hip}")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_built():
        build.append("MPS")
    text = f"{torch.__version__}, " + (" + ".join(build) + " build" if build else "CPU-only build")
    if torch.version.cuda and not torch.cuda.is_available():
        text += " (no CUDA GPU visible: the course runs on the CPU)"
    low = _lower_end("torch")
    if low and _older(torch.__version__, low):
        problems.append(Problem(f"PyTorch {torch.__version__} is older than the course supports ({low})",
                                INSTALL + ", or in your own environment `pip install \"torch>=" + low + "\"`"))
    return torch, text


def check_device(torch, problems: list[Problem]) -> str:
    if torch is None:
        return "unknown (no PyTorch)"
    from utils.training import get_device, set_cpu_threads

    try:
        dev = get_device()
    except (RuntimeError, ValueError) as e:
        problems.append(Problem(f"the device cannot be chosen: {e}",
                                f"unset COURSE_DEVICE or set it to a device this machine has (now {os.environ.get('COURSE_DEVICE')!r})"))
        return "unknown"
    text = f"{dev} (utils.training.get_device"
    text += f", COURSE_DEVICE={os.environ['COURSE_DEVICE']})" if os.environ.get("COURSE_DEVICE") else ")"
    if dev.type == "cuda":
        text += f": {torch.cuda.get_device_name(dev)}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    before = torch.get_num_threads()
    try:
        threads = set_cpu_threads()
        text += f"; {threads} CPU thread(s) for torch (utils.training.set_cpu_threads) of {cores} core(s)"
    except ValueError as e:
        problems.append(Problem(str(e), "unset COURSE_THREADS or set it to a whole number >= 1"))
    finally:
        torch.set_num_threads(before)  # report the choice, leave the caller's setting as it was
    return text


def check_jupyter(problems: list[Problem]) -> tuple[str, str]:
    hosted = _hosted()
    lab, widgets, ext = _version("jupyterlab"), _version("ipywidgets"), _version("jupyterlab_widgets")
    if hosted:
        lab_text = f"not needed on {hosted} (its own front end)"
    elif lab:
        lab_text = lab
    else:
        lab_text = "not installed"
        problems.append(Problem("JupyterLab is not installed", INSTALL))
    if widgets is None:
        problems.append(Problem("ipywidgets is not installed: the explorers have no controls", INSTALL))
        return lab_text, "ipywidgets not installed"
    w_text = f"ipywidgets {widgets}, JupyterLab extension jupyterlab_widgets {ext or 'not installed'}"
    if not hosted and lab:
        if ext is None:
            problems.append(Problem("the JupyterLab widget extension (jupyterlab_widgets) is not installed: "
                                    "explorers show as text, not controls", INSTALL + " (it installs ipywidgets 8 "
                                    "with its extension)"))
        elif widgets.split(".")[0] == "7" and lab.split(".")[0] >= "4":
            problems.append(Problem(f"ipywidgets {widgets} has no extension for JupyterLab {lab}: explorers show "
                                    f"\"Error displaying widget\"", "`pip install -c constraints.txt ipywidgets` "
                                    "(ipywidgets 8), or " + INSTALL))
    return lab_text, w_text


def _kernel_specs() -> dict[str, str]:
    """{name: folder} of the Jupyter kernels this environment can see."""
    from jupyter_client.kernelspec import KernelSpecManager

    return KernelSpecManager().find_kernel_specs()


def check_kernel(problems: list[Problem]) -> str:
    if _hosted():
        return f"not needed on {_hosted()} (the notebook runs in its own Python)"
    try:
        specs = _kernel_specs()
    except ImportError:
        problems.append(Problem("jupyter_client is not installed, so no kernel can be found", INSTALL))
        return "unknown"
    fix = (f"{INSTALL}; in your own environment: `python -m ipykernel install --user --name {KERNEL} "
           f"--display-name \"Python 3 ({KERNEL})\"`")
    if KERNEL not in specs:
        problems.append(Problem(f"the Jupyter kernel {KERNEL!r} is not registered: every notebook asks for it "
                                f"(a \"Select kernel\" dialog, or \"No such kernel\")", fix))
        return "not registered"
    folder = Path(specs[KERNEL])
    text = f"{KERNEL} registered ({folder})"
    try:
        import json

        argv0 = json.loads((folder / "kernel.json").read_text())["argv"][0]
        if os.sep in argv0 and not Path(argv0).exists():
            problems.append(Problem(f"the kernel {KERNEL!r} runs {argv0}, which no longer exists (a deleted "
                                    f"environment)", fix))
    except (OSError, ValueError, KeyError, IndexError):
        pass
    return text


def check_data(problems: list[Problem]) -> str:
    from utils import data

    cache, mirror = data.cache_dir(), os.environ.get("COURSE_DATA_MIRROR")
    states = {p: data.check_file(p) for p in data.DATA_FILES}
    ok = sum(s == "ok" for s in states.values())
    text = f"cache {cache}: {ok} of {len(states)} files pass their SHA-256"
    for path, state in states.items():
        if state == "corrupt":
            problems.append(Problem(f"data file {cache / path} is corrupt or was changed (its SHA-256 is not the "
                                    f"recorded one)", f"delete it; the next use fetches a fresh copy "
                                    f"(utils.data.fetch also removes it by itself)"))
    missing = [p for p, s in states.items() if s == "missing"]
    if mirror:
        m_states = {p: data.check_file(p, mirror) for p in missing}
        bad = {p: s for p, s in m_states.items() if s != "ok"}
        text += (f"; the {len(missing)} not in it: {len(missing) - len(bad)} pass in the mirror "
                 f"(COURSE_DATA_MIRROR={mirror})")
        for path, state in sorted(bad.items()):
            problems.append(Problem(f"data file {path} is not in the cache and the mirror's copy is {state} "
                                    f"({Path(mirror).expanduser() / path}); the notebooks that need it stop with a "
                                    f"DownloadError", f"copy a good {path} into {mirror} (see data/README.md "
                                    f"for the source), or unset COURSE_DATA_MIRROR to download it"))
    elif missing:
        text += f"; {len(missing)} not downloaded yet (fetched on first use: needs internet)"
    return text


def check_models(problems: list[Problem]) -> str:
    try:
        from utils import pretrained
    except ImportError as e:
        return f"not checked ({e})"
    passed, msgs = pretrained.verify_files()
    for msg in msgs:
        problems.append(Problem(f"shipped model: {msg.split('. Restore')[0].split('; restore')[0]}",
                                "restore it: `git checkout -- pretrained` (in a clone made by a notebook's first "
                                "cell: delete the clone's folder and run the cell again)"))
    return f"{pretrained.pretrained_dir()}: {passed} files pass their SHA-256 and size (MANIFEST.json)" + (
        f", {len(msgs)} do not" if msgs else "")


def report(out=print) -> list[Problem]:
    """Print the report; return the problems found."""
    problems: list[Problem] = []
    rows = [("OS", f"{platform.system()} {platform.release()} ({platform.machine()})"),
            ("Python", check_python(problems))]
    torch, torch_text = check_torch(problems)
    rows += [("PyTorch", torch_text), ("device", check_device(torch, problems))]
    lab, widgets = check_jupyter(problems)
    rows += [("JupyterLab", lab), ("widgets", widgets), ("kernel", check_kernel(problems)),
             ("data", check_data(problems)), ("models", check_models(problems))]
    try:
        from utils import __version__ as course_version
        from utils.data import REPO_ROOT
        rows.insert(0, ("course", f"utils {course_version} at {REPO_ROOT}"))
    except ImportError:
        pass
    out("attention-course doctor")
    for label, text in rows:
        out(f"  {label:<11} {text}")
    if not problems:
        out("no problems found")
    else:
        out(f"{len(problems)} problem{'s' if len(problems) > 1 else ''}:")
        for i, p in enumerate(problems, 1):
            out(f"  {i}. {p.what}")
            out(f"     fix: {p.fix}")
    return problems


def main(argv: list[str] | None = None) -> int:
    return 1 if report() else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
