"""nbgrader configuration of the course (read by every nbgrader command run in this folder).

Instructors only: this folder sits next to `solutions/`, the graders that the hidden test cells
call. Students never have this file or `solutions/`.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

COURSE_ROOT = Path(__file__).resolve().parent
REPO_ROOT = COURSE_ROOT.parent

# Hidden test cells run `from solutions.<assignment> import grade`. Kernels started by nbgrader
# inherit this process's environment, so putting the repository root on PYTHONPATH here lets them
# import the graders; sys.path lets nbgrader itself load our preprocessor below.
_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
if str(REPO_ROOT) not in _paths:
    os.environ["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT), *_paths])
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

c.CourseDirectory.course_id = "dyngraph"
c.CourseDirectory.root = str(COURSE_ROOT)
# The exchange (release_assignment / fetch / submit / collect) lives inside the course folder,
# so nbgrader never tries the unwritable default /usr/local/share/nbgrader/exchange.
c.Exchange.root = str(COURSE_ROOT / "exchange")

# Validation kernels (`validate`, the student's Validate button): the python3 kernel, 30 s per
# cell (every cell of the course takes a few seconds).
c.Execute.kernel_name = "python3"
c.Execute.timeout = 30
c.Execute.interrupt_on_timeout = True
c.Execute.extra_arguments = [
    "--HistoryManager.hist_file=:memory:",
    "--IPKernelApp.log_level=ERROR",
    # Plain tracebacks show only the failing line, not the lines around it: with the default
    # context a failing visible assert would print the hidden test lines below it in feedback.
    "--InteractiveShell.xmode=Plain",
]

# Grading: each submission runs in a sandbox (solutions/instructor/sandbox.py) with one budget
# for the whole notebook, 30 s per cell, and a memory cap for its whole process tree.
c.SandboxedAutograde.wall_seconds = 300
c.SandboxedAutograde.cell_seconds = 30
c.SandboxedAutograde.memory_bytes = 3 * 2**30

# A deleted grade cell is restored from the gradebook and graded (not "needs manual grading").
c.OverwriteCells.add_missing_cells = True

# Autograde: after nbgrader restores the test cells, neutralise student cells that use the
# graders or reference solutions (they would otherwise get credit by calling the reference).
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "solutions.instructor.integrity.BlockGraderAccess",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Autograde: the notebook runs in the sandbox and the hidden tests' verdicts are decided in this
# process (solutions/instructor/verdicts.py): a cell that kills the kernel is skipped and the
# rest graded, and a warning on stderr never costs points.
c.Autograde.autograde_preprocessors = [
    "solutions.instructor.verdicts.SandboxedAutograde",
    # Outputs and markdown a student made become inert data (NOTE [Student HTML] in
    # solutions/instructor/html_safety.py): no page made from the notebook runs any of it.
    "solutions.instructor.html_safety.NeutralizeStudentHTML",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Every page nbconvert renders with this configuration (the feedback, the formgrader's page of a
# submission) makes what a student made inert again: notebooks autograded before it are safe too.
c.HTMLExporter.preprocessors = ["solutions.instructor.html_safety.NeutralizeStudentHTML"]

# Feedback never shows hidden tests: their source is removed. Hidden tests are one-line calls
# into solutions/, whose failures raise a clean AssertionError; HideGraderFrames drops the
# grader's own frame (its path and raising line) from those tracebacks.
c.GenerateFeedback.exporter_class = "solutions.instructor.feedback.FeedbackHTMLExporter"
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbgrader.preprocessors.ClearHiddenTests",
    "solutions.instructor.feedback.HideGraderFrames",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# LMS downloads for `nbgrader zip_collect`: files named <student_id>_<notebook>.ipynb
# (e.g. `alice_graph_construction.ipynb`), anywhere inside the archive.
c.ZipCollectApp.force = True
c.FileNameCollectorPlugin.named_regexp = r".*/(?P<student_id>[A-Za-z0-9.-]+)_(?P<file_id>[^/]+)$"
