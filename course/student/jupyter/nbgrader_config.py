"""nbgrader's settings for students: what the Validate button uses.

open_course.py points JupyterLab at this folder (JUPYTER_CONFIG_DIR), so nbgrader reads this
file wherever the notebooks are. The Assignments tab (fetch and submit through an nbgrader
exchange folder) is off in this package: you submit with `open_course.py --submit` and upload
the file it writes.
"""

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

c.CourseDirectory.course_id = "dyngraph"

# Validate runs the notebook in a fresh python3 kernel, at most 30 s per cell, as grading does.
c.Execute.kernel_name = "python3"
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
