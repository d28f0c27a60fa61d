"""nbgrader's settings when JupyterLab (its formgrader) or an nbgrader command starts here, in
the repository root: they are the course's own, course/nbgrader_config.py (course root course/).
"""

load_subconfig("course/nbgrader_config.py")  # noqa: F821 (provided by nbgrader)
