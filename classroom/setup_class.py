"""The accounts and the exchange folder of a class hub on one machine (run as root; classroom/README.md).

    python3 classroom/setup_class.py add --instructor alice --students bob carol dave
    python3 classroom/setup_class.py remove --instructor alice --students bob carol dave

``add`` creates the two Unix groups the hub lets in (``course-instructors``, ``course-students``), each
account that does not exist yet (``useradd --create-home``), closes every home to other users (mode 0700:
Debian's ``useradd`` leaves them 0755, readable by every other student), and prepares nbgrader's
exchange: the root world-writable with the sticky bit (nbgrader's documented ``ugo+rw``, plus ``+t`` so
nobody removes what others put there) and the course's folder in it owned by the instructor, before any
student could create it. nbgrader then makes ``outbound/`` 0755, ``inbound/`` 2733 (students may write
their submission, not list the others') and ``feedback/`` 0711 (each student fetches only the file named
by their own submission's secret). ``remove`` deletes the accounts with their homes, and the groups.
"""

from __future__ import annotations

import argparse
import grp
import os
import pwd
import shutil
import subprocess
import sys
from pathlib import Path

COURSE_ID = "attention-course"


def run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)


def exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False


def add(instructors: list[str], students: list[str], exchange: Path, igroup: str, sgroup: str) -> None:
    for group in (igroup, sgroup):
        run("groupadd", "--force", group)
    for names, group in ((instructors, igroup), (students, sgroup)):
        for name in names:
            if not exists(name):
                run("useradd", "--create-home", "--shell", "/bin/bash", "--groups", group, name)
            else:
                run("usermod", "--append", "--groups", group, name)
            os.chmod(pwd.getpwnam(name).pw_dir, 0o700)
    exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(exchange, 0o1777)
    course = exchange / COURSE_ID
    course.mkdir(exist_ok=True)
    owner = pwd.getpwnam(instructors[0])
    os.chown(course, owner.pw_uid, owner.pw_gid)
    os.chmod(course, 0o755)


def remove(users: list[str], groups: list[str]) -> None:
    for name in users:
        if exists(name):
            subprocess.run(["pkill", "-KILL", "-u", name], check=False)
            home = pwd.getpwnam(name).pw_dir
            run("userdel", name)
            shutil.rmtree(home, ignore_errors=True)
    for group in groups:
        try:
            grp.getgrnam(group)
        except KeyError:
            continue
        run("groupdel", group)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Accounts and the nbgrader exchange of a class hub (as root).")
    ap.add_argument("action", choices=["add", "remove"])
    ap.add_argument("--instructor", nargs="+", required=True, help="the instructors' user names (the first owns the course's exchange folder)")
    ap.add_argument("--students", nargs="*", default=[], help="the students' user names")
    ap.add_argument("--exchange", type=Path, default=Path(os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")))
    ap.add_argument("--instructors-group", default=os.environ.get("COURSE_HUB_INSTRUCTORS_GROUP", "course-instructors"))
    ap.add_argument("--students-group", default=os.environ.get("COURSE_HUB_STUDENTS_GROUP", "course-students"))
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("setup_class: run as root (it creates accounts and groups)", file=sys.stderr)
        return 2
    if args.action == "add":
        add(args.instructor, args.students, args.exchange, args.instructors_group, args.students_group)
    else:
        remove(args.instructor + args.students, [args.instructors_group, args.students_group])
    return 0


if __name__ == "__main__":
    sys.exit(main())
