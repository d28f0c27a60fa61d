"""minitorch.optim: optimizers that update parameters from their `.grad`, as torch.optim does.

optimizer = minitorch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
optimizer.zero_grad(); loss.backward(); optimizer.step()
"""

from minitorch.optim import lr_scheduler
from minitorch.optim.adam import Adam, AdamW
from minitorch.optim.lbfgs import LBFGS
from minitorch.optim.optimizer import Optimizer
from minitorch.optim.rmsprop import RMSprop
from minitorch.optim.sgd import SGD

__all__ = ["LBFGS", "SGD", "Adam", "AdamW", "RMSprop", "Optimizer", "lr_scheduler"]
