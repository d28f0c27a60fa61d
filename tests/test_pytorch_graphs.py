"""Graphs like PyTorch's, the losses that make them, and Tensor repr.

1. Node names. For every public op and layer the other tests cover (their case lists are
   imported from those files) and every loss variant, the output's graph is walked breadth-first
   along `grad_fn.next_functions`, and the node names met (each node once) must be PyTorch's.
   The differences that remain are listed in DIFFERENCES, which is also the table "Graphs that
   differ from PyTorch's" in README.md: a new difference fails, and so does a fixed one. Each
   node's saved tensors go by PyTorch's names (`self`, `mat2`, `result1`, ...; minitorch may
   save fewer, e.g. nothing for a constant factor).
2. The losses against torch.nn.functional in float64: values, gradients of input and target,
   every reduction, class weights, ignore_index, label smoothing, second derivatives, errors.
3. Tensor repr: `grad_fn=` wraps onto a new line where PyTorch's does.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter, deque
from pathlib import Path

import pytest
import test_higher_order
import test_nn_layers
import test_nn_rnn
import test_ops_elementwise
import test_ops_linalg
import test_ops_reduction
import test_ops_shape_indexing
import torch
from oracle import (
    as_list,
    check_gradcheck,
    check_op,
    check_second_order,
    constant,
    leaves,
    make_values,
    on_grid,
    uniform,
)

import minitorch

DOUBLE = torch.float64
README = Path(__file__).resolve().parent.parent / "README.md"


# -------------------------------------------------------------------------------------------------
# Walking a graph
# -------------------------------------------------------------------------------------------------
def walk(outputs: list) -> tuple[list[str], dict[str, set[str]]]:
    """The names of the nodes reachable from the outputs' grad_fn, breadth-first along
    next_functions, each node once (AccumulateGrad without torch's "torch::autograd::"), and
    per node name the names of the tensors such nodes saved (`_saved_<name>` attributes)."""
    queue = deque(o.grad_fn for o in outputs if o.grad_fn is not None)
    seen, names, saved = set(), [], {}
    while queue:
        node = queue.popleft()
        if node in seen:
            continue
        seen.add(node)
        name = node.name().removeprefix("torch::autograd::")
        names.append(name)
        saved.setdefault(name, set()).update(saved_tensor_names(node))
        queue.extend(child for child, _ in node.next_functions if child is not None)
    return names, saved


def saved_tensor_names(node) -> list[str]:
    """`self`, `other`, `result` ...: the names under which `node` shows its saved tensors."""
    if isinstance(node, minitorch.autograd.graph.Node):
        return [name for name, _ in minitorch.autograd.graph.saved_tensors(node)]
    return [
        a[len("_saved_") :]
        for a in dir(node)
        if a.startswith("_saved_") and isinstance(getattr(node, a), torch.Tensor)
    ]


def graphs(fn, values: list) -> tuple[list[str], list[str]]:
    """Node names of fn's graph in torch and in minitorch, on leaves holding `values`."""
    (theirs, _), (ours, _) = walks(fn, values)
    return theirs, ours


def walks(fn, values: list) -> tuple[tuple, tuple]:
    """`walk` of fn's graph in torch and in minitorch, on leaves holding `values`."""
    found = []
    for lib in (torch, minitorch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # broadcasting warnings of the losses
            outputs = as_list(fn(lib, *leaves(lib, values)))
        found.append(walk([o for o in outputs if o.requires_grad]))
    return found[0], found[1]


# -------------------------------------------------------------------------------------------------
# The cases: every op and layer the other test files cover, and every loss variant
# -------------------------------------------------------------------------------------------------
GRAPH_CASES: dict[str, tuple] = {}  # name: (fn(lib, *inputs), values of the inputs)


def _add(prefix: str, name: str, fn, makers, shapes) -> None:
    GRAPH_CASES[f"{prefix}/{name}"] = (fn, make_values(makers, shapes, seed=0))


for _name, (_case, _shapes) in test_higher_order.OPS.items():
    _add("op", _name, _case.fn, _case.makers, _shapes)
for _name, _case in test_ops_elementwise.UNARY.items():
    _add("unary", _name, _case.fn, _case.makers, [(2, 3)])
for _name, _case in test_ops_elementwise.BINARY.items():
    _add("binary", _name, _case.fn, _case.makers, [(2, 3), (3,)])
for _name, _case in test_ops_elementwise.INPLACE_WITH_TENSOR.items():
    _add("inplace", _name, _case.fn, _case.makers, [(2, 3), (3,)])
for _name, _case in test_ops_elementwise.INPLACE_UNARY.items():
    _add("inplace", _name, _case.fn, _case.makers, [(2, 3)])
for _name, _case in test_ops_reduction.GRADCHECK.items():
    _add("reduction", _name, _case.fn, _case.makers, [(2, 3)])
for _name, _build in test_ops_reduction.SOFTMAX_FAMILY.items():
    _add("reduction", _name, _build(1), [uniform()], [(2, 3)])
for _name, _fn in test_ops_reduction.ZERO_D.items():
    _add("zero_d", _name, _fn, [on_grid(0.2)], [()])
for _name, (_fn, _shapes) in test_ops_shape_indexing.SHAPE_GRADCHECK.items():
    _add("shape", _name, _fn, [uniform()] * len(_shapes), _shapes)
for _name, (_make_index, _) in test_ops_shape_indexing.GETITEM.items():
    _fn = lambda lib, x, make_index=_make_index: x[make_index(lib)]  # noqa: E731
    _add("getitem", _name, _fn, [uniform()], [test_ops_shape_indexing.GETITEM_SHAPE])
for _name, (_make_index, _) in test_ops_shape_indexing.SETITEM.items():
    _value_shape = test_ops_shape_indexing._assigned_shape(_make_index)
    _shapes = [test_ops_shape_indexing.SETITEM_SHAPE, _value_shape]
    _add("setitem", _name, test_ops_shape_indexing._setitem(_make_index), [uniform()] * 2, _shapes)
for _name, _shapes in test_ops_linalg.GRADCHECK_SHAPES.items():
    _add("matmul", _name, lambda lib, a, b: a @ b, [uniform()] * 2, _shapes)


def case(name: str, *shapes: tuple):
    """Register the decorated fn(lib, *inputs) as graph case `name`, on uniform inputs."""

    def register(fn):
        _add(*name.split("/"), fn, [uniform()] * len(shapes), list(shapes))
        return fn

    return register


def F(lib):
    return lib.nn.functional


def _classes(lib, *values):
    return constant(lib, torch.tensor(values))


def _weights(lib, *values):
    return constant(lib, torch.tensor(values, dtype=DOUBLE))


# Functional forms, each with the arguments that change its graph ---------------------------------
@case("functional/linear", (4, 3), (2, 3), (2,))
@case("functional/linear_3d", (2, 4, 3), (2, 3), (2,))
def _(lib, x, w, b):
    return F(lib).linear(x, w, b)


@case("functional/linear_no_bias", (4, 3), (2, 3))
def _(lib, x, w):
    return F(lib).linear(x, w)


@case("functional/conv2d", (1, 2, 4, 4), (3, 2, 3, 3), (3,))
def _(lib, x, w, b):
    return F(lib).conv2d(x, w, b, padding=1)


@case("functional/conv2d_no_bias", (1, 2, 4, 4), (3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w, stride=2)


@case("functional/conv2d_unbatched", (2, 4, 4), (3, 2, 3, 3))
def _(lib, x, w):
    return F(lib).conv2d(x, w)


@case("functional/max_pool2d", (1, 2, 4, 4))
def _(lib, x):
    return F(lib).max_pool2d(x, 2)


@case("functional/embedding", (3, 2))
def _(lib, w):
    return F(lib).embedding(_classes(lib, [0, 2], [1, 1]), w)


@case("functional/pad", (2, 3))
def _(lib, x):
    return F(lib).pad(x, (1, 0, 2, 1))


@case("functional/dropout", (2, 3))
def _(lib, x):
    return F(lib).dropout(x, 0.3) + F(lib).dropout(x, 0.5, training=False)


@case("functional/activations", (2, 3))
def _(lib, x):
    return F(lib).relu(x) * F(lib).tanh(x) * F(lib).sigmoid(x)


@case("functional/softmax", (2, 3))
def _(lib, x):
    return F(lib).softmax(x, dim=1) + F(lib).log_softmax(x, dim=0)


@case("functional/layer_norm", (2, 3))
def _(lib, x):
    return F(lib).layer_norm(x, (3,))


@case("functional/layer_norm_affine", (4, 2, 3), (2, 3), (2, 3))
def _(lib, x, w, b):
    return F(lib).layer_norm(x, (2, 3), w, b)


@case("functional/layer_norm_weight_only", (2, 3), (3,))
def _(lib, x, w):
    return F(lib).layer_norm(x, (3,), w)


# Losses: float targets are inputs too (their gradients are part of the graph); class indices and
# class weights are constants ----------------------------------------------------------------------
REGRESSION = {
    "mse_loss": {},
    "l1_loss": {},
    "smooth_l1_loss": {"beta": 0.5},
    "huber_loss": {"delta": 0.7},
}


def _regression(loss: str, target_grad: bool = True, **options):
    def fn(lib, x, y):
        y = y if target_grad else y.detach()
        return getattr(F(lib), loss)(x, y, **REGRESSION[loss], **options)

    return fn


for _loss in REGRESSION:
    for _reduction in ("mean", "sum", "none"):
        case(f"loss/{_loss}_{_reduction}", (3, 4), (3, 4))(_regression(_loss, reduction=_reduction))
    case(f"loss/{_loss}_broadcast", (3, 4), (4,))(_regression(_loss))
    case(f"loss/{_loss}_target_no_grad", (3, 4), (3, 4))(_regression(_loss, target_grad=False))
for _loss in ("mse_loss", "l1_loss", "huber_loss"):
    case(f"loss/{_loss}_weighted", (3, 4), (3, 4))(
        lambda lib, x, y, loss=_loss: getattr(F(lib), loss)(x, y, weight=y.detach().abs())
    )


@case("loss/smooth_l1_loss_beta_0", (3, 4), (3, 4))
def _(lib, x, y):
    return F(lib).smooth_l1_loss(x, y, beta=0.0)


@case("loss/binary_cross_entropy", (3, 4), (3, 4))
def _(lib, x, y):
    return F(lib).binary_cross_entropy(x.sigmoid(), y.sigmoid())


@case("loss/binary_cross_entropy_weighted", (3, 4), (3, 4))
def _(lib, x, y):
    weight = _weights(lib, 1.0, 2.0, 0.5, 1.0)
    return F(lib).binary_cross_entropy(x.sigmoid(), y.sigmoid(), weight, reduction="sum")


@case("loss/bce_with_logits", (3, 4), (3, 4))
def _(lib, x, y):
    return F(lib).binary_cross_entropy_with_logits(x, y.sigmoid())


@case("loss/bce_with_logits_pos_weight", (3, 4), (3, 4))
def _(lib, x, y):
    pos_weight = _weights(lib, 1.0, 2.0, 0.5, 1.0)
    return F(lib).binary_cross_entropy_with_logits(x, y, pos_weight=pos_weight, reduction="none")


@case("loss/nll_loss", (3, 4))
def _(lib, x):
    return F(lib).nll_loss(x.log_softmax(1), _classes(lib, 0, 3, 1))


@case("loss/nll_loss_1d", (4,))
def _(lib, x):
    return F(lib).nll_loss(x, _classes(lib, 2)[0])


@case("loss/nll_loss_3d_none", (2, 3, 2))
def _(lib, x):
    return F(lib).nll_loss(x, _classes(lib, [0, 1], [2, 0]), reduction="none")


@case("loss/nll_loss_3d_mean", (2, 3, 2))
def _(lib, x):
    return F(lib).nll_loss(x, _classes(lib, [0, 1], [2, 0]))


@case("loss/nll_loss_4d", (2, 3, 1, 2))
def _(lib, x):
    return F(lib).nll_loss(x, _classes(lib, [[0, 1]], [[2, 0]]), reduction="sum")


@case("loss/nll_loss_5d_none", (1, 3, 1, 1, 2))
def _(lib, x):
    return F(lib).nll_loss(x, _classes(lib, [[[0, 1]]]), reduction="none")


def _cross_entropy(reduction: str, weighted: bool, smoothing: float):
    def fn(lib, x):
        weight = _weights(lib, 1.0, 2.0, 0.5, 1.5) if weighted else None
        target = _classes(lib, 0, 3, -100)
        return F(lib).cross_entropy(
            x, target, weight, reduction=reduction, label_smoothing=smoothing
        )

    return fn


for _reduction in ("mean", "sum", "none"):
    for _weighted in (False, True):
        for _smoothing in (0.0, 0.2):
            _label = f"loss/cross_entropy_{_reduction}" + "_weighted" * _weighted
            _label += "_smoothed" * bool(_smoothing)
            case(_label, (3, 4))(_cross_entropy(_reduction, _weighted, _smoothing))


@case("loss/cross_entropy_ignore_index", (3, 4))
def _(lib, x):
    return F(lib).cross_entropy(x, _classes(lib, 0, 3, 1), ignore_index=1, label_smoothing=0.1)


@case("loss/cross_entropy_unbatched", (4,))
def _(lib, x):
    return F(lib).cross_entropy(x, _classes(lib, 2)[0])


@case("loss/cross_entropy_3d", (2, 3, 2))
def _(lib, x):
    return F(lib).cross_entropy(x, _classes(lib, [0, 1], [2, 0]), reduction="none")


@case("loss/cross_entropy_4d_smoothed", (2, 3, 1, 2))
def _(lib, x):
    return F(lib).cross_entropy(x, _classes(lib, [[0, 1]], [[2, 0]]), label_smoothing=0.3)


@case("loss/cross_entropy_probabilities", (3, 4), (3, 4))
def _(lib, x, p):
    return F(lib).cross_entropy(x, p.softmax(1))


@case("loss/cross_entropy_probabilities_sum_smoothed", (3, 4), (3, 4))
def _(lib, x, p):
    return F(lib).cross_entropy(x, p.softmax(1), label_smoothing=0.1, reduction="sum")


@case("loss/cross_entropy_probabilities_none_weighted", (3, 4), (3, 4))
def _(lib, x, p):
    weight = _weights(lib, 1.0, 2.0, 0.5, 1.5)
    return F(lib).cross_entropy(x, p.softmax(1), weight, reduction="none")


# Loss modules -------------------------------------------------------------------------------------
@case("loss_module/regression", (3, 4), (3, 4))
def _(lib, x, y):
    nn = lib.nn
    return nn.MSELoss()(x, y) + nn.L1Loss(reduction="sum")(x, y) + nn.HuberLoss(delta=2.0)(x, y)


@case("loss_module/SmoothL1Loss", (3, 4), (3, 4))
def _(lib, x, y):
    return lib.nn.SmoothL1Loss(reduction="none", beta=0.5)(x, y)


@case("loss_module/BCELoss", (3, 4), (3, 4))
def _(lib, x, y):
    return lib.nn.BCELoss()(x.sigmoid(), y.sigmoid())


@case("loss_module/BCEWithLogitsLoss", (3, 4), (3, 4))
def _(lib, x, y):
    return lib.nn.BCEWithLogitsLoss()(x, y.sigmoid())


@case("loss_module/NLLLoss", (2, 3))
def _(lib, x):
    return lib.nn.NLLLoss()(x.log_softmax(1), _classes(lib, 0, 2))


@case("loss_module/CrossEntropyLoss", (2, 3))
def _(lib, x):
    return lib.nn.CrossEntropyLoss(label_smoothing=0.1)(x, _classes(lib, 0, 2))


# Layers, built in both libraries with torch's weights copied into minitorch's ---------------------
def _stack(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2), nn.Tanh())


LAYERS = {
    "Linear": (lambda lib: lib.nn.Linear(3, 2), (4, 3)),
    "Linear_no_bias": (lambda lib: lib.nn.Linear(3, 2, bias=False), (4, 3)),
    "Linear_stack": (_stack, (4, 3)),
    "Identity": (lambda lib: lib.nn.Sequential(lib.nn.Identity(), lib.nn.Sigmoid()), (2, 3)),
    "Softmax": (lambda lib: lib.nn.Softmax(dim=1), (2, 3)),
    "LogSoftmax": (lambda lib: lib.nn.LogSoftmax(dim=1), (2, 3)),
    "Flatten": (lambda lib: lib.nn.Flatten(), (2, 3, 2)),
    "Dropout_eval": (lambda lib: lib.nn.Sequential(lib.nn.Dropout(), lib.nn.Tanh()).eval(), (2, 3)),
    "Conv2d": (lambda lib: lib.nn.Conv2d(2, 3, 3, padding=1), (1, 2, 4, 4)),
    "MaxPool2d": (lambda lib: lib.nn.MaxPool2d(2), (1, 2, 4, 4)),
    "LayerNorm": (lambda lib: lib.nn.LayerNorm(3), (2, 3)),
    "LayerNorm_no_affine": (lambda lib: lib.nn.LayerNorm(3, elementwise_affine=False), (2, 3)),
    "LayerNorm_no_bias": (lambda lib: lib.nn.LayerNorm((2, 3), bias=False), (4, 2, 3)),
}


def _rnn(table: dict, kind: str):
    def make(lib):
        torch_cls, minitorch_cls, options = table[kind]
        cls = torch_cls if lib is torch else minitorch_cls
        return cls(test_nn_rnn.INPUT, test_nn_rnn.HIDDEN, **options)

    return make


for _kind in test_nn_rnn.LAYERS:
    LAYERS[f"{_kind}_layer"] = (_rnn(test_nn_rnn.LAYERS, _kind), (3, 2, test_nn_rnn.INPUT))
    LAYERS[f"{_kind}_cell"] = (_rnn(test_nn_rnn.CELLS, _kind), (2, test_nn_rnn.INPUT))


def _flatten_outputs(out) -> list:
    """A layer's outputs as a flat list: (output, (h, c)) -> [output, h, c]."""
    if isinstance(out, (tuple, list)):
        return [t for part in out for t in _flatten_outputs(part)]
    return [out]


def _layer_case(make):
    minitorch_layer, torch_layer = test_nn_layers.build_both(make)

    def fn(lib, x):
        return _flatten_outputs((torch_layer if lib is torch else minitorch_layer)(x))

    return fn


for _name, (_make, _shape) in LAYERS.items():
    case(f"layer/{_name}", _shape)(_layer_case(_make))


# -------------------------------------------------------------------------------------------------
# The differences that remain: the rows of README.md's table "Graphs that differ from PyTorch's"
# -------------------------------------------------------------------------------------------------
# (cases, nodes only PyTorch's graph has, nodes only minitorch's graph has, reason); "x N" counts
# a node met N times, "-" is none.
DIFFERENCES = [
    (
        ("functional/linear", "functional/linear_no_bias", "layer/Linear", "layer/Linear_no_bias"),
        "TBackward0", "-",
        "linear is one fused node with edges (input, weight, bias); PyTorch records "
        "addmm(bias, input, weight.t()), so its edges are (bias, input, TBackward0)",
    ),
    (
        ("layer/Linear_stack",),
        "TBackward0 x 2", "-",
        "the same, for two Linear layers",
    ),
    (
        ("functional/linear_3d",),
        "TBackward0, ViewBackward0 x 2", "-",
        "the same; PyTorch also views a 3-D input as 2-D and the result back",
    ),
    (
        ("op/vm", "matmul/vm"),
        "MmBackward0, SqueezeBackward4, UnsqueezeBackward0", "MatmulBackward0",
        "matmul of a 1-D and a 2-D tensor is one node; PyTorch unsqueezes, multiplies, squeezes",
    ),
    (
        ("op/matmul_tanh", "matmul/batched"),
        "MmBackward0, UnsafeViewBackward0, ViewBackward0", "MatmulBackward0",
        "batched matmul with a 2-D right operand is one node; PyTorch folds the batch into mm",
    ),
    (
        ("matmul/batch_vector",),
        "MvBackward0, UnsafeViewBackward0, ViewBackward0", "MatmulBackward0",
        "batched matmul with a 1-D right operand is one node; PyTorch folds the batch into mv",
    ),
    (
        ("op/batched_broadcast", "matmul/broadcast_batches"),
        "BmmBackward0, CloneBackward0 x 2, ExpandBackward0 x 2, UnsafeViewBackward0 x 3",
        "MatmulBackward0",
        "matmul with broadcast batch dims is one node; PyTorch expands, copies and calls bmm",
    ),
    (
        ("op/number_div", "unary/number_div"),
        "MulBackward0, ReciprocalBackward0", "DivBackward0",
        "number / tensor is one division; PyTorch computes x.reciprocal() * number",
    ),
    (
        ("unary/add_alpha", "binary/add_alpha", "binary/sub_alpha", "inplace/sub_number_alpha"),
        "-", "MulBackward0",
        "add/sub with alpha multiplies the other operand by alpha first; PyTorch's node does it",
    ),
    (
        ("op/zero_", "inplace/zero_"),
        "ZeroBackward0", "FillBackward0",
        "zero_() records fill_'s node",
    ),
    (
        ("op/fill_", "inplace/fill_"),
        "FillBackward2", "FillBackward0",
        "PyTorch 2.13 names the node of fill_ with a number FillBackward2",
    ),
    (
        ("getitem/two_ints", "getitem/int_then_slice"),
        "SelectBackward0", "-",
        "basic indexing is one view node named after the last index; PyTorch records one per index",
    ),
    (
        ("getitem/int_int_int",),
        "SelectBackward0 x 2", "-",
        "the same, three indices",
    ),
    (
        ("getitem/slices",),
        "SliceBackward0 x 2", "-",
        "the same, three slices",
    ),
    (
        ("getitem/slice_and_int_tensor",),
        "SliceBackward0", "-",
        "the same: the slice before an index tensor is part of IndexBackward0",
    ),
    (
        ("op/getitem_slice_none_ellipsis", "getitem/none_middle", "getitem/none_and_tensor"),
        "UnsqueezeBackward0", "-",
        "the same: a None in an index is part of the node",
    ),
    (
        ("setitem/int", "setitem/ints", "setitem/ellipsis", "setitem/none"),
        "-", "CopyBackwards, SelectBackward0",
        "x[i] = v: minitorch's CopySlices lists the copy into the view x[i] (CopyBackwards, "
        "which reaches v and the view) among its edges; PyTorch's keeps it inside and links to v",
    ),
    (
        ("setitem/slice",),
        "-", "CopyBackwards, SliceBackward0",
        "the same, for a slice",
    ),
    (
        ("op/setitem",),
        "-", "CopyBackwards x 2, SelectBackward0 x 2",
        "the same, twice",
    ),
    (
        ("layer/rnn_tanh_cell", "layer/rnn_relu_cell"),
        "AddmmBackward0 x 2", "AddBackward0 x 2, MmBackward0 x 2",
        "an RNN cell adds its biases after the products; PyTorch's CPU cell uses addmm",
    ),
    (
        ("layer/rnn_tanh_layer", "layer/rnn_relu_layer"),
        "AddmmBackward0 x 4, StackBackward0, UnbindBackward0",
        "AddBackward0 x 2, CatBackward0, MmBackward0 x 4, SplitWithSizesBackward0",
        "an RNN layer projects the inputs of all steps in one product and splits it; "
        "PyTorch's CPU layer unbinds the steps",
    ),
    (
        ("layer/lstm_cell",),
        "AddBackward0 x 2, AddmmBackward0 x 2, MulBackward0 x 3, SigmoidBackward0 x 3, "
        "TBackward0 x 2, TanhBackward0 x 2, UnsafeSplitBackward0",
        "LSTMCellStepBackward",
        "an LSTM cell is one fused node (a cell runs per step or tree node, so one node keeps "
        "per-sample code and autobatch cheap); PyTorch's CPU cell records every gate op",
    ),
    (
        ("layer/lstm_layer",),
        "AddBackward0 x 4, AddmmBackward0 x 4, MulBackward0 x 9, SigmoidBackward0 x 9, "
        "StackBackward0, TBackward0 x 3, TanhBackward0 x 6, UnbindBackward0, "
        "UnsafeSplitBackward0 x 3",
        "CatBackward0, LSTMStepBackward x 3, MmBackward0, SplitWithSizesBackward0",
        "the same, for 3 steps of a layer",
    ),
    (
        ("layer/gru_cell",),
        "AddBackward0 x 3, AddmmBackward0 x 2, MulBackward0 x 2, SigmoidBackward0 x 2, "
        "SubBackward0, TBackward0, TanhBackward0, UnsafeSplitBackward0 x 2",
        "GRUStepBackward, MmBackward0",
        "a GRU step is one fused node; PyTorch's CPU cell records every gate op",
    ),
    (
        ("layer/gru_layer",),
        "AddBackward0 x 11, AddmmBackward0 x 4, MulBackward0 x 6, SigmoidBackward0 x 6, "
        "StackBackward0, SubBackward0 x 3, TBackward0 x 3, TanhBackward0 x 3, UnbindBackward0, "
        "UnsafeSplitBackward0 x 6",
        "CatBackward0, GRUStepBackward x 3, MmBackward0, SplitWithSizesBackward0",
        "the same, for 3 steps of a layer",
    ),
]  # fmt: skip
EXPECTED = {case: row for row in DIFFERENCES for case in row[0]}


def only_in(names: list[str], others: list[str]) -> str:
    """The nodes of `names` that `others` lacks, with counts: "AddBackward0 x 2, MmBackward0"."""
    extra = Counter(names) - Counter(others)
    return ", ".join(n if k == 1 else f"{n} x {k}" for n, k in sorted(extra.items())) or "-"


def test_every_listed_difference_is_a_case():
    assert set(EXPECTED) <= set(GRAPH_CASES), set(EXPECTED) - set(GRAPH_CASES)
    assert sum(len(row[0]) for row in DIFFERENCES) == len(EXPECTED), "a case listed twice"


@pytest.mark.parametrize("name", GRAPH_CASES)
def test_graph_node_names_match_pytorch(name):
    fn, values = GRAPH_CASES[name]
    (theirs, their_saved), (ours, our_saved) = walks(fn, values)
    for node, saved in our_saved.items():  # PyTorch's names; minitorch may save less
        if node in their_saved:
            assert saved <= their_saved[node], (
                f"{node} shows saved tensors {sorted(saved)}, PyTorch's {sorted(their_saved[node])}"
            )
    if name not in EXPECTED:
        assert ours == theirs, f"minitorch: {ours}\ntorch:     {theirs}"
        return
    _, torch_only, minitorch_only, _ = EXPECTED[name]
    assert ours != theirs, "the graphs are PyTorch's now: take the case out of DIFFERENCES"
    assert (only_in(theirs, ours), only_in(ours, theirs)) == (torch_only, minitorch_only), (
        f"the difference changed:\nminitorch: {ours}\ntorch:     {theirs}"
    )


def _readme_table() -> list[tuple]:
    """The rows of README.md's table under "Graphs that differ from PyTorch's"."""
    text = README.read_text()
    section = text[text.index("#### Graphs that differ from PyTorch's") :]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        cases = tuple(re.findall(r"`([^`]+)`", cells[0]))
        rows.append((cases, *cells[1:]))
    return rows


def test_readme_lists_the_same_differences():
    assert _readme_table() == [tuple(row) for row in DIFFERENCES]


def readme_rows() -> str:
    """The table's rows as README.md shows them (run this to update README.md)."""
    return "\n".join(
        f"| {', '.join(f'`{c}`' for c in cases)} | {theirs} | {ours} | {reason} |"
        for cases, theirs, ours, reason in DIFFERENCES
    )


# -------------------------------------------------------------------------------------------------
# Losses against torch in float64: values, gradients of input and target, node names and edges
# -------------------------------------------------------------------------------------------------
REDUCTIONS = ["mean", "sum", "none"]
# Input and target never meet (on_grid offsets): |input - target| >= 0.2 everywhere.
APART = [on_grid(0.0), on_grid(0.5)]


@pytest.mark.filterwarnings("ignore:Using a target size")
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shapes", [[(3, 4), (3, 4)], [(2, 3, 4), (4,)], [(4, 1), (3,)]], ids=repr)
@pytest.mark.parametrize("loss", list(REGRESSION))
def test_regression_losses_match_torch(loss, shapes, reduction):
    values = make_values(APART, shapes, seed=len(shapes[1]))
    check_op(_regression(loss, reduction=reduction), values)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0, 2.5])
