"""A class on a JupyterHub, end to end, with real accounts (`make test-hub`, as root; pytest marker `hub`).

The test adds an instructor and three students as system accounts (classroom/setup_class.py), starts
JupyterHub with classroom/jupyterhub_config.py on 127.0.0.1 (its proxy from classroom/node_modules) and a
git daemon serving this checkout's HEAD as the course's repository, and then each person works only
through the hub and their own server (tests/hub/hubclient.py), as they would in JupyterLab:

1. each student opens the nbgitpuller link to notebook 04 (courseware/editions/hub_link.py): it is cloned into their
   home; one edits it, the course changes upstream (also in the cell she edited), she pulls again and keeps
   her edit while the rest of the change arrives;
2. the instructor clones the repository into their home, builds the course (courseware/editions/nbgrader_course.py)
   and releases assignment 04 through the exchange; each student fetches it (the Assignments tab's REST
   calls); one submits the model answers, one the stub, one the answers with Exercise 4 done by the
   library's attention (a shortcut the hidden tests catch);
3. the instructor collects, autogrades (full marks, 0, partial), generates and releases feedback; each
   student fetches their own;
4. isolation, tried as each student: no other student's home, submission or feedback, nor the
   instructor's course (source notebooks with hidden tests, gradebook), nor the formgrader; and the
   same checks do see a leak once the exchange's permissions are loosened (COURSE_HUB_LOOSEN=1 runs the
   isolation test itself on loosened permissions, to watch it fail).

Everything is removed afterwards (accounts, homes, groups, the hub's folder) but the hub's log, copied to
build/hub-test/jupyterhub.log. Step times are printed.
"""

from __future__ import annotations

import copy
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(HERE), str(ROOT / "tests"), str(ROOT / "tests" / "courseware" / "grading"), str(ROOT / "classroom")]
import setup_class as setup_accounts  # noqa: E402  (the script an instructor runs; its `exists` is reused)
from hubclient import ClassHub, Person, free_port  # noqa: E402
from test_nbgrader_roundtrip import SHORTCUTS, grade_id, submission  # noqa: E402

pytestmark = pytest.mark.hub

AID = "04_scaled_dot_product_attention"
COURSE = "attention-course"
INSTRUCTOR = "hubt-teach"
SOLUTION, STUB, SHORTCUT = STUDENTS = ["hubt-ann", "hubt-bob", "hubt-cat"]
GROUPS = ["hubt-instructors", "hubt-students"]
TIMES: dict[str, float] = {}


