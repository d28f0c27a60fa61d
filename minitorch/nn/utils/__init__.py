"""Helpers for training: gradient clipping (and, from nn.utils.rnn, sequence packing)."""

from minitorch.nn.utils import rnn
from minitorch.nn.utils.clip_grad import clip_grad_norm_
