"""Reference solutions of notebook 3, "dynamic models".

They are the answer cells (and the locked data cells) of the notebook's source,
course/notebooks/dynamic_models.py, executed here by `reference_cells.load` (see NOTE [Notebook
sources] in course/build.py): each solution is written once. The imports below are the
ones the notebook's setup cell makes, so the cells find what they find in the notebook.

In the answer cells `torch` is PyTorch and `nn` is `minitorch.nn`, so the students' models
are minitorch modules.
"""

import torch  # noqa: F401 (the notebook's imports, in scope for every answer cell)

import minitorch  # noqa: F401
from minitorch import nn  # noqa: F401
from minitorch.nn.utils.rnn import pack_padded_sequence  # noqa: F401
from solutions.reference_cells import load

# What loading Source's state_dict into a Target does (exercise 7).
OUTCOMES = ("same_output", "different_output", "missing_keys", "unexpected_keys", "size_mismatch")

load("dynamic_models", globals())
