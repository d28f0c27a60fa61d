"""minitorch.nn: modules, layers, losses and their functional forms, named like `torch.nn`."""

from minitorch.nn import functional, init, utils
from minitorch.nn.activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from minitorch.nn.containers import ModuleDict, ModuleList, Sequential
from minitorch.nn.conv import Conv2d
from minitorch.nn.dropout import Dropout, Dropout1d, Dropout2d
from minitorch.nn.flatten import Flatten
from minitorch.nn.linear import Identity, Linear
from minitorch.nn.loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from minitorch.nn.module import Module
from minitorch.nn.normalization import LayerNorm
from minitorch.nn.parameter import Parameter
from minitorch.nn.pooling import MaxPool2d
from minitorch.nn.rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell
from minitorch.nn.sparse import Embedding