def test_smooth_l1_beta_and_huber_delta_are_torchs(beta):
    values = make_values(APART, [(4, 5), (4, 5)], seed=3)
    check_op(lambda lib, x, y: F(lib).smooth_l1_loss(x, y, beta=beta), values)
    if beta > 0:
        check_op(lambda lib, x, y: F(lib).huber_loss(x, y, "sum", delta=beta), values)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "huber_loss"])
def test_weighted_regression_losses_match_torch(loss, reduction):
    values = make_values([*APART, uniform(0.1, 2.0)], [(3, 4), (3, 4), (3, 4)], seed=4)

    def fn(lib, x, y, w):
        return getattr(F(lib), loss)(x, y, reduction=reduction, weight=w.detach())

    check_op(fn, values)


@pytest.mark.filterwarnings("ignore:size_average and reduce args will be deprecated")
def test_legacy_size_average_and_reduce_flags():
    values = make_values(APART, [(3, 4), (3, 4)], seed=5)
    check_op(lambda lib, x, y: F(lib).mse_loss(x, y, size_average=False), values)
    check_op(lambda lib, x, y: F(lib).smooth_l1_loss(x, y, reduce=False), values)
    check_op(lambda lib, x, y: lib.nn.L1Loss(size_average=False)(x, y), values)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 4)], ids=str)