class step:
    """Times a step of the round trip into TIMES (printed at the end)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.t = time.time()

    def __exit__(self, *exc):
        TIMES[self.name] = time.time() - self.t


def setup_class(action: str, exchange: Path) -> None:
    subprocess.run([sys.executable, str(ROOT / "classroom" / "setup_class.py"), action, "--instructor", INSTRUCTOR,
                    "--students", *STUDENTS, "--exchange", str(exchange), "--instructors-group", GROUPS[0],
                    "--students-group", GROUPS[1]], check=True)


def in_parallel(fn, items):
    errors, threads = [], []

    def wrap(x):
        try:
            fn(x)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    for x in items:
        threads.append(threading.Thread(target=wrap, args=(x,)))
        threads[-1].start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@pytest.fixture(scope="module")
def klass():
    if os.geteuid() != 0:
        pytest.skip("make test-hub needs root: it adds and removes system accounts and runs JupyterHub, which "
                    "starts each user's server as that user (CI runs as root)")
    env = Path(os.environ.get("COURSE_HUB_ENV", "/opt/attention-course/hub-env"))
    if not (env / ".installed").exists():
        pytest.fail(f"no users' environment in {env}: run `make hub-env` (or set COURSE_HUB_ENV)")
    if not (ROOT / "classroom" / "node_modules" / ".bin" / "configurable-http-proxy").exists():
        pytest.fail("no configurable-http-proxy in classroom/node_modules: run `make hub-proxy`")
    taken = [n for n in [INSTRUCTOR, *STUDENTS] if setup_accounts.exists(n)]
    if taken:
        pytest.fail(f"accounts {taken} exist already: remove them (classroom/setup_class.py remove) or run elsewhere")
    work = Path(tempfile.mkdtemp(prefix="course-hub-"))
    os.chmod(work, 0o755)
    hub = daemon = None
    try:
        with step("accounts and exchange (setup_class.py add)"):
            setup_class("add", work / "exchange")
        passwords = {n: secrets.token_urlsafe(12) for n in [INSTRUCTOR, *STUDENTS]}
        subprocess.run(["chpasswd"], input="".join(f"{n}:{p}\n" for n, p in passwords.items()), text=True, check=True)
        repo, daemon = serve_repository(work)
        hub = ClassHub(env, work, *GROUPS)
        with step("hub and proxy up"):
            hub.start()
        people = {n: Person(hub, n, passwords[n]) for n in [INSTRUCTOR, *STUDENTS]}
        with step("4 people log in (PAM) and start their servers, at once"):
            in_parallel(lambda p: (p.login(), p.start()), people.values())
        yield SimpleNamespace(hub=hub, people=people, work=work, repo=repo, exchange=work / "exchange" / COURSE)
    finally:
        if hub:
            hub.stop()
            keep = ROOT / "build" / "hub-test"   # the hub's log (its servers' too), kept for a failure's reader
            keep.mkdir(parents=True, exist_ok=True)
            shutil.copy(hub.log, keep / "jupyterhub.log")
            print(f"\nthe hub's log: {keep / 'jupyterhub.log'}")
        if daemon:
            daemon.terminate()
            daemon.wait()
        setup_class("remove", work / "exchange")
        shutil.rmtree(work, ignore_errors=True)
        print("\nclass hub round trip, step times:")
        for name, s in TIMES.items():
            print(f"  {s:7.1f} s  {name}")



def serve_repository(work: Path):
    """This checkout's HEAD as branch main of a bare repository, served read-only by `git daemon` on
    127.0.0.1 (as GitHub serves the real one; a local path would be refused to the students, who do not
    own it: git's safe.directory)."""
    bare = work / "git" / COURSE
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "-C", str(ROOT), "push", "--quiet", str(bare), "HEAD:refs/heads/main"], check=True)
    port = free_port()
    daemon = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--listen=127.0.0.1", f"--port={port}",
                               f"--base-path={work / 'git'}", str(work / "git")], stderr=subprocess.DEVNULL)
    url = f"git://127.0.0.1:{port}/{COURSE}"
    for _ in range(50):
        if subprocess.run(["git", "ls-remote", url], capture_output=True).returncode == 0:
            return SimpleNamespace(url=url, bare=bare), daemon
        time.sleep(0.2)
    raise RuntimeError("git daemon did not start")


def hub_link(klass, notebook: str) -> str:
    env = {**os.environ, "COURSE_HUB_URL": klass.hub.url, "COURSE_REPO_URL": klass.repo.url, "COURSE_REPO_BRANCH": "main"}
    return subprocess.run([sys.executable, str(ROOT / "courseware" / "editions" / "hub_link.py"), notebook], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def upstream_change(klass, edit) -> None:
    """The course changes: a commit to the repository (as its maintainers would push one)."""
    clone = klass.work / "maintainer"
    subprocess.run(["git", "clone", "--quiet", str(klass.repo.bare), str(clone)], check=True)
    path = clone / "notebooks" / f"{AID}.ipynb"
    nb = nbformat.read(path, as_version=4)
    edit(nb)
    nbformat.write(nb, path)
    (clone / "notebooks" / "HUB_NEWS.md").write_text("Notebook 04's introduction has a new line.\n")
    git = ["git", "-C", str(clone), "-c", "user.name=course", "-c", "user.email=course@example.org"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "--quiet", "-m", "upstream change"], check=True)
    subprocess.run([*git, "push", "--quiet", "origin", "main"], check=True)
    shutil.rmtree(clone)


def answered(released, source, shortcut=False):
    """The released notebook with the model answers in (Exercise 4 done with the library's attention, a
    shortcut its hidden tests catch, if `shortcut`)."""
    nb = submission(released, source)
    for c in nb.cells:
        if shortcut and grade_id(c) == "ex4":
            c.source = SHORTCUTS["04"]["ex4"]
    return nb


def cell(nb, gid):
    return next(c for c in nb["cells"] if grade_id(nbformat.from_dict(c)) == gid)


@pytest.fixture(scope="module")
def pulled(klass):
    """Step 1: nbgitpuller, twice."""
    people = klass.people
    link = hub_link(klass, "04")
    path = f"{COURSE}/notebooks/{AID}.ipynb"
    with step("3 students open the nbgitpuller link (clone), at once"):
        in_parallel(lambda n: people[n].pull(link), STUDENTS)
    first = {n: people[n].read_notebook(path) for n in STUDENTS}
    ann = people[SOLUTION]
    mine = copy.deepcopy(first[SOLUTION])
    cell(mine, "ex1")["source"] = "# my own attempt\ndef attention(q, k, v, mask=None):\n    return None\n"
    ann.write_notebook(path, mine)

    def edit(nb):
        nb.cells[0].source += "\n\nUpdated by the course's maintainers."
        c = next(c for c in nb.cells if grade_id(c) == "ex1")
        c.source = "# changed upstream too\n" + c.source

    upstream_change(klass, edit)
    with step("a student pulls again after an upstream change"):
        ann.pull(link)
    return SimpleNamespace(link=link, first=first, after=ann.read_notebook(path), listing=ann.listdir(f"{COURSE}/notebooks"))


