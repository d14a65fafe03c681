"""A class on one machine, measured (run by hand, as root; not part of any test run; asserts nothing on time).

    make hub-env hub-proxy && nice python -m courseware bench-hub        # COURSE_HUB_ENV / --students to change

It builds what `make test-hub` builds (tests/hub/hubclient.py: real accounts, JupyterHub on 127.0.0.1, the
course's environment) with one instructor and ``--students`` students (10), then prints:

1. logging in and starting a server, all students at once (login: the form and the token API, both PAM);
2. every student running notebook 04's Exercises section (model answers filled in) at the same time, cell by
   cell in their own kernel: the p50/p95 of a cell's time, each student's section, and the hub's API latency
   meanwhile (a probe every 0.5 s); then everyone submits at once and the instructor collects: how many arrived;
3. autograding ``--submissions`` (30) submissions of assignment 04 (a third model answers, a third with
   Exercise 4 done by the library, a third stubs), as the instructor: one `nbgrader autograde` process (how
   nbgrader grades: one submission after another), then the same with two processes side by side, each on
   half the students (the gradebook is one SQLite file: whether concurrent writers lose or fail anything).

Everything is removed afterwards (accounts, homes, the hub's folder).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "hub"), str(ROOT / "tests"), str(ROOT / "tests" / "courseware" / "grading"), str(ROOT)]
from hubclient import ClassHub, Person  # noqa: E402
from courseware.editions.nbgrader_course import exercise_section_end, exercise_section_start, release  # noqa: E402
from test_hub import AID, COURSE, answered, serve_repository  # noqa: E402

INSTRUCTOR = "hubb-teach"
GROUPS = ["hubb-instructors", "hubb-students"]


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def summary(name, values, unit="s"):
    print(f"  {name}: n={len(values)}, p50 {pct(values, 0.5):.2f} {unit}, p95 {pct(values, 0.95):.2f} {unit}, "
          f"max {max(values):.2f} {unit}")


def at_once(fn, items):
    out, threads = {}, []

    def wrap(x):
        try:
            out[x] = fn(x)
        except Exception as e:  # noqa: BLE001 (counted and printed)
            out[x] = e

    for x in items:
        threads.append(threading.Thread(target=wrap, args=(x,)))
        threads[-1].start()
    for t in threads:
        t.join()
    return out


def setup(action, names, exchange):
    subprocess.run([sys.executable, str(ROOT / "classroom" / "setup_class.py"), action, "--instructor", INSTRUCTOR,
                    "--students", *names, "--exchange", str(exchange), "--instructors-group", GROUPS[0],
                    "--students-group", GROUPS[1]], check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--students", type=int, default=10)
    ap.add_argument("--submissions", type=int, default=30, help="0: no autograding (parts 1 and 2 only)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_hub: run as root (it adds accounts and runs JupyterHub)", file=sys.stderr)
        return 2
    env = Path(os.environ.get("COURSE_HUB_ENV", "/opt/attention-course/hub-env"))
    students = [f"hubb-s{i:02d}" for i in range(args.students)]
    work = Path(tempfile.mkdtemp(prefix="course-hub-bench-"))
    os.chmod(work, 0o755)
    hub = daemon = None
    try:
        setup("add", students, work / "exchange")
        passwords = {n: secrets.token_urlsafe(12) for n in [INSTRUCTOR, *students]}
        subprocess.run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in passwords.items()), text=True, check=True)
        repo, daemon = serve_repository(work)
        hub = ClassHub(env, work, *GROUPS)
        print(f"hub up in {hub.start():.1f} s ({os.cpu_count()} cores)")
        people = {n: Person(hub, n, passwords[n]) for n in [INSTRUCTOR, *students]}
        teach = people[INSTRUCTOR]
        teach.login(), teach.start()
        teach.sh(f"git clone --quiet {repo.url} {COURSE} && cd {COURSE} && python -m courseware course course "
                 f"--notebooks 04 && nbgrader release_assignment {AID}")

        print(f"\n1. {len(students)} students log in and start their servers at once")

        def arrive(n):
            p, t = people[n], time.time()
            p.login()
            login = time.time() - t
            return login, p.start()

        arrived = at_once(arrive, students)
        failed = [n for n, r in arrived.items() if isinstance(r, Exception)]
        ok = [r for r in arrived.values() if not isinstance(r, Exception)]
        summary("log in (PAM, twice)", [a for a, _ in ok])
        summary("server start", [b for _, b in ok])
        print(f"  failed: {len(failed)} {failed[:3]}")

        print(f"\n2. {len(students)} students run notebook 04's Exercises section at once")
        source = nbformat.read(ROOT / "notebooks" / f"{AID}.ipynb", as_version=4)
        solved = answered(release(source), source)
        cells = [c.source for c in solved.cells[exercise_section_start(solved):exercise_section_end(solved)]
                 if c.cell_type == "code"]
        probe, stop = [], threading.Event()

        def probe_hub():
            while not stop.is_set():
                t = time.time()
                hub.api("GET", "/")
                probe.append(time.time() - t)
                stop.wait(0.5)

        prober = threading.Thread(target=probe_hub)
        prober.start()

        def work_through(n):
            p = people[n]
            p.assignments("fetch", AID)
            t = time.time()
            p.run("pass")   # the kernel starts
            times = [time.time() - t]
            for src in cells:
                t = time.time()
                p.run(src)
                times.append(time.time() - t)
            p.write_notebook(f"{AID}/{AID}.ipynb", solved)
            return times

        alone = work_through(students[0])   # the same section with nobody else working, for comparison
        first = people[students[0]]
        first.request("DELETE", f"/api/kernels/{first._kernel}")
        first._kernel = None
        print(f"  one student alone first: kernel start {alone[0]:.1f} s, section {sum(alone[1:]):.1f} s, slowest cell "
              f"{max(alone[1:]):.1f} s")
        t0 = time.time()
        ran = at_once(work_through, students)
        wall = time.time() - t0
        stop.set()
        prober.join()
        done = {n: r for n, r in ran.items() if not isinstance(r, Exception)}
        summary("a kernel's start (all at once)", [times[0] for times in done.values()])
        summary("a cell", [s for times in done.values() for s in times[1:]])
        summary("a student's section", [sum(times[1:]) for times in done.values()])
        print(f"  all {len(done)} sections: {wall:.1f} s wall ({len(cells)} code cells each); "
              f"errors: {[f'{n}: {str(e)[:200]}' for n, e in ran.items() if n not in done][:2]}")
        summary("hub API latency meanwhile", [1000 * s for s in probe], "ms")
        submitted = at_once(lambda n: people[n].assignments("submit", AID), students)
        teach.sh(f"cd {COURSE} && nbgrader collect {AID}")
        got = teach.sh(f"ls {COURSE}/course/submitted").split()
        print(f"  submitted at once: {sum(not isinstance(r, Exception) for r in submitted.values())}/{len(students)}; "
              f"collected: {len([g for g in got if g in students])}/{len(students)}")

        if not args.submissions:
            return 0
        print(f"\n3. autograding {args.submissions} submissions of {AID}")
        kinds = ["solution", "shortcut", "stub"]
        ids = [f"{'ab'[i % 2]}{i:02d}-{kinds[i % 3]}" for i in range(args.submissions)]
        notebooks = {"solution": solved, "stub": release(source), "shortcut": answered(release(source), source, shortcut=True)}
        teach.sh(" && ".join(f"mkdir -p {COURSE}/course/submitted/{sid}/{AID}" for sid in ids))
        for sid in ids:   # as an instructor unpacks submissions from elsewhere (INSTRUCTORS.md, Collect)
            teach.write_notebook(f"{COURSE}/course/submitted/{sid}/{AID}/{AID}.ipynb", notebooks[sid.split("-")[1]])
        gradebook = f"{COURSE}/course/gradebook.db"
        t = time.time()
        teach.sh(f"cd {COURSE} && nbgrader autograde {AID} --student='[ab]*' 2>&1 | tail -3", timeout=7200)
        one = time.time() - t
        print(f"  one process: {one:.0f} s in all, {one / len(ids):.1f} s a submission")
        t = time.time()
        teach.sh(f"cd {COURSE} && (nbgrader autograde {AID} --force --student='a*' > a.log 2>&1 & "
                 f"nbgrader autograde {AID} --force --student='b*' > b.log 2>&1; wait)", timeout=7200)
        two = time.time() - t
        errors = teach.sh(f"cd {COURSE} && grep -c -i -E 'database is locked|Traceback' a.log b.log || true")
        scores = json.loads(teach.run(
            "import json, os\nfrom nbgrader.api import Gradebook\n"
            f"with Gradebook('sqlite:///' + os.path.expanduser('~/{gradebook}')) as gb:\n"
            f"    print(json.dumps({{s: gb.find_submission({AID!r}, s).score for s in {ids!r}}}))\n").strip().splitlines()[-1])
        by_kind = {k: sorted({v for s, v in scores.items() if s.endswith(k)}) for k in kinds}
        print(f"  two processes side by side: {two:.0f} s in all ({one / two:.2f}x); errors in their logs: "
              f"{errors.split()}; scores by kind after both runs: {by_kind}")
    finally:
        if hub:
            hub.stop()
        if daemon:
            daemon.terminate()
        setup("remove", students, work / "exchange")
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
