"""The former name of `minitorch.datasets`, kept so that existing code and notebooks
(`from minitorch.data import make_spirals`, `minitorch.data.load_digits()`) keep working.

It re-exports the same objects: `minitorch.data.ExprTree is minitorch.datasets.ExprTree`.
New code imports `minitorch.datasets`.
"""

from minitorch.datasets import *  # noqa: F403
from minitorch.datasets import __all__  # noqa: F401
