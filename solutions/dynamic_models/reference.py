"""Reference solutions of notebook 3, "dynamic_models": the single source of truth.

Each block below starting with `# %% <grade_id>` is, verbatim, the solution cell of that
exercise in course/source/dynamic_models/dynamic_models.ipynb (the generator
course/generate/dynamic_models.py copies it there; a test checks the two never drift). The
imports above the first block are the ones the notebook's setup cell makes: in solution cells,
`torch` is PyTorch and `nn` is `minitorch.nn`, so the students' models are minitorch modules.
"""

import torch  # noqa: F401 (the notebook's imports, in scope for every solution)

import minitorch
from minitorch import nn
from minitorch.nn.utils.rnn import pack_padded_sequence

# Exercise 7: the model whose state_dict is saved, and the models it is loaded into. Each target
# is the source of a class `Target(features, hidden)`; `nn` is the library's nn module.
SOURCE_MODEL = """\
class Source(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.encoder = nn.Linear(features, hidden)
        self.steps = nn.ModuleList([nn.Linear(hidden, hidden) for _ in range(3)])
        self.head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = self.encoder(x).tanh()
        for step in self.steps:
            h = step(h).tanh()
        return self.head(h)
"""
TARGETS = {
    "a": """\
class Target(Source):
    def forward(self, x):  # every step twice
        h = self.encoder(x).tanh()
        for step in [*self.steps, *self.steps]:
            h = step(h).tanh()
        return self.head(h)
""",
    "b": """\
class Target(Source):
    def forward(self, x):  # with indices
        h = self.encoder(x).tanh()
        for i in range(len(self.steps)):
            h = self.steps[i](h).tanh()
        return self.head(h)
""",
    "c": """\
class Target(Source):
    def __init__(self, features, hidden):
        nn.Module.__init__(self)
        self.encoder = nn.Linear(features, hidden)
        self.steps = [nn.Linear(hidden, hidden) for _ in range(3)]  # a plain list
        self.head = nn.Linear(hidden, 1)
""",
    "d": """\
class Target(Source):
    def __init__(self, features, hidden):
        super().__init__(features, 2 * hidden)  # twice as wide
""",
    "e": """\
class Target(Source):
    def __init__(self, features, hidden):
        super().__init__(features, hidden)
        self.steps.append(nn.Linear(hidden, hidden))  # a fourth step
""",
    "f": """\
class Target(Source):
    def __init__(self, features, hidden):
        super().__init__(features, hidden)
        del self.head  # the head is now built in forward

    def forward(self, x):
        h = self.encoder(x).tanh()
        for step in self.steps:
            h = step(h).tanh()
        return nn.Linear(h.shape[-1], 1)(h)
""",
    "g": """\
class Target(Source):
    def forward(self, x):  # a step runs only while h is small
        h = self.encoder(x).tanh()
        for step in self.steps:
            if h.norm() < 100.0:
                h = step(h).tanh()
        return self.head(h)
""",
}
# What loading Source's state_dict into a Target does (exercise 7).
OUTCOMES = ("same_output", "different_output", "missing_keys", "unexpected_keys", "size_mismatch")


# %% ex1_depth_net
class DepthNet(nn.Module):
    """A stack of up to `max_depth` blocks; how many run depends on the input.

    `blocks`: an nn.ModuleList of `max_depth` nn.Linear(features, features); `head`:
    nn.Linear(features, 1). forward(x), for one sample x of shape [features]: h = x; while
    h.norm() > threshold and fewer than max_depth blocks have run, h = tanh(next block(h)).
    Stores the number of blocks that ran in `self.depth` and returns head(h), shape [1].

    predict_grads(inputs): the names (as in named_parameters) of the parameters whose .grad is
    a tensor after zero_grad() and then self(x).sum().backward() for every x of the non-empty
    list `inputs`, in order, never zeroing in between. Predicted without running backward.
    """

    def __init__(self, features, max_depth, threshold=1.0):
        super().__init__()
        ### BEGIN SOLUTION
        self.blocks = nn.ModuleList([nn.Linear(features, features) for _ in range(max_depth)])
        self.head = nn.Linear(features, 1)
        self.threshold = threshold
        self.depth = 0
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        h = x
        self.depth = 0
        while self.depth < len(self.blocks) and h.norm() > self.threshold:
            h = self.blocks[self.depth](h).tanh()
            self.depth += 1
        return self.head(h)
        ### END SOLUTION

    def predict_grads(self, inputs):
        ### BEGIN SOLUTION
        deepest = 0
        with minitorch.no_grad():
            for x in inputs:
                self(x)
                deepest = max(deepest, self.depth)
        # A parameter keeps its gradient tensor once any pass has used it.
        names = {"head.weight", "head.bias"}
        for i in range(deepest):
            names |= {f"blocks.{i}.weight", f"blocks.{i}.bias"}
        return names
        ### END SOLUTION


# %% ex2_router
class Router(nn.Module):
    """Per-sample routing: every sample goes through the branch its route names.

    `branches`: an nn.ModuleList of `n_branches` nn.Linear(features, out_features).
    forward(x, route): x of shape [batch, features], route an int64 tensor [batch] of values in
    range(n_branches). Row i of the result ([batch, out_features]) is
    branches[route[i]](x[i]). Vectorized: each branch runs once, on the rows routed to it
    (a boolean mask); no Python loop over samples. A branch that gets no sample does not run,
    so its parameters keep .grad None, as in a per-sample loop.
    """

    def __init__(self, features, out_features, n_branches):
        super().__init__()
        ### BEGIN SOLUTION
        self.branches = nn.ModuleList(
            [nn.Linear(features, out_features) for _ in range(n_branches)]
        )
        self.out_features = out_features
        ### END SOLUTION

    def forward(self, x, route):
        ### BEGIN SOLUTION
        out = minitorch.zeros(x.shape[0], self.out_features, dtype=x.dtype)
        for k, branch in enumerate(self.branches):
            mask = route == k
            if mask.any():
                out[mask] = branch(x[mask])
        return out
        ### END SOLUTION


