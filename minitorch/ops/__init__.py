"""All built-in ops, one module per family. Each op is a `Function` (see autograd/function.py)."""

from minitorch.ops.broadcasting import sum_to_shape
from minitorch.ops.elementwise import (
    abs,
    add,
    clamp,
    clone,
    compare,
    copy_from,
    cos,
    div,
    exp,
    fill,
    floor_divide,
    log,
    logical,
    masked_fill,
    maximum,
    minimum,
    mul,
    neg,
    pow,
    predicate,
    relu,
    remainder,
    sigmoid,
    sigmoid_backward,
    sin,
    sqrt,
    sub,
    tanh,
    tanh_backward,
    to_copy,
    where,
)
from minitorch.ops.indexing import gather, getitem, index_select, scatter_add, setitem
from minitorch.ops.inplace import inplace
from minitorch.ops.linalg import matmul, mm
from minitorch.ops.random import multinomial, normal
from minitorch.ops.reduction import (
    amax,
    amin,
    argmax,
    argmin,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    norm,
    softmax,
    std,
    sum,
    var,
)
from minitorch.ops.shape import (
    cat,
    chunk,
    expand,
    flatten,
    permute,
    repeat,
    reshape,
    split,
    squeeze,
    stack,
    t,
    transpose,
    unbind,
    unsqueeze,
    view,
)
from minitorch.ops.sorting import argsort, sort