def test_binary_cross_entropy_matches_torch(weight_shape, reduction):
    values = make_values([uniform(0.05, 0.95), uniform(0.0, 1.0)], [(3, 4), (3, 4)], seed=6)
    weight = None if weight_shape is None else make_values([uniform(0.5, 2.0)], [weight_shape], 7)

    def fn(lib, p, y):
        w = None if weight is None else constant(lib, weight[0])
        return F(lib).binary_cross_entropy(p, y, w, reduction=reduction)

    check_op(fn, values)
    check_op(lambda lib, p, y: lib.nn.BCELoss(reduction=reduction)(p, y), values)


NLL_CASES = {  # input shape, target
    "1d": ((4,), 2),
    "2d": ((3, 4), [0, 3, -100]),
    "3d": ((2, 4, 3), [[0, 1, 3], [2, -100, 0]]),
    "4d": ((2, 4, 1, 2), [[[0, 1]], [[3, 3]]]),
    "5d": ((1, 4, 2, 1, 2), [[[[0, 1]], [[2, -100]]]]),
}


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("rank", list(NLL_CASES))
def test_nll_and_cross_entropy_match_torch_for_every_rank(rank, reduction, weighted):
    shape, target = NLL_CASES[rank]
    values = make_values([uniform()], [shape], seed=8)
    weight = torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=DOUBLE) if weighted else None

    def loss(name, classes=None, **options):
        def fn(lib, x):
            w = None if weight is None else constant(lib, weight)
            args = (constant(lib, torch.tensor(target) if classes is None else classes), w)
            return getattr(F(lib), name)(x, *args, reduction=reduction, **options)

        return fn

    check_op(loss("nll_loss"), values)
    check_op(loss("cross_entropy"), values)
    check_op(loss("cross_entropy", label_smoothing=0.3), values)
    classes = torch.tensor(target).clamp(min=0)  # class 0 ignored instead of -100
    check_op(loss("cross_entropy", classes, ignore_index=0, label_smoothing=0.1), values)


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_with_probabilities_matches_torch(reduction, weighted, smoothing):
    values = make_values([uniform(), uniform()], [(3, 4), (3, 4)], seed=9)
    weight = torch.tensor([1.0, 2.0, 0.5, 1.5], dtype=DOUBLE) if weighted else None

    def fn(lib, x, p):
        w = None if weight is None else constant(lib, weight)
        return F(lib).cross_entropy(
            x, p.softmax(1), w, reduction=reduction, label_smoothing=smoothing
        )

    check_op(fn, values)


