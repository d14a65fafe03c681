"""The instructor's nbgrader settings on the class hub (their JUPYTER_CONFIG_PATH, set by
classroom/jupyterhub_config.py): the course's own configuration, from the instructor's checkout of the
repository in ~/attention-course (COURSE_CHECKOUT names another folder under the home), so that the
formgrader finds the course directory."""

import os

c = get_config()  # noqa: F821
_course = os.path.join(os.path.expanduser("~"), os.environ.get("COURSE_CHECKOUT", "attention-course"), "nbgrader_config.py")
if os.path.isfile(_course):
    load_subconfig(_course)  # noqa: F821
