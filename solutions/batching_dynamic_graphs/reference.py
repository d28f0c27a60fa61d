"""Reference solutions of notebook 6, "batching dynamic graphs".

They are the answer cells (and the locked cells: the tree model, the graph types, the scenarios
of exercise 7) of the notebook's source, course/notebooks/batching_dynamic_graphs.py, executed
here by `reference_cells.load` (see NOTE [Notebook sources] in course/build.py). The imports
below are the ones the notebook's setup cell makes.
"""

import random  # noqa: F401 (the notebook's imports, in scope for every answer cell)
import time  # noqa: F401
from dataclasses import dataclass  # noqa: F401

import torch  # noqa: F401

import minitorch  # noqa: F401
import minitorch.nn.functional as F  # noqa: F401
from minitorch import nn  # noqa: F401
from minitorch.datasets import ExprTree, make_expression_trees  # noqa: F401
from solutions.reference_cells import load

load("batching_dynamic_graphs", globals())
