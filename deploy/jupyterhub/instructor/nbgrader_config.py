"""nbgrader configuration of the instructor on the hub: the course's own settings
(course/nbgrader_config.py of the repository) with the hub's course folder and exchange.

`python -m solutions hub` copies this file to <state>/home/instructor/course/ (read by
nbgrader commands run there) and <state>/config/instructor/ (read by the formgrader), with
the two paths filled in.

Late submissions: nbgrader takes the due date from the gradebook, set (or moved) in the
course folder with

    nbgrader db assignment add graph_construction --duedate="2026-12-01 17:00:00 UTC"

and compares it with the timestamp.txt that `submit` wrote into each submission. The course
config's autograde steps include nbgrader's AssignLatePenalties, which records in the gradebook
the penalty that LateSubmissionPlugin gives: here its built-in "zero" (a late notebook scores
0). The feedback page shows the penalty and the score after it, and `python -m solutions
export` writes raw_score, late_submission_penalty and score. Another policy is a plugin class
(nbgrader's documentation, "Late submission plugin"): `c.AssignLatePenalties.plugin_class`.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it reads this file)

REPOSITORY = "/opt/dyngraph"  # the repository (its solutions/ grade the hidden tests)
STATE = "/srv/dyngraph-hub"  # the hub's state folder (exchange/, home/)

load_subconfig(f"{REPOSITORY}/course/nbgrader_config.py")  # noqa: F821
c.CourseDirectory.root = f"{STATE}/home/instructor/course"
c.Exchange.root = f"{STATE}/exchange"
c.LateSubmissionPlugin.penalty_method = "zero"
