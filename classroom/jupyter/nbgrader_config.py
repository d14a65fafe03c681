"""nbgrader settings for every user of the class hub (copied into the course environment's etc/jupyter/ by
`make hub-env` and by the Dockerfile): the course and the shared exchange folder."""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it reads this file)

c.CourseDirectory.course_id = "attention-course"
c.Exchange.root = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")
