"""JupyterHub for a class on one machine: `jupyterhub -f classroom/jupyterhub_config.py`, run as root.

- People log in with their system accounts (PAM); members of the two Unix groups below may log in
  (``classroom/setup_class.py`` creates the groups and the accounts).
- Each person's server (JupyterLab) runs as that person, from the course's environment, in their home
  (``make hub-env`` builds the environment, world-readable, from a world-readable Python).
- nbgrader's exchange is one shared folder; the formgrader is switched on for the instructors only.
- The proxy is configurable-http-proxy from npm, installed by ``npm ci`` in this folder (``make hub-proxy``).

Every path and name can be changed by an environment variable (the defaults are for a real class;
``tests/hub`` sets them for its hub on 127.0.0.1). See classroom/README.md and INSTRUCTORS.md.
"""

import grp
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV = os.environ.get("COURSE_HUB_ENV", "/opt/attention-course/hub-env")
STATE = Path(os.environ.get("COURSE_HUB_STATE", "/srv/jupyterhub"))
EXCHANGE = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
INSTRUCTORS = os.environ.get("COURSE_HUB_INSTRUCTORS_GROUP", "course-instructors")
STUDENTS = os.environ.get("COURSE_HUB_STUDENTS_GROUP", "course-students")

c = get_config()  # noqa: F821 (provided by traitlets when it reads this file)

c.JupyterHub.bind_url = os.environ.get("COURSE_HUB_BIND_URL", "http://:8000")
STATE.mkdir(parents=True, exist_ok=True, mode=0o700)
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "jupyterhub-proxy.pid")

c.JupyterHub.authenticator_class = "pam"
c.PAMAuthenticator.allowed_groups = {INSTRUCTORS, STUDENTS}

# Each server: the course's environment (its JupyterLab, kernel, nbgrader and nbgitpuller), one PyTorch
# thread per kernel (many students share the cores: utils.training.set_cpu_threads), the exchange's path.
c.Spawner.cmd = [f"{ENV}/bin/jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.environment = {
    "PATH": f"{ENV}/bin:/usr/local/bin:/usr/bin:/bin",
    "COURSE_EXCHANGE": EXCHANGE,
    "COURSE_THREADS": "1",
}
c.Spawner.http_timeout = 120
c.Spawner.start_timeout = 180


def is_instructor(name: str) -> bool:
    try:
        group = grp.getgrnam(INSTRUCTORS)
    except KeyError:
        return False
    return name in group.gr_mem


def instructor_tools(spawner):
    """The formgrader and the course list for an instructor (switched off for everyone in the environment)."""
    if is_instructor(spawner.user.name):
        spawner.environment["JUPYTER_CONFIG_PATH"] = f"{ENV}/etc/jupyter/instructor"


c.Spawner.pre_spawn_hook = instructor_tools

# An API token for scripts (tests/hub, courseware/measure/bench_hub.py): only when COURSE_HUB_SERVICE_TOKEN is set.
if os.environ.get("COURSE_HUB_SERVICE_TOKEN"):
    c.JupyterHub.services = [{"name": "course-admin", "api_token": os.environ["COURSE_HUB_SERVICE_TOKEN"]}]
    c.JupyterHub.load_roles = [{
        "name": "course-admin",
        "services": ["course-admin"],
        "scopes": ["admin:users", "admin:servers", "tokens", "read:users", "access:servers"],
    }]