def test_layer_norm_matches_torch():
    values = make_values([uniform()] * 3, [(2, 3, 4), (3, 4), (3, 4)], seed=10)
    check_op(lambda lib, x, w, b: F(lib).layer_norm(x, (3, 4), w, b, eps=1e-3), values)
    # Without a bias torch's node keeps a (None, 0) edge for it; minitorch's has no edge there
    # (node_name= checks the name only).
    weight_only = lambda lib, x, w: F(lib).layer_norm(x, (4,), w[0])
    check_op(weight_only, values[:2], node_name="NativeLayerNormBackward0")


def _nll_of_product(lib, x, y):
    return F(lib).nll_loss((x * y).log_softmax(1), _classes(lib, 0, 3, 1))


def _smoothed_cross_entropy(lib, x, y):
    return F(lib).cross_entropy(x * y, _classes(lib, 0, -100, 1), label_smoothing=0.2)


def _bce_of_sigmoids(lib, x, y):
    return F(lib).binary_cross_entropy(x.sigmoid(), y.sigmoid(), reduction="sum")


SECOND_ORDER = {
    "mse_loss": (lambda lib, x, y: F(lib).mse_loss(x.tanh(), y), APART),
    "mse_loss_none": (lambda lib, x, y: F(lib).mse_loss(x, y, reduction="none"), APART),
    "smooth_l1_loss": (lambda lib, x, y: F(lib).smooth_l1_loss(x, y, beta=0.77), APART),
    "huber_loss": (lambda lib, x, y: F(lib).huber_loss(x.sin(), y, "sum", delta=0.61), APART),
    "binary_cross_entropy": (_bce_of_sigmoids, [uniform(), uniform()]),
    "nll_loss": (_nll_of_product, [uniform(), uniform()]),
    "cross_entropy_smoothed": (_smoothed_cross_entropy, [uniform(), uniform()]),
    "layer_norm": (lambda lib, x, y: F(lib).layer_norm(x, (4,), y[0], y[1]), [uniform()] * 2),
}


