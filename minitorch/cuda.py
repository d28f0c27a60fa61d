"""What minitorch knows about CUDA: it delegates to torch, whose tensors are its storage."""

from __future__ import annotations

import torch


def is_available() -> bool:
    return torch.cuda.is_available()


def device_count() -> int:
    return torch.cuda.device_count()


def synchronize() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def manual_seed(seed: int) -> None:
    torch.cuda.manual_seed_all(seed)
