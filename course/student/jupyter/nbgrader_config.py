"""nbgrader's settings for students: what the Validate button and the Assignments tab use.

open_course.py points JupyterLab at this folder (JUPYTER_CONFIG_DIR), so nbgrader reads this
file wherever the notebooks are.
"""

from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

c.CourseDirectory.course_id = "dyngraph"
# The Assignments tab fetches from and submits to this folder. If your course uses a shared
# nbgrader exchange, your instructor tells you its folder: put it here instead.
c.Exchange.root = str(Path(__file__).resolve().parent.parent / "exchange")

# Validate runs the notebook in a fresh python3 kernel, at most 30 s per cell, as grading does.
c.Execute.kernel_name = "python3"
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
