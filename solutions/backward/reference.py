"""Reference solutions of notebook 2, "backward".

They are the answer cells (and the locked data cells) of the notebook's source,
course/notebooks/backward.py, executed here by `reference_cells.load` (see NOTE [Notebook
sources] in course/build.py): each solution is written once. The imports below are the
ones the notebook's setup cell makes, so the cells find what they find in the notebook.
"""

import math  # noqa: F401 (the notebook's imports, in scope for every answer cell)
from collections import deque  # noqa: F401

import torch  # noqa: F401

import minitorch  # noqa: F401
from solutions.reference_cells import load

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"

# Why a second backward raises or works (exercise 9).
REASONS = ("freed", "retain_graph", "nothing_saved", "fresh_graph")

load("backward", globals())
