"""minitorch.utils: `utils.data` (datasets, loaders) and `utils.checkpoint` (recompute in backward).

Both load on first use: `minitorch.utils.data.DataLoader` works after `import minitorch as torch`.
"""

_SUBMODULES = ("data", "checkpoint")


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"minitorch.utils.{name}")
    raise AttributeError(f"module 'minitorch.utils' has no attribute '{name}'")