@pytest.mark.parametrize("name", SECOND_ORDER)
def test_losses_second_order_matches_torch(name):
    fn, makers = SECOND_ORDER[name]
    check_second_order(fn, make_values(makers, [(3, 4), (3, 4)], seed=11))


@pytest.mark.parametrize("name", ["mse_loss", "huber_loss", "binary_cross_entropy", "layer_norm"])
def test_losses_gradcheck(name):
    fn, makers = SECOND_ORDER[name]
    check_gradcheck(fn, make_values(makers, [(2, 4), (2, 4)], seed=12))


def test_loss_modules_keep_their_options():
    values = make_values(APART, [(3, 4), (3, 4)], seed=13)
    check_op(lambda lib, x, y: lib.nn.SmoothL1Loss(reduction="sum", beta=0.4)(x, y), values)
    check_op(lambda lib, x, y: lib.nn.HuberLoss("none", delta=0.4)(x, y), values)
    assert repr(minitorch.nn.HuberLoss(delta=0.4)) == repr(torch.nn.HuberLoss(delta=0.4))
    weight = minitorch.tensor([1.0, 2.0])
    assert list(minitorch.nn.BCELoss(weight).state_dict()) == ["weight"]


def _zeros(lib, *shape, dtype=DOUBLE):
    return lib.zeros(*shape, dtype=dtype)


