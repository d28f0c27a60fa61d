"""Plausible wrong answers to notebook 3's exercises: classic student mistakes the graders must
reject.

`WRONG_ANSWERS[grade_id]` lists `WrongAnswer(name, source, why)`; `source` is a complete
replacement for that exercise's solution cell (it defines the same names and may use what the
notebook's setup cell imported: `torch`, `minitorch`, `nn`, `pack_padded_sequence`, ...).
No graded cell uses another exercise's answer, so a wrong answer costs only its own exercise.
`RIGHT_ANSWERS` are different but correct answers (another loop, other names, another way to
select rows), which must keep full marks.
"""

from __future__ import annotations

from typing import NamedTuple


class WrongAnswer(NamedTuple):
    name: str
    source: str
    why: str


_DEPTH_NET_INIT = """\
class DepthNet(nn.Module):
    def __init__(self, features, max_depth, threshold=1.0):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(features, features) for _ in range(max_depth)])
        self.head = nn.Linear(features, 1)
        self.threshold = threshold
        self.depth = 0
"""
_DEPTH_NET_FORWARD = """
    def forward(self, x):
        h = x
        self.depth = 0
        while self.depth < len(self.blocks) and h.norm() > self.threshold:
            h = self.blocks[self.depth](h).tanh()
            self.depth += 1
        return self.head(h)
"""

_DEPTH_NET_PREDICT = """
    def predict_grads(self, inputs):
        deepest = 0
        with minitorch.no_grad():
            for x in inputs:
                self(x)
                deepest = max(deepest, self.depth)
        names = {"head.weight", "head.bias"}
        for i in range(deepest):
            names |= {f"blocks.{i}.weight", f"blocks.{i}.bias"}
        return names
"""

_ROUTER_INIT = """\
class Router(nn.Module):
    def __init__(self, features, out_features, n_branches):
        super().__init__()
        self.branches = nn.ModuleList(
            [nn.Linear(features, out_features) for _ in range(n_branches)]
        )
        self.out_features = out_features
"""

_CLASSIFIER_INIT = """\
class SequenceClassifier(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.rnn = nn.GRU(features, hidden, batch_first=True)
        self.out = nn.Linear(hidden, classes)
"""

_TREE_NET_INIT = """\
class TreeNet(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.leaf = nn.Linear(1, hidden)
        self.combine = nn.ModuleDict({op: nn.Linear(2 * hidden, hidden) for op in "+-*"})
        self.out = nn.Linear(hidden, 1)

    def forward(self, tree):
        return self.out(self.encode(tree))
"""

