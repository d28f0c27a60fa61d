"""Learning-rate schedules: `StepLR` (decay by `gamma` every `step_size` epochs)."""

from __future__ import annotations

from typing import Any

from minitorch.optim.optimizer import Optimizer


class StepLR:
    """`torch.optim.lr_scheduler.StepLR`: call `scheduler.step()` once per epoch, after the
    optimizer's steps; every `step_size` epochs each group's `lr` is multiplied by `gamma`.

    Like PyTorch, creating the scheduler records each group's `initial_lr`, and the schedule is
    applied by multiplying the current `lr` (so manual changes to `lr` carry on).
    """

    def __init__(
        self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        self.step_size = step_size
        self.gamma = gamma
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(
                    f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                    "scheduler with last_epoch >= 0."
                )
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def get_lr(self) -> list[float]:
        """The learning rates for the epoch `last_epoch` (computed from the current ones)."""
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return [group["lr"] for group in self.optimizer.param_groups]
        return [group["lr"] * self.gamma for group in self.optimizer.param_groups]

    def step(self) -> None:
        """Advance one epoch and set each group's `lr`."""
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The learning rates set by the latest `step()`."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.__dict__.update(state_dict)
