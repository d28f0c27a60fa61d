"""nbgrader configuration of the instructor on the hub: the course's own settings
(course/nbgrader_config.py of the repository) with the hub's course folder and exchange.

`python -m solutions hub` copies this file to <state>/home/instructor/course/ (read by
nbgrader commands run there) and <state>/config/instructor/ (read by the formgrader), with
the two paths filled in.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it reads this file)

REPOSITORY = "/opt/dyngraph"  # the repository (its solutions/ grade the hidden tests)
STATE = "/srv/dyngraph-hub"  # the hub's state folder (exchange/, home/)

load_subconfig(f"{REPOSITORY}/course/nbgrader_config.py")  # noqa: F821
c.CourseDirectory.root = f"{STATE}/home/instructor/course"
c.Exchange.root = f"{STATE}/exchange"
