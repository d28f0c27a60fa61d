"""Reference solutions of notebook 5, "static vs dynamic".

They are the answer cells (and the locked cells: the trace's data types, `GuardFailed`, the
snippets of exercise 8) of the notebook's source, course/notebooks/static_vs_dynamic.py,
executed here by `reference_cells.load` (see NOTE [Notebook sources] in course/build.py). The
imports below are the ones the notebook's setup cell makes.
"""

import operator  # noqa: F401 (the notebook's imports, in scope for every answer cell)
import time  # noqa: F401
import warnings  # noqa: F401
from dataclasses import dataclass, field  # noqa: F401

import torch  # noqa: F401

import minitorch  # noqa: F401
from minitorch.autograd.watch import forward_with_ctx, watch_ops  # noqa: F401
from solutions.reference_cells import load

load("static_vs_dynamic", globals())