# %% ex3_summarize
def summarize(lib, output, lengths):
    """The last valid step and the mean over the valid steps of padded sequences.

    `output`: a float `lib` tensor [batch, steps, hidden] (batch first), where sequence i is
    valid for its first lengths[i] steps and holds padding (any values) after them; `lengths`:
    an int64 `lib` tensor [batch], every length between 1 and steps. Returns `(last, mean)`,
    both [batch, hidden]: last[i] = output[i, lengths[i] - 1] and mean[i] = the mean of
    output[i, :lengths[i]]. Vectorized (no loop over the batch), differentiable.
    """
    ### BEGIN SOLUTION
    batch, steps, _ = output.shape
    last = output[lib.arange(batch), lengths - 1]
    valid = lib.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)  # [batch, steps]
    total = (output * valid.unsqueeze(2).to(output.dtype)).sum(dim=1)
    mean = total / lengths.unsqueeze(1).to(output.dtype)
    return last, mean
    ### END SOLUTION


# %% ex4_sequence_classifier
class SequenceClassifier(nn.Module):
    """A recurrent classifier over packed variable-length sequences.

    forward(padded, lengths): `padded` [batch, steps, features] (batch first, anything in the
    padding), `lengths` an int64 tensor [batch] in any order. Packs the batch with
    pack_padded_sequence(..., batch_first=True, enforce_sorted=False), runs a recurrent layer
    (nn.GRU recommended) on it and returns class scores [batch, classes] computed from each
    sequence's final hidden state. The scores of a sequence do not depend on the padding or
    on the other sequences of the batch.
    """

    def __init__(self, features, hidden, classes):
        super().__init__()
        ### BEGIN SOLUTION
        self.rnn = nn.GRU(features, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)
        ### END SOLUTION

    def forward(self, padded, lengths):
        ### BEGIN SOLUTION
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        _, h_n = self.rnn(packed)  # h_n: [layers, batch, hidden], in the batch's order
        return self.out(h_n[-1])
        ### END SOLUTION


# %% ex5_fixed_mlp
class FixedMLP(nn.Module):
    """BrokenMLP, fixed: the same computation with layers that are created once, registered
    as submodules, trained and saved.

    `hidden`: an nn.ModuleList of `depth` nn.Linear layers (features -> width, then
    width -> width), each followed by ReLU; `out`: nn.Linear(width, classes) (width =
    features when depth is 0). state_dict keys: hidden.0.weight, hidden.0.bias, ...,
    out.weight, out.bias. forward(x): [batch, features] -> class scores [batch, classes].
    """

    def __init__(self, features, width, classes, depth):
        super().__init__()
        ### BEGIN SOLUTION
        sizes = [features] + [width] * depth
        self.hidden = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
        self.out = nn.Linear(sizes[-1], classes)
        ### END SOLUTION

    def forward(self, x):
        ### BEGIN SOLUTION
        for layer in self.hidden:
            x = layer(x).relu()
        return self.out(x)
        ### END SOLUTION


# %% ex6_tree_net
class TreeNet(nn.Module):
    """A recursive model over one arithmetic expression tree (minitorch.data.ExprTree).

    `leaf`: nn.Linear(1, hidden); `combine`: an nn.ModuleDict with one nn.Linear(2 * hidden,
    hidden) per operator "+", "-", "*"; `out`: nn.Linear(hidden, 1). The encoding of a leaf
    is tanh(leaf([value])); the encoding of an operator node is
    tanh(combine[op](cat([encoding of left, encoding of right]))) (left first). forward(tree)
    returns out(encoding of the root), shape [1]. Every tree builds its own graph.
    """

    def __init__(self, hidden):
        super().__init__()
        ### BEGIN SOLUTION
        self.leaf = nn.Linear(1, hidden)
        self.combine = nn.ModuleDict({op: nn.Linear(2 * hidden, hidden) for op in "+-*"})
        self.out = nn.Linear(hidden, 1)
        ### END SOLUTION

    def encode(self, tree):
        ### BEGIN SOLUTION
        if tree.is_leaf:
            value = minitorch.tensor([tree.value], dtype=self.leaf.weight.dtype)
            return self.leaf(value).tanh()
        both = minitorch.cat([self.encode(tree.left), self.encode(tree.right)])
        return self.combine[tree.op](both).tanh()
        ### END SOLUTION

    def forward(self, tree):
        ### BEGIN SOLUTION
        return self.out(self.encode(tree))
        ### END SOLUTION


# %% ex7_predict_loading
def predict_loading():
    """Your predictions for the targets in `TARGETS`, before running them.

    A dict from each target's key to what `Target(4, 8).load_state_dict(state)` does, where
    `state` is the state_dict of a trained `Source(4, 8)`: "same_output" (loads, and gives
    Source's outputs), "different_output" (loads, but computes something else),
    "missing_keys", "unexpected_keys" or "size_mismatch" (load_state_dict raises, and that is
    what its message complains about). PyTorch and minitorch behave the same.
    """
    ### BEGIN SOLUTION
    return {
        "a": "different_output",
        "b": "same_output",
        "c": "unexpected_keys",
        "d": "size_mismatch",
        "e": "missing_keys",
        "f": "unexpected_keys",
        "g": "same_output",
    }
    ### END SOLUTION