ERRORS = {  # name: (what raises, given lib and F(lib)), the error's type
    "reduction": (lambda lib, f: f.huber_loss(_zeros(lib, 2), _zeros(lib, 2), "avg"), ValueError),
    "negative_beta": (
        lambda lib, f: f.smooth_l1_loss(_zeros(lib, 2), _zeros(lib, 2), beta=-1.0),
        RuntimeError,
    ),
    "zero_delta": (
        lambda lib, f: f.huber_loss(_zeros(lib, 2), _zeros(lib, 2), delta=0.0),
        RuntimeError,
    ),
    "shapes": (lambda lib, f: f.mse_loss(_zeros(lib, 2, 3), _zeros(lib, 4)), RuntimeError),
    "weight_shape": (
        lambda lib, f: f.l1_loss(_zeros(lib, 2, 3), _zeros(lib, 2, 3), weight=_zeros(lib, 3)),
        ValueError,
    ),
    "bce_range": (
        lambda lib, f: f.binary_cross_entropy(_zeros(lib, 2) + 2, _zeros(lib, 2)),
        RuntimeError,
    ),
    "bce_shape": (
        lambda lib, f: f.binary_cross_entropy(_zeros(lib, 2, 3), _zeros(lib, 3)),
        ValueError,
    ),
    "nll_batch": (
        lambda lib, f: f.nll_loss(_zeros(lib, 2, 3, 4), _zeros(lib, 3, 4, dtype=torch.int64)),
        ValueError,
    ),
    "nll_target": (
        lambda lib, f: f.nll_loss(_zeros(lib, 2, 3, 4), _zeros(lib, 2, 5, dtype=torch.int64)),
        RuntimeError,
    ),
    "nll_target_4d": (
        lambda lib, f: f.nll_loss(_zeros(lib, 2, 3, 4, 5), _zeros(lib, 2, 4, 4, dtype=torch.int64)),
        RuntimeError,
    ),
    "class_out_of_range": (
        lambda lib, f: f.cross_entropy(_zeros(lib, 2, 3), lib.tensor([0, 3])),
        IndexError,
    ),
}


