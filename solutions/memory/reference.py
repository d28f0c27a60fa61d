"""Reference solutions of notebook 4, "memory".

They are the answer cells (and the locked data cells) of the notebook's source,
course/notebooks/memory.py, executed here by `reference_cells.load` (see NOTE [Notebook
sources] in course/build.py): each solution is written once. The imports below are the
ones the notebook's setup cell makes, so the cells find what they find in the notebook.
"""

import contextlib  # noqa: F401 (the notebook's imports, in scope for every answer cell)
import gc  # noqa: F401
import math  # noqa: F401
import weakref  # noqa: F401

import torch  # noqa: F401

import minitorch  # noqa: F401
from minitorch import nn  # noqa: F401
from minitorch.autograd.graph import saved_tensors, saved_tensors_hooks  # noqa: F401
from minitorch.memory import track  # noqa: F401
from minitorch.utils.checkpoint import checkpoint_sequential  # noqa: F401
from solutions.reference_cells import load

ACCUMULATE_GRAD = "torch::autograd::AccumulateGrad"

load("memory", globals())