WRONG_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_depth_net": [
        WrongAnswer(
            "plain_list_of_blocks",
            """\
class DepthNet(nn.Module):
    def __init__(self, features, max_depth, threshold=1.0):
        super().__init__()
        self.blocks = [nn.Linear(features, features) for _ in range(max_depth)]
        self.head = nn.Linear(features, 1)
        self.threshold = threshold
        self.depth = 0
"""
            + _DEPTH_NET_FORWARD
            + """
    def predict_grads(self, inputs):
        deepest = 0
        with minitorch.no_grad():
            for x in inputs:
                self(x)
                deepest = max(deepest, self.depth)
        names = {"head.weight", "head.bias"}
        for i in range(deepest):
            names |= {f"blocks.{i}.weight", f"blocks.{i}.bias"}
        return names
""",
            "the blocks sit in a plain Python list: they are not parameters of the model",
        ),
        WrongAnswer(
            "norm_checked_after_the_block",
            _DEPTH_NET_INIT
            + """
    def forward(self, x):
        h = x
        self.depth = 0
        while self.depth < len(self.blocks):
            h = self.blocks[self.depth](h).tanh()
            self.depth += 1
            if h.norm() <= self.threshold:
                break
        return self.head(h)

    def predict_grads(self, inputs):
        deepest = 0
        with minitorch.no_grad():
            for x in inputs:
                self(x)
                deepest = max(deepest, self.depth)
        names = {"head.weight", "head.bias"}
        for i in range(deepest):
            names |= {f"blocks.{i}.weight", f"blocks.{i}.bias"}
        return names
""",
            "a do-while loop: the first block always runs, even for a small input",
        ),
        WrongAnswer(
            "prediction_from_the_last_pass_only",
            _DEPTH_NET_INIT
            + _DEPTH_NET_FORWARD
            + """
    def predict_grads(self, inputs):
        with minitorch.no_grad():
            self(inputs[-1])
        names = {"head.weight", "head.bias"}
        for i in range(self.depth):
            names |= {f"blocks.{i}.weight", f"blocks.{i}.bias"}
        return names
""",
            "forgets that a gradient stays a tensor after an earlier, deeper pass",
        ),
        WrongAnswer(
            "prediction_every_parameter",
            _DEPTH_NET_INIT
            + _DEPTH_NET_FORWARD
            + """
    def predict_grads(self, inputs):
        return {name for name, _ in self.named_parameters()}
""",
            "assumes every parameter gets a gradient, also blocks no pass ran",
        ),
        WrongAnswer(
            "runs_a_block_at_the_threshold",
            _DEPTH_NET_INIT
            + """
    def forward(self, x):
        h = x
        self.depth = 0
        while self.depth < len(self.blocks) and h.norm() >= self.threshold:
            h = self.blocks[self.depth](h).tanh()
            self.depth += 1
        return self.head(h)
"""
            + _DEPTH_NET_PREDICT,
            "a boundary mistake: an input whose norm is exactly the threshold runs a block",
        ),
    ],
    "ex2_router": [
        WrongAnswer(
            "route_of_the_first_sample",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        return self.branches[int(route[0])](x)
""",
            "routes the whole batch by its first sample: per-batch, not per-sample, routing",
        ),
        WrongAnswer(
            "every_branch_then_mask",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        out = minitorch.zeros(x.shape[0], self.out_features, dtype=x.dtype)
        for k, branch in enumerate(self.branches):
            mask = (route == k).to(x.dtype).unsqueeze(1)
            out = out + mask * branch(x)
        return out
""",
            "runs every branch on every sample and masks afterwards: right values, but unused "
            "branches get zero gradients instead of none, and it costs n_branches times more",
        ),
        WrongAnswer(
            "concatenated_in_branch_order",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        parts = []
        for k, branch in enumerate(self.branches):
            mask = route == k
            if mask.any():
                parts.append(branch(x[mask]))
        return minitorch.cat(parts)
""",
            "concatenates the branches' outputs without putting the rows back in sample order",
        ),
        WrongAnswer(
            "every_branch_on_the_whole_batch",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        out = minitorch.zeros(x.shape[0], self.out_features, dtype=x.dtype)
        for k, branch in enumerate(self.branches):
            mask = route == k
            if mask.any():
                out = out + mask.to(x.dtype).unsqueeze(1) * branch(x)
        return out
""",
            "skips unused branches, so values and gradients are right, but every used branch "
            "runs on the whole batch and the mask throws most rows away: n_branches times the "
            "work the statement allows",
        ),
        WrongAnswer(
            "loop_over_samples",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        rows = [self.branches[k](x[i]) for i, k in enumerate(route.tolist())]
        return minitorch.stack(rows)
""",
            "the per-sample loop the exercise replaces: right values and gradients, one small "
            "pass per sample",
        ),
        WrongAnswer(
            "float32_output_buffer",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        out = minitorch.zeros(x.shape[0], self.out_features)
        for k, branch in enumerate(self.branches):
            mask = route == k
            if mask.any():
                out[mask] = branch(x[mask])
        return out
""",
            "makes the output in the default float32 while the model and x are float64",
        ),
    ],
    "ex3_summarize": [
        WrongAnswer(
            "off_by_one_last_step",
            """\
def summarize(lib, output, lengths):
    batch, steps, _ = output.shape
    last = output[lib.arange(batch), lengths.clamp(max=steps - 1)]
    valid = lib.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)
    total = (output * valid.unsqueeze(2).to(output.dtype)).sum(dim=1)
    mean = total / lengths.unsqueeze(1).to(output.dtype)
    return last, mean
""",
            "takes the step at index lengths (the first padded one) instead of lengths - 1",
        ),
        WrongAnswer(
            "last_padded_step",
            """\
def summarize(lib, output, lengths):
    batch, steps, _ = output.shape
    last = output[:, -1]
    valid = lib.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)
    total = (output * valid.unsqueeze(2).to(output.dtype)).sum(dim=1)
    mean = total / lengths.unsqueeze(1).to(output.dtype)
    return last, mean
""",
            "takes the last step of the padded tensor, which is padding for short sequences",
        ),
        WrongAnswer(
            "mask_after_the_mean",
            """\
def summarize(lib, output, lengths):
    batch, steps, _ = output.shape
    last = output[lib.arange(batch), lengths - 1]
    mean = output.mean(dim=1) * (lengths > 0).unsqueeze(1).to(output.dtype)
    return last, mean
""",
            "averages over every step, padding included, and masks the result afterwards",
        ),
        WrongAnswer(
            "divides_by_the_padded_length",
            """\
def summarize(lib, output, lengths):
    batch, steps, _ = output.shape
    last = output[lib.arange(batch), lengths - 1]
    valid = lib.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)
    mean = (output * valid.unsqueeze(2).to(output.dtype)).mean(dim=1)
    return last, mean
""",
            "masks the padding, then averages over all steps: divides by the padded length",
        ),
        WrongAnswer(
            "loop_over_the_batch",
            """\
def summarize(lib, output, lengths):
    last = lib.stack([output[i, n - 1] for i, n in enumerate(lengths.tolist())])
    mean = lib.stack([output[i, :n].mean(0) for i, n in enumerate(lengths.tolist())])
    return last, mean
""",
            "right values and gradients, but one slice per sequence: a loop over the batch "
            "where the statement asks for one vectorized computation",
        ),
        WrongAnswer(
            "zeroes_the_padding_in_place",
            """\
def summarize(lib, output, lengths):
    batch, steps, _ = output.shape
    last = output[lib.arange(batch), lengths - 1]
    valid = lib.arange(steps).unsqueeze(0) < lengths.unsqueeze(1)
    output[~valid] = 0.0
    mean = output.sum(dim=1) / lengths.unsqueeze(1).to(output.dtype)
    return last, mean
""",
            "right values and gradients, but it writes zeros into the caller's padded tensor",
        ),
    ],
    "ex4_sequence_classifier": [
        WrongAnswer(
            "no_packing",
            _CLASSIFIER_INIT
            + """
    def forward(self, padded, lengths):
        _, h_n = self.rnn(padded)
        return self.out(h_n[-1])
""",
            "runs the GRU over the padding too: h_n is the state after the padded steps",
        ),
        WrongAnswer(
            "last_column_of_the_unpacked_output",
            _CLASSIFIER_INIT
            + """
    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        output, _ = self.rnn(packed)
        output, _ = pad_packed_sequence(output, batch_first=True)
        return self.out(output[:, -1])
""",
            "the last column of the unpacked output is zeros for every short sequence",
        ),
        WrongAnswer(
            "packed_as_if_sorted",
            _CLASSIFIER_INIT
            + """
    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True)
        _, h_n = self.rnn(packed)
        return self.out(h_n[-1])
""",
            "keeps enforce_sorted=True: packing refuses a batch whose lengths are not sorted",
        ),
    ],
    "ex5_fixed_mlp": [
        WrongAnswer(
            "plain_list_of_layers",
            """\
class FixedMLP(nn.Module):
    def __init__(self, features, width, classes, depth):
        super().__init__()
        sizes = [features] + [width] * depth
        self.hidden = [nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])]
        self.out = nn.Linear(sizes[-1], classes)

    def forward(self, x):
        for layer in self.hidden:
            x = layer(x).relu()
        return self.out(x)
""",
            "a plain Python list: the hidden layers are neither parameters nor in state_dict",
        ),
        WrongAnswer(
            "output_layer_created_per_call",
            """\
class FixedMLP(nn.Module):
    def __init__(self, features, width, classes, depth):
        super().__init__()
        sizes = [features] + [width] * depth
        self.hidden = nn.ModuleList([nn.Linear(a, b) for a, b in zip(sizes, sizes[1:])])
        self.sizes = (sizes[-1], classes)

    def forward(self, x):
        for layer in self.hidden:
            x = layer(x).relu()
        return nn.Linear(*self.sizes)(x)
""",
            "the output layer is still created in forward: new random weights at every call",
        ),
        WrongAnswer(
            "sequential_with_relu_modules",
            """\
class FixedMLP(nn.Module):
    def __init__(self, features, width, classes, depth):
        super().__init__()
        sizes = [features] + [width] * depth
        layers = []
        for a, b in zip(sizes, sizes[1:]):
            layers += [nn.Linear(a, b), nn.ReLU()]
        self.hidden = nn.Sequential(*layers)
        self.out = nn.Linear(sizes[-1], classes)

    def forward(self, x):
        return self.out(self.hidden(x))
""",
            "right computation, but the ReLU modules shift the keys (hidden.2.weight): "
            "checkpoints saved with the expected names no longer load",
        ),
    ],
    "ex6_tree_net": [
        WrongAnswer(
            "children_swapped",
            _TREE_NET_INIT
            + """
    def encode(self, tree):
        if tree.is_leaf:
            value = minitorch.tensor([tree.value], dtype=self.leaf.weight.dtype)
            return self.leaf(value).tanh()
        both = minitorch.cat([self.encode(tree.right), self.encode(tree.left)])
        return self.combine[tree.op](both).tanh()
""",
            "puts the right child first: a - b and b - a get the same encoding",
        ),
        WrongAnswer(
            "children_detached",
            _TREE_NET_INIT
            + """
    def encode(self, tree):
        if tree.is_leaf:
            value = minitorch.tensor([tree.value], dtype=self.leaf.weight.dtype)
            return self.leaf(value).tanh()
        left, right = self.encode(tree.left).detach(), self.encode(tree.right).detach()
        return self.combine[tree.op](minitorch.cat([left, right])).tanh()
""",
            "detaches the children: right values, but gradients stop at the root's operator",
        ),
        WrongAnswer(
            "leaf_without_tanh",
            _TREE_NET_INIT
            + """
    def encode(self, tree):
        if tree.is_leaf:
            value = minitorch.tensor([tree.value], dtype=self.leaf.weight.dtype)
            return self.leaf(value)
        both = minitorch.cat([self.encode(tree.left), self.encode(tree.right)])
        return self.combine[tree.op](both).tanh()
""",
            "forgets the tanh on the leaves",
        ),
        WrongAnswer(
            "leaf_value_in_float32",
            _TREE_NET_INIT
            + """
    def encode(self, tree):
        if tree.is_leaf:
            return self.leaf(minitorch.tensor([tree.value])).tanh()
        both = minitorch.cat([self.encode(tree.left), self.encode(tree.right)])
        return self.combine[tree.op](both).tanh()
""",
            "makes the leaf's value a float32 tensor whatever the dtype of the model",
        ),
    ],
    "ex7_predict_loading": [
        WrongAnswer(
            "forward_is_saved",
            """\
def predict_loading():
    return {
        "a": "different_output",
        "b": "different_output",
        "c": "unexpected_keys",
        "d": "size_mismatch",
        "e": "missing_keys",
        "f": "unexpected_keys",
        "g": "different_output",
    }
""",
            "believes any change to forward changes the outputs, even an equivalent one",
        ),
        WrongAnswer(
            "plain_list_loads",
            """\
def predict_loading():
    return {
        "a": "different_output",
        "b": "same_output",
        "c": "same_output",
        "d": "size_mismatch",
        "e": "missing_keys",
        "f": "missing_keys",
        "g": "same_output",
    }
""",
            "thinks layers in a plain list or built in forward are part of the state_dict",
        ),
        WrongAnswer(
            "the_if_changes_the_output",
            """\
def predict_loading():
    return {
        "a": "different_output",
        "b": "same_output",
        "c": "unexpected_keys",
        "d": "size_mismatch",
        "e": "missing_keys",
        "f": "unexpected_keys",
        "g": "different_output",
    }
""",
            "6 of 7 right: believes the added `if` changes the outputs, though h never gets near "
            "the bound; it earns 6/7 of the points",
        ),
    ],
}