@pytest.mark.parametrize("name", ERRORS)
def test_loss_errors_are_torchs(name):
    make, error = ERRORS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(error) as theirs:
            make(torch, F(torch))
        with pytest.raises(error) as ours:
            make(minitorch, F(minitorch))
    assert str(theirs.value) in str(ours.value)


def test_broadcast_target_warns_like_torch():
    for loss in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        with pytest.warns(UserWarning, match="Using a target size"):
            getattr(minitorch.nn.functional, loss)(minitorch.zeros(3, 1), minitorch.zeros(3))


# -------------------------------------------------------------------------------------------------
# Tensor repr: grad_fn= (or requires_grad=True) wraps where PyTorch's does
# -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape", [(), (4,), (5,), (6,), (7,), (8,), (9,), (12,), (0,), (2, 0), (3, 4), (2, 7), (200,)]
)
@pytest.mark.parametrize("scale", [1.0, 1e-5, 123456.0])
def test_repr_wraps_like_torch(shape, dtype, scale):
    values = (torch.randn(shape, generator=torch.Generator().manual_seed(0)) * scale).to(dtype)
    t_leaf, m_leaf = leaves(torch, [values])[0], leaves(minitorch, [values])[0]
    assert repr(m_leaf) == repr(t_leaf)
    assert repr(m_leaf * 2) == repr(t_leaf * 2)
    assert repr(m_leaf.sum(0) if shape else m_leaf.exp()) == repr(
        t_leaf.sum(0) if shape else t_leaf.exp()
    )


def test_repr_of_a_parameter_and_a_narrow_print_width():
    t_param = torch.nn.Parameter(torch.randn(7, generator=torch.Generator().manual_seed(1)))
    m_param = minitorch.nn.Parameter(minitorch.Tensor(t_param.detach().clone()))
    assert repr(m_param) == repr(t_param)
    previous = torch._tensor_str.PRINT_OPTS.linewidth
    try:
        torch.set_printoptions(linewidth=40)
        assert repr(m_param * 3) == repr(t_param * 3)
    finally:
        torch.set_printoptions(linewidth=previous)