@pytest.fixture(scope="module")
def graded(klass, pulled):
    """Steps 2 and 3: release, fetch, submit, collect, autograde, feedback."""
    teach = klass.people[INSTRUCTOR]
    students = {n: klass.people[n] for n in STUDENTS}
    with step("instructor: clone the repository, build the course (04)"):
        teach.sh(f"git clone --quiet {klass.repo.url} {COURSE}")
        teach.sh(f"cd {COURSE} && python -m courseware course course --notebooks 04")
    with step("instructor: nbgrader release_assignment"):
        teach.sh(f"cd {COURSE} && nbgrader release_assignment {AID}")
    with step("3 students fetch it (Assignments tab), at once"):
        in_parallel(lambda p: p.assignments("fetch", AID), students.values())
    nb_path = f"{AID}/{AID}.ipynb"
    fetched = {n: p.read_notebook(nb_path) for n, p in students.items()}
    source = nbformat.read(ROOT / "notebooks" / f"{AID}.ipynb", as_version=4)
    released = nbformat.from_dict(fetched[SOLUTION])
    answers = {SOLUTION: answered(released, source), STUB: None, SHORTCUT: answered(released, source, shortcut=True)}
    with step("3 students submit, at once"):
        for n, nb in answers.items():
            if nb is not None:
                students[n].write_notebook(nb_path, nb)
        in_parallel(lambda p: p.assignments("submit", AID), students.values())
    with step("instructor: nbgrader collect"):
        teach.sh(f"cd {COURSE} && nbgrader collect {AID}")
    with step("instructor: nbgrader autograde (3 submissions)"):
        teach.sh(f"cd {COURSE} && nbgrader autograde {AID}", timeout=900)
    scores = teach.run(
        "import json, os\nfrom nbgrader.api import Gradebook\n"
        f"with Gradebook('sqlite:///' + os.path.expanduser('~/{COURSE}/course/gradebook.db')) as gb:\n"
        f"    print(json.dumps({{s: {{g.name: [g.auto_score, g.max_score, g.cell_type] for g in "
        f"gb.find_submission_notebook({AID!r}, {AID!r}, s).grades}} for s in {STUDENTS!r}}}))\n")
    with step("instructor: generate_feedback + release_feedback"):
        teach.sh(f"cd {COURSE} && nbgrader generate_feedback {AID} && nbgrader release_feedback {AID}")
    with step("instructor: nbgrader export"):
        teach.sh(f"cd {COURSE} && nbgrader export --to grades.csv")
        export = teach.run("import csv, json, os\n"
                           f"rows = csv.DictReader(open(os.path.expanduser('~/{COURSE}/grades.csv')))\n"
                           "print(json.dumps({r['student_id']: [r['raw_score'], r['points_waiting']] for r in rows}))\n")
    with step("3 students fetch their feedback, at once"):
        in_parallel(lambda p: p.assignments("fetch_feedback", AID), students.values())
    feedback = {}
    for n, p in students.items():
        [stamp] = p.listdir(f"{AID}/feedback")
        feedback[n] = p.read_text(f"{AID}/feedback/{stamp}/{AID}.html")
    import json
    return SimpleNamespace(fetched=fetched, scores=json.loads(scores.strip().splitlines()[-1]), feedback=feedback,
                           export=json.loads(export.strip().splitlines()[-1]),
                           listing={n: p.assignments() for n, p in students.items()})


def test_the_link_puts_notebook_04_into_every_students_home(klass, pulled):
    assert pulled.link.startswith(f"{klass.hub.url}/hub/user-redirect/git-pull?repo=git%3A//127.0.0.1%3A")
    repo_nb = nbformat.read(ROOT / "notebooks" / f"{AID}.ipynb", as_version=4)
    for n in STUDENTS:
        assert [c["source"] for c in pulled.first[n]["cells"]] == [c.source for c in repo_nb.cells], n


def test_pulling_again_keeps_the_students_edit_and_brings_the_rest(pulled):
    after = pulled.after
    assert cell(after, "ex1")["source"].startswith("# my own attempt"), "the student's edit was lost"
    assert "# changed upstream too" not in cell(after, "ex1")["source"], "on a conflict the student's side wins (-Xours)"
    assert after["cells"][0]["source"].endswith("Updated by the course's maintainers."), "the upstream change did not arrive"
    assert "HUB_NEWS.md" in pulled.listing, "a file added upstream did not arrive"