# Different but correct answers: each must earn full marks (tests/test_graders_common.py).
RIGHT_ANSWERS: dict[str, list[WrongAnswer]] = {
    "ex1_depth_net": [
        WrongAnswer(
            "for_loop_with_break",
            _DEPTH_NET_INIT
            + """
    def forward(self, x):
        h, self.depth = x, 0
        for block in self.blocks:
            if not h.norm() > self.threshold:
                break
            h = block(h).tanh()
            self.depth += 1
        return self.head(h)

    def predict_grads(self, inputs):
        depths = []
        with minitorch.no_grad():
            for x in inputs:
                self(x)
                depths.append(self.depth)
        used = ["head"] + [f"blocks.{i}" for i in range(max(depths))]
        return frozenset(f"{module}.{p}" for module in used for p in ("weight", "bias"))
""",
            "a for loop over the blocks with a break, and a frozenset of names",
        ),
    ],
    "ex2_router": [
        WrongAnswer(
            "matmul_and_bias",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        out = x.new_zeros(x.shape[0], self.out_features)
        for k, branch in enumerate(self.branches):
            mask = route == k
            if bool(mask.any()):
                out[mask] = x[mask] @ branch.weight.t() + branch.bias
        return out
""",
            "the branch written out as a matmul and an add (two ops per branch), into x.new_zeros",
        ),
        WrongAnswer(
            "concatenate_then_reorder",
            _ROUTER_INIT
            + """
    def forward(self, x, route):
        positions = minitorch.arange(x.shape[0])
        parts, order = [], []
        for k, branch in enumerate(self.branches):
            mask = route == k
            if mask.any():
                parts.append(branch(x[mask]))
                order.append(positions[mask])
        order = minitorch.cat(order)
        where = minitorch.zeros(x.shape[0], dtype=order.dtype)
        where[order] = positions
        return minitorch.cat(parts)[where]
""",
            "runs each branch on its rows, concatenates, then puts the rows back in order",
        ),
    ],
    "ex3_summarize": [
        WrongAnswer(
            "one_hot_and_where",
            """\
def summarize(lib, output, lengths):
    steps = output.shape[1]
    position = lib.arange(steps).unsqueeze(0)
    is_last = (position == (lengths - 1).unsqueeze(1)).unsqueeze(2)
    last = lib.where(is_last, output, lib.zeros_like(output)).sum(dim=1)
    valid = (position < lengths.unsqueeze(1)).unsqueeze(2)
    mean = lib.where(valid, output, lib.zeros_like(output)).sum(dim=1) / lengths.unsqueeze(1)
    return last, mean
""",
            "selects with where and a one-hot mask; divides by the int64 lengths (promoted)",
        ),
        WrongAnswer(
            "masked_fill_copy",
            """\
def summarize(lib, output, lengths):
    batch, steps, _ = output.shape
    padding = lib.arange(steps).unsqueeze(0) >= lengths.unsqueeze(1)
    total = output.masked_fill(padding.unsqueeze(2), 0.0).sum(dim=1)
    last = output[lib.arange(batch), lengths - 1]
    return last, total / lengths.to(output.dtype).unsqueeze(1)
""",
            "an out-of-place masked_fill: the input is left as it was",
        ),
    ],
    "ex4_sequence_classifier": [
        WrongAnswer(
            "unpacked_output_at_the_last_step",
            """\
class SequenceClassifier(nn.Module):
    def __init__(self, features, hidden, classes):
        super().__init__()
        self.gru = nn.GRU(features, hidden, batch_first=True)
        self.classify = nn.Linear(hidden, classes)

    def forward(self, padded, lengths):
        packed = pack_padded_sequence(padded, lengths, batch_first=True, enforce_sorted=False)
        output, _ = self.gru(packed)
        output, _ = pad_packed_sequence(output, batch_first=True)
        last = output[minitorch.arange(output.shape[0]), lengths - 1]
        return self.classify(last)
""",
            "other names; reads each sequence's last valid step of the unpacked output, which "
            "is h_n",
        ),
    ],
    "ex5_fixed_mlp": [
        WrongAnswer(
            "appended_in_a_loop",
            """\
class FixedMLP(nn.Module):
    def __init__(self, features, width, classes, depth):
        super().__init__()
        self.hidden = nn.ModuleList()
        size = features
        for _ in range(depth):
            self.hidden.append(nn.Linear(size, width))
            size = width
        self.out = nn.Linear(size, classes)

    def forward(self, x):
        for layer in self.hidden:
            x = nn.functional.relu(layer(x))
        return self.out(x)
""",
            "the ModuleList filled with append, and the functional relu",
        ),
    ],
    "ex6_tree_net": [
        WrongAnswer(
            "iterative_post_order",
            _TREE_NET_INIT
            + """
    def encode(self, tree):
        done, to_visit = {}, [tree]
        while to_visit:
            node = to_visit[-1]
            if node.is_leaf:
                value = minitorch.tensor([node.value], dtype=self.leaf.weight.dtype)
                done[id(node)] = self.leaf(value).tanh()
                to_visit.pop()
            elif id(node.left) in done and id(node.right) in done:
                both = minitorch.cat((done[id(node.left)], done[id(node.right)]))
                done[id(node)] = self.combine[node.op](both).tanh()
                to_visit.pop()
            else:
                to_visit += [node.right, node.left]
        return done[id(tree)]
""",
            "an explicit stack instead of recursion",
        ),
    ],
    "ex7_predict_loading": [
        WrongAnswer(
            "dict_from_zip",
            """\
def predict_loading():
    outcomes = ["different_output", "same_output", "unexpected_keys", "size_mismatch"]
    outcomes += ["missing_keys", "unexpected_keys", "same_output"]
    return dict(zip("abcdefg", outcomes))
""",
            "the same predictions, built another way",
        ),
    ],
}
