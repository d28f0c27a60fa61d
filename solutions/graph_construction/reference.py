"""Reference solutions of notebook 1, "graph construction".

They are the answer cells (and the locked data cells) of the notebook's source,
course/notebooks/graph_construction.py, executed here by `reference_cells.load` (see NOTE [Notebook
sources] in course/build.py): each solution is written once. The imports below are the
ones the notebook's setup cell makes, so the cells find what they find in the notebook.
"""

import math  # noqa: F401 (the notebook's imports, in scope for every answer cell)
from collections import Counter, deque  # noqa: F401

import torch  # noqa: F401

import minitorch  # noqa: F401
from minitorch.autograd import Function  # noqa: F401
from solutions.reference_cells import load

load("graph_construction", globals())