def test_every_student_fetched_the_release(graded):
    for n, nb in graded.fetched.items():
        text = nbformat.writes(nbformat.from_dict(nb))
        assert "### BEGIN SOLUTION" not in text and "### BEGIN HIDDEN TESTS" not in text, n
        assert any(c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex4_check3" for c in nb["cells"]), n


def test_every_submission_is_listed_as_submitted(graded):
    for n, listing in graded.listing.items():
        assert any(a["assignment_id"] == AID and a["status"] == "submitted" for a in listing), (n, listing)


def test_autograde_gives_full_marks_zero_and_partial(graded):
    auto = {s: {g: v for g, v in cells.items() if v[2] == "code"} for s, cells in graded.scores.items()}
    total = {s: sum(v[0] for v in cells.values()) for s, cells in auto.items()}
    top = sum(v[1] for v in auto[SOLUTION].values())
    assert top == 19 and total[SOLUTION] == top, auto[SOLUTION]
    assert total[STUB] == 0, auto[STUB]
    ex4 = [g for g in auto[SHORTCUT] if g.startswith("ex4_check")]
    assert ex4 and all(auto[SHORTCUT][g][0] == 0 for g in ex4), auto[SHORTCUT]
    assert total[SHORTCUT] == top - sum(auto[SHORTCUT][g][1] for g in ex4) == 11, auto[SHORTCUT]
    print(f"\nautograde on the hub: {SOLUTION} {total[SOLUTION]}/{top}, {STUB} {total[STUB]}/{top}, "
          f"{SHORTCUT} {total[SHORTCUT]}/{top} (Exercise 4 by the library: 0 on {', '.join(ex4)})")


def test_autograde_on_the_hub_runs_in_the_sandbox(klass, graded):
    """The instructor's autograde above ran the students' kernels in courseware.grading.sandbox's bubblewrap sandbox: it is
    not switched off there, and one can be made as the instructor (a user namespace, not root). Autograde
    scores nothing where it cannot make one, and the model answers scored full marks."""
    out = klass.people[INSTRUCTOR].run("import os\nfrom courseware.grading.sandbox import SANDBOX_ENV, probe\n"
                                       "print(repr(os.environ.get(SANDBOX_ENV)), repr(probe()))\n")
    assert out.strip().splitlines()[-1] == "None None", out


def test_each_student_fetched_their_own_feedback(graded):
    """The feedback's total counts no point that waits for a person: notebook 04's Exercises 1 and 4 are rules
    the call watch alone settles (courseware.grading.registry.review), so their check cells that scored (13 of the
    model answer's 19 automatic points, 5 of the shortcut's 11: its Exercise 4 scored 0) are marked "needs manual
    grade" and count 0 until the instructor confirms them in the formgrader (ReviewRules)."""
    expected = {SOLUTION: "6.0", STUB: "0.0", SHORTCUT: "6.0"}
    for n, html in graded.feedback.items():
        assert f"{expected[n]} / 21.0" in html, (n, [line for line in html.splitlines() if " / 21.0" in line][:3])


def test_the_export_counts_no_waiting_point_and_says_how_many_wait(graded):
    """`nbgrader export` with the course's nbgrader_config.py (WaitingCsvExport): score without the points that
    wait for a person, and a points_waiting column with them."""
    got = {n: tuple(float(x) for x in graded.export[n]) for n in STUDENTS}
    assert got == {SOLUTION: (6.0, 13.0), STUB: (0.0, 0.0), SHORTCUT: (6.0, 5.0)}, got


def test_the_formgrader_is_the_instructors_only(klass, graded):
    teach = klass.people[INSTRUCTOR]
    assignments = teach.request("GET", "/formgrader/api/assignments").json()
    assert any(a["name"] == AID for a in assignments), assignments
    for n in STUDENTS:
        assert klass.people[n].request("GET", "/formgrader/api/assignments", ok=False).status_code == 404, n


def test_a_student_cannot_use_another_persons_server(klass, graded):
    import requests

    bob, ann = klass.people[STUB], klass.people[SOLUTION]
    r = requests.get(f"{ann.base}/api/contents", headers=bob.headers, allow_redirects=False, timeout=60)
    assert r.status_code == 403, (r.status_code, r.text[:200])
    assert bob.hub_request("GET", "/users").status_code == 403


def private_paths(klass, student: str) -> list[str]:
    """What `student` must not read: the other students' homes, work and feedback; the exchange's inbound
    (everyone's submissions) and feedback folders; the instructor's checkout and course."""
    others = [n for n in STUDENTS if n != student]
    homes = {n: pwd.getpwnam(n).pw_dir for n in [INSTRUCTOR, *STUDENTS]}
    course = f"{homes[INSTRUCTOR]}/{COURSE}/course"
    paths = [f"{klass.exchange}/inbound", f"{klass.exchange}/feedback", homes[INSTRUCTOR], f"{homes[INSTRUCTOR]}/{COURSE}",
             f"{course}/source/{AID}/{AID}.ipynb", f"{course}/gradebook.db", f"{course}/submitted",
             f"{homes[INSTRUCTOR]}/.local/share/jupyter/nbgrader_cache"]
    for o in others:
        paths += [homes[o], f"{homes[o]}/{AID}/{AID}.ipynb", f"{homes[o]}/{AID}/feedback",
                  f"{course}/autograded/{o}/{AID}/{AID}.ipynb", f"{course}/feedback/{o}/{AID}/{AID}.html"]
    return paths


def own_paths(klass, student: str) -> list[str]:
    home = pwd.getpwnam(student).pw_dir
    return [home, f"{home}/{AID}/{AID}.ipynb", f"{home}/{AID}/feedback", f"{klass.exchange}/outbound/{AID}/{AID}.ipynb"]


def leaks(klass, student: str) -> list[str]:
    seen = klass.people[student].can_read(private_paths(klass, student) + own_paths(klass, student))
    assert all(seen[p] for p in own_paths(klass, student)), f"{student} cannot read their own work: {seen}"
    return [p for p in private_paths(klass, student) if seen[p]]


def loosen(klass):
    """The exchange as a careless set-up leaves it: inbound and feedback listable by everyone."""
    os.chmod(klass.exchange / "inbound", 0o2777)
    os.chmod(klass.exchange / "feedback", 0o777)


def tighten(klass):
    os.chmod(klass.exchange / "inbound", 0o2733)   # what nbgrader sets
    os.chmod(klass.exchange / "feedback", 0o711)


def test_no_student_reads_anothers_work_or_the_course(klass, graded):
    if os.environ.get("COURSE_HUB_LOOSEN") == "1":
        loosen(klass)
    try:
        found = {s: leaks(klass, s) for s in STUDENTS}
    finally:
        tighten(klass)
    assert not any(found.values()), f"readable by another student: {found}"
    bob = klass.people[STUB]
    code = ("import os\ntry:\n    open(os.path.join({!r}, 'x'), 'w')\n    print('wrote')\nexcept OSError:\n    print('refused')\n")
    for folder in (klass.exchange, klass.exchange / "outbound" / AID):
        assert bob.run(code.format(str(folder))).strip() == "refused", f"a student could write into {folder}"


def test_submissions_and_feedback_in_the_exchange_have_unguessable_names(klass, graded):
    """nbgrader's design: a student cannot list inbound/ or feedback/, and what is in them is named by
    secrets (a submission: student+assignment+time+9 random bytes; feedback: the MD5 of a 64-byte secret
    kept in the student's own nbgrader cache). The files themselves are world-readable (nbgrader makes a
    submission 0644), so the names are what keeps them private."""
    names = [p.name for p in (klass.exchange / "inbound").iterdir()]
    assert len(names) == len(STUDENTS) and all(len(n.split("+")) == 4 and len(n.split("+")[3]) == 12 for n in names), names
    feedback = [p.name for p in (klass.exchange / "feedback").iterdir()]
    assert len(feedback) == len(STUDENTS) and all(len(n) == len("0" * 32 + ".html") for n in feedback), feedback


def test_the_isolation_check_sees_a_loosened_exchange(klass, graded):
    """The negative control: with inbound/ and feedback/ readable by all, the same check finds both
    folders, and listing inbound/ hands a student everyone's submission."""
    loosen(klass)
    try:
        found = leaks(klass, STUB)
        read = klass.people[STUB].run(
            "import os\n"
            f"_in = {str(klass.exchange / 'inbound')!r}\n"
            f"print(sum(open(os.path.join(_in, d, {AID + '.ipynb'!r})).read().count('cells') > 0 for d in os.listdir(_in)"
            f" if not d.startswith({STUB + '+'!r})))\n")
    finally:
        tighten(klass)
    print(f"\nwith the exchange loosened (inbound 2777, feedback 0777), {STUB} lists {found} and reads "
          f"{read.strip()} other students' submissions")
    assert f"{klass.exchange}/inbound" in found and f"{klass.exchange}/feedback" in found
    assert read.strip() == str(len(STUDENTS) - 1)
