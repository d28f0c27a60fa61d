"""Pairs of students whose answers look copied: `python -m solutions similarity ASSIGNMENT`.

In the spirit of MOSS, for the answer (solution) cells of every submission:

1. **Normalize** a cell on its Python syntax tree: docstrings, comments and layout go; the names
   the cell binds (variables, parameters, its functions and classes) become v0, v1, ... in order
   of first appearance, while attributes, builtins and outside names (torch, minitorch, math,
   `collect_nodes`) stay; string and number constants stay. Consecutive statements with no
   data dependency between them are put in a canonical order first, so swapping two of them
   changes nothing. A cell that is not valid Python is normalized token by token instead; so
   is one too deep for the parser, after its longest lines are set aside (see `_parse`).
2. **Fingerprint** a cell: the set of its k-grams (K normalized tokens in a row), with the
   renamed names of each k-gram numbered afresh inside it (`v1 = v0 + v1` whatever the cell's
   numbering), so that a dummy variable or a block of padding before the copied code, which
   shifts the numbering of every later name, does not hide a copy. The k-grams of the
   reference answer and of the blank release stub are removed: what every student received,
   or may hand in without copying anyone, makes nobody alike; a blank cell or the reference
   answer has an empty fingerprint and matches no one.
3. **Score** a pair of students by containment, cell by cell: the k-grams the two have in
   common, over the k-grams of the smaller of the two answers, summed over the cells where
   both wrote something of their own (so larger answers weigh more). Text added to a copied
   cell (a line of 400 numbers, a block of unrelated code) grows the copy, not the smaller
   side, so it cannot dilute the score as it did a Jaccard index. A pair is flagged when its
   score reaches the threshold (DEFAULT_THRESHOLD: at least 80% of the smaller answers found in
   the other's) and it has at least MIN_SHARED k-grams in common (about eight lines of
   identical code of their own): two students whose only own code is the same short loop, or
   who hand in the reference with a few touches of their own, are not flagged.
4. **Report what is too short to weigh**: a pair that reaches the threshold with fewer than
   MIN_SHARED k-grams in common is not flagged, but listed apart, "too short to weigh", for a
   person to read: students whose own answers are identical after normalization (two
   byte-identical notebooks, answers of a few lines) as one group, the other pairs one by one.
   Blank answers and the reference have nothing of their own, so they are never listed.

Every step is linear in the size of a cell (times its block depth, which Python's tokenizer
bounds at 100): the canonical order is a topological sort over the statements' data
dependencies (each statement linked to the last one that bound a name it uses, not to every
earlier one), and a statement's sort key reads at most KEY_NODES nodes of it. Each student is
read (as admission reads a submission: bounded, answer cells by the release's roles) and
fingerprinted inside their own failure boundary: a notebook admission cannot read, a cell the
parser or the normalizer cannot handle (MemoryError, RecursionError) costs that student that
notebook or that cell, listed with the reason under "not compared", and the others are compared
as usual.

It must run in the main thread, as `similarity` and `grade` run it: CPython 3.11's parser
(`ast.parse`) is not safe to call from several threads at once ("SystemError: AST constructor
recursion depth mismatch" was seen in a grading run), and this module parses every answer.

The report flags and never deducts: nothing here touches the gradebook. It cannot see copying
that was rewritten by hand (a loop turned into a comprehension), nor junk statements
interleaved line by line with the copied ones, and one copied exercise in an otherwise honest
notebook weighs little in the pair's score (its cell score shows it).
"""

from __future__ import annotations

import ast
import builtins
import copy
import heapq
import html
import io
import keyword
import re
import tokenize
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearSolutions

from solutions.instructor import admission
from solutions.instructor.admission import valid_text
from solutions.instructor.course import Course
from solutions.reference_cells import NOTEBOOKS, reference_cells

K = 5  # tokens per k-gram
# A pair is flagged at this score: the share of the smaller answers' own k-grams (outside the
# reference and the stub) found in the other student's answers to the same cells.
DEFAULT_THRESHOLD = 0.8
MIN_SHARED = 60  # k-grams in common, outside the reference, before a pair can be flagged
KEY_NODES = 64  # syntax-tree nodes of a statement its canonical-order key reads, at most
MAX_DEPTH = 120  # deeper expressions are unparsed as "..." (ast.unparse recurses)
MAX_SHORT_LISTED = 20  # pairs too short to weigh listed in the text table (all in the page)
LONG_LINE = 400  # tokens: a line the parser cannot nest is set aside when it has more

_BUILTINS = frozenset(dir(builtins))
_RENAMED = re.compile(r"v\d+")
# Where a node of each kind keeps a name the cell may bind.
_NAME_SLOTS = {
    ast.Name: "id",
    ast.arg: "arg",
    ast.FunctionDef: "name",
    ast.AsyncFunctionDef: "name",
    ast.ClassDef: "name",
    ast.ExceptHandler: "name",
}
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_JUMPS = (ast.Return, ast.Raise, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.Await,
          ast.Global, ast.Nonlocal)  # fmt: skip
_LAYOUT = {tokenize.NEWLINE: "<newline>", tokenize.INDENT: "<indent>", tokenize.DEDENT: "<dedent>"}
_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)  # what ast.parse raises


# --- normalization ----------------------------------------------------------------------------
def normalize(source: str, work: Counter | None = None) -> list[str]:
    """The normalized tokens of a code cell (see the module docstring); never raises but for
    MemoryError. `work`, when given, counts what the canonical order did (statements ordered,
    keys computed, key_nodes read, dependency edges, nodes visited): near-linear in the cell.

    Layout tokens read "<newline>", "<indent>" and "<dedent>". IPython magics and shell escapes
    (lines starting with % or !) are dropped.
    """
    code = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line
        for line in valid_text(source).splitlines()
    )
    tree = _parse(code)
    if tree is not None:
        try:
            _Canonicalizer(Counter() if work is None else work).visit(tree)
            return [_text(token) for token in _tokens(ast.unparse(tree))]
        except (ValueError, RecursionError):
            pass
    return _normalize_tokens(code)


def _parse(code: str) -> ast.Module | None:
    """The syntax tree of `code`, None when it is not Python. Nesting too deep for CPython's
    parser (200,000 unary minuses: MemoryError; a sum of 3,000 terms: RecursionError) is in
    long lines: those over LONG_LINE tokens are then read as `...` and the rest is parsed, so
    that one such line added to a copied cell does not send the whole cell to the token-level
    normalization."""
    try:
        return ast.parse(code)
    except (SyntaxError, ValueError):
        return None
    except (RecursionError, MemoryError):
        pass
    try:
        return ast.parse(_without_long_lines(code))
    except _UNPARSABLE:
        return None


def _without_long_lines(code: str) -> str:
    """`code` with each logical line of more than LONG_LINE tokens replaced by `...` (by
    `if ...:` when it opens a block), at its indentation."""
    lines = code.split("\n")
    start, count, last = None, 0, ""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in _SKIPPED or token.type in (tokenize.INDENT, tokenize.DEDENT):
                continue
            if token.type == tokenize.NEWLINE:
                if start is not None and count > LONG_LINE:
                    first = lines[start - 1]
                    indent = first[: len(first) - len(first.lstrip())]
                    lines[start - 1] = indent + ("if ...:" if last == ":" else "...")
                    for row in range(start, token.start[0]):
                        lines[row] = ""
                start, count = None, 0
                continue
            start = token.start[0] if start is None else start
            count, last = count + 1, token.string
    except (tokenize.TokenError, SyntaxError):
        pass
    return "\n".join(lines)


def _normalize_tokens(code: str) -> list[str]:
    """Token-level fallback: comments dropped, every name that is not a keyword, a builtin or
    an attribute renamed v0, v1, ... in order of first appearance."""
    names: dict[str, str] = {}
    normalized, previous = [], ""
    for token in _tokens(code):
        text = _text(token)
        is_name = token.type == tokenize.NAME and not keyword.iskeyword(text)
        if is_name and text not in _BUILTINS and previous != ".":
            text = names.setdefault(text, f"v{len(names)}")
        normalized.append(text)
        previous = token.string
    return normalized


def _tokens(code: str) -> Iterator[tokenize.TokenInfo]:
    """The tokens of `code` without comments and blank lines, up to the first unreadable one."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type not in _SKIPPED:
                yield token
    except (tokenize.TokenError, SyntaxError):
        return


def _text(token: tokenize.TokenInfo) -> str:
    return _LAYOUT.get(token.type, token.string)


def _child_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """The node's children in field order, without the Load/Store/Del markers."""
    for name in node._fields:
        value = getattr(node, name, None)
        if isinstance(value, list):
            yield from (child for child in value if isinstance(child, ast.AST))
        elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
            yield value


@dataclass
class _Effects:
    """What a statement binds and reads, by name (of a nested function or class: its name)."""

    binds: set[str] = field(default_factory=set)
    reads: set[str] = field(default_factory=set)
    jumps: bool = False  # returns, raises, breaks, ...: keeps its place among its neighbours
    size: int = 0  # syntax-tree nodes

    def add(self, inner: _Effects) -> None:
        self.binds |= inner.binds
        self.reads |= inner.reads
        self.jumps |= inner.jumps
        self.size += inner.size


def _prepare(tree: ast.Module) -> tuple[set[str], dict[int, _Effects]]:
    """In one walk of `tree`: drop the docstrings; find the names the cell binds (assigned,
    parameters, its functions and classes, exception names) except imported names and
    builtins, which are the names that get renamed; and id(statement) -> the _Effects of every
    statement, each node read once, under its innermost statement, which hands its sets up
    (a function or class hands up only its name: its body runs later)."""
    bound, imported = set(), set()
    found: dict[int, _Effects] = {}
    inside = [_Effects()]  # the effects of the statements being walked, innermost last
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, leaving = stack.pop()
        if leaving:
            effects = inside.pop()
            if isinstance(node, _DEFINITIONS):
                effects = _Effects({node.name}, set(), False, effects.size)
            found[id(node)] = effects
            inside[-1].add(effects)
            continue
        if isinstance(node, ast.stmt):
            inside.append(_Effects())
            stack.append((node, True))
        effects = inside[-1]
        effects.size += 1
        if isinstance(node, (ast.Module, *_DEFINITIONS)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):  # a docstring
                    node.body = node.body[1:]
        slot = _NAME_SLOTS.get(type(node))
        if slot and getattr(node, slot) and not isinstance(getattr(node, "ctx", None), ast.Load):
            bound.add(getattr(node, slot))
        effects.jumps |= isinstance(node, _JUMPS)
        if isinstance(node, ast.Name):
            (effects.reads if isinstance(node.ctx, ast.Load) else effects.binds).add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            effects.reads.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [(alias.asname or alias.name).split(".")[0] for alias in node.names]
            imported.update(names)
            effects.binds.update(names)
        for name in node._fields:  # the children (inline: this loop is the hot one)
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend((child, False) for child in value if isinstance(child, ast.AST))
            elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                stack.append((value, False))
    return bound - imported - _BUILTINS, found


class _Canonicalizer:
    """Renames the bound names v0, v1, ... in order of first appearance, walking the tree in
    field order; each block of statements is put in canonical order before it is walked.
    Iterative (a deep expression cannot overflow the stack); an expression deeper than
    MAX_DEPTH is replaced by `...` so that ast.unparse, which recurses, can write the tree."""

    def __init__(self, work: Counter) -> None:
        self.names: dict[str, str] = {}
        self.work = work

    def visit(self, tree: ast.Module) -> None:
        self.renamable, self.effects = _prepare(tree)
        stack: list[tuple[ast.AST, str | None, int]] = [(tree, None, 0)]
        while stack:
            node, block, depth = stack.pop()
            if block is not None:  # order the block `node.<block>` now, then walk it
                ordered = self._canonical_order(getattr(node, block))
                setattr(node, block, ordered)
                stack.extend((child, None, depth) for child in reversed(ordered))
                continue
            self.work["nodes"] += 1
            slot = _NAME_SLOTS.get(type(node))
            if slot and getattr(node, slot) in self.renamable:
                name = getattr(node, slot)
                setattr(node, slot, self.names.setdefault(name, f"v{len(self.names)}"))
            todo: list[tuple[ast.AST, str | None, int]] = []
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, list):
                    if len(value) > 1 and isinstance(value[0], ast.stmt):
                        todo.append((node, name, depth + 1))
                        continue
                    for index, child in enumerate(value):
                        if isinstance(child, ast.AST):
                            value[index] = child = self._shallow(child, depth + 1)
                            todo.append((child, None, depth + 1))
                elif isinstance(value, ast.AST) and not isinstance(value, ast.expr_context):
                    value = self._shallow(value, depth + 1)
                    setattr(node, name, value)
                    todo.append((value, None, depth + 1))
            stack.extend(reversed(todo))

    @staticmethod
    def _shallow(node: ast.AST, depth: int) -> ast.AST:
        """`node`, or `...` for an expression ast.unparse cannot write: deeper than MAX_DEPTH,
        or an int of more digits than Python writes (a hexadecimal literal can be longer)."""
        if isinstance(node, ast.expr) and (depth > MAX_DEPTH or _huge(node)):
            return ast.Constant(value=...)
        return node

    def _canonical_order(self, statements: list[ast.stmt]) -> list[ast.stmt]:
        """The statements in canonical order: a statement comes after every earlier one it
        conflicts with (binds a name the other binds or reads, or reads a name the other
        binds; a jump conflicts with all); among those free to go next, the smallest key goes
        first. Each statement is linked only to the last statement that bound each name it
        uses, to the statements that read a name since it was last bound, and to the last
        jump: the same order as linking every conflicting pair, in linear time."""
        effects = [self.effects[id(statement)] for statement in statements]
        before: list[set[int]] = [set() for _ in statements]
        bound: dict[str, int] = {}  # name -> the last statement that bound it
        readers: dict[str, list[int]] = {}  # name -> statements that read it since
        jump, since_jump = None, []
        for j, effect in enumerate(effects):
            if jump is not None:
                before[j].add(jump)
            if effect.jumps:
                before[j].update(since_jump)
                jump, since_jump = j, []
            else:
                since_jump.append(j)
            for name in effect.reads:
                if name in bound:
                    before[j].add(bound[name])
            for name in effect.binds:
                if name in bound:
                    before[j].add(bound[name])
                before[j].update(readers.pop(name, ()))
            for name in effect.binds:
                bound[name] = j
            for name in effect.reads:
                readers.setdefault(name, []).append(j)
            self.work["names"] += len(effect.reads) + len(effect.binds)
            self.work["edges"] += len(before[j])
        keys = [
            (self.key(statement), effect.size) for statement, effect in zip(statements, effects)
        ]
        after: list[list[int]] = [[] for _ in statements]
        waiting = [len(earlier) for earlier in before]
        for j, earlier in enumerate(before):
            for i in earlier:
                after[i].append(j)
        free = [(keys[j], j) for j in range(len(statements)) if not waiting[j]]
        heapq.heapify(free)
        placed: list[ast.stmt] = []
        while free:
            _, i = heapq.heappop(free)
            placed.append(statements[i])
            for j in after[i]:
                waiting[j] -= 1
                if not waiting[j]:
                    heapq.heappush(free, (keys[j], j))
        self.work["statements"] += len(statements)
        return placed

    def key(self, statement: ast.stmt) -> str:
        """The first KEY_NODES nodes of the statement, in field order, with names already
        renamed shown renamed and other bound names as "_": the same for a statement and its
        renamed copy, whatever order they came in."""
        self.work["keys"] += 1
        labels: list[str] = []
        stack: list[Iterator[ast.AST]] = [iter((statement,))]
        while stack and len(labels) < KEY_NODES:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
            else:
                labels.append(self._label(node))
                stack.append(_child_nodes(node))
        self.work["key_nodes"] += len(labels)
        return " ".join(labels)

    def _label(self, node: ast.AST) -> str:
        """The node's kind, its name (shown as in `key`) and its constants (their start)."""
        parts = [type(node).__name__]
        slot = _NAME_SLOTS.get(type(node))
        for name in node._fields:
            value = getattr(node, name, None)
            if name == slot and value in self.renamable:
                value = self.names.get(value, "_")
            if isinstance(value, (str, bytes)):
                value = value[:32]
            elif name == "value" and _huge(node):
                value = ...
            if not isinstance(value, (ast.AST, list)):
                parts.append(repr(value))
        return ":".join(parts)


def _huge(node: ast.AST) -> bool:
    """An int constant too long for repr() (Python writes at most 4,300 digits by default)."""
    return (
        isinstance(node, ast.Constant)
        and type(node.value) is int
        and (node.value.bit_length() > 14_000)
    )


# --- fingerprints and scores ------------------------------------------------------------------
def kgrams(tokens: list[str], k: int = K) -> set[tuple[str, ...]]:
    """Every run of `k` consecutive tokens (the whole list when it is shorter but not empty),
    with its renamed names numbered afresh inside it, in order of appearance: a k-gram reads
    the same wherever the cell's numbering started."""
    if not tokens:
        return set()
    renamed = [bool(_RENAMED.fullmatch(token)) for token in tokens]
    found = set()
    for i in range(max(len(tokens) - k + 1, 1)):
        window = tokens[i : i + k]
        if any(renamed[i : i + k]):
            local: dict[str, str] = {}
            window = [
                local.setdefault(token, f"v{len(local)}") if renamed[i + j] else token
                for j, token in enumerate(window)
            ]
        found.add(tuple(window))
    return found


def fingerprint(source: str) -> set[tuple[str, ...]]:
    """The k-grams of a normalized cell (see `kgrams`)."""
    return kgrams(normalize(source))


@dataclass
class Pair:
    """Two students and how alike their answers are (0: nothing in common, 1: the smaller
    answers are found whole in the other's)."""

    first: str
    second: str
    score: float
    shared: int  # k-grams in common outside the reference
    # grade_id -> score of the cells where either student wrote something of their own
    cells: dict[str, float] = field(default_factory=dict)


Prints = dict[str, dict[str, set[tuple[str, ...]]]]  # student -> grade_id -> fingerprint


def fingerprints(
    answers: dict[str, dict[str, str]], given: dict[str, list[str]]
) -> tuple[Prints, dict[str, list[str]]]:
    """Each student's fingerprint of each answer cell, less the k-grams of what anyone may hand
    in (`given`, see `compare`); and student -> why a cell of theirs has none (too large, or
    the normalizer failed on it): each cell is fingerprinted inside its student's boundary."""
    ignored = {
        grade_id: set().union(*(fingerprint(source) for source in sources))
        for grade_id, sources in given.items()
    }
    prints: Prints = {}
    problems: dict[str, list[str]] = {}
    for student, cells in answers.items():
        prints[student] = {}
        for grade_id, source in cells.items():
            if len(source) > admission.MAX_CELL_CHARS:
                problem = f"{len(source):,} characters (the limit is {admission.MAX_CELL_CHARS:,})"
            else:
                try:
                    prints[student][grade_id] = fingerprint(source) - ignored.get(grade_id, set())
                    continue
                except Exception as error:  # noqa: BLE001 - the student's failure boundary
                    problem = f"could not be normalized ({type(error).__name__})"
            problems.setdefault(student, []).append(f"{grade_id}: {problem}")
    return prints, problems


def score_pairs(prints: Prints) -> list[Pair]:
    """Score every pair of students (see the module docstring), strongest first."""
    pairs = []
    for first, second in combinations(sorted(prints), 2):
        pair, common, smaller = Pair(first, second, 0.0, 0), 0, 0
        for grade_id in {**prints[first], **prints[second]}:  # in notebook order
            a, b = prints[first].get(grade_id, set()), prints[second].get(grade_id, set())
            if a or b:
                both, least = len(a & b), min(len(a), len(b))
                pair.cells[grade_id] = both / least if least else 0.0
                common, smaller = common + both, smaller + least
        pair.score, pair.shared = (common / smaller if smaller else 0.0), common
        pairs.append(pair)
    return sorted(pairs, key=lambda pair: -pair.score)


def compare(answers: dict[str, dict[str, str]], given: dict[str, list[str]]) -> list[Pair]:
    """Score every pair of students, strongest first.

    `answers` maps student -> grade_id -> source of each answer cell; `given` maps grade_id ->
    the sources anyone may hand in without copying (the reference answer, the blank stub),
    whose k-grams are ignored.
    """
    return score_pairs(fingerprints(answers, given)[0])


def flagged(pairs: list[Pair], threshold: float = DEFAULT_THRESHOLD) -> list[Pair]:
    """The pairs that reach `threshold` with at least MIN_SHARED k-grams in common."""
    return [pair for pair in pairs if pair.score >= threshold and pair.shared >= MIN_SHARED]


@dataclass
class Identical:
    """Students whose own answers are the same after normalization (see `too_short`): the
    cells they wrote something of their own in, and the k-grams of those answers."""

    students: list[str]
    cells: list[str]
    shared: int


def too_short(
    prints: Prints, pairs: list[Pair], threshold: float = DEFAULT_THRESHOLD
) -> tuple[list[Identical], list[Pair]]:
    """What reaches `threshold` with fewer than MIN_SHARED k-grams in common (so `flagged`
    leaves it out): the groups of students whose own answers are identical (every cell where
    one of them wrote something of their own has the same fingerprint), and the other such
    pairs, strongest first. A student with nothing of their own is in no group."""
    groups: dict[tuple, list[str]] = {}
    for student in sorted(prints):
        own = tuple(sorted((g, frozenset(p)) for g, p in prints[student].items() if p))
        if own:
            groups.setdefault(own, []).append(student)
    identical = [
        Identical(students, [grade_id for grade_id, _ in own], sum(len(p) for _, p in own))
        for own, students in groups.items()
        if len(students) > 1 and sum(len(p) for _, p in own) < MIN_SHARED and threshold <= 1
    ]
    grouped = {frozenset(group.students) for group in identical}
    others = [
        pair
        for pair in pairs
        if pair.score >= threshold
        and 0 < pair.shared < MIN_SHARED
        and not any({pair.first, pair.second} <= group for group in grouped)
    ]
    return sorted(identical, key=lambda group: group.students), others


# --- the course -------------------------------------------------------------------------------
def _is_answer(cell: nbformat.NotebookNode) -> bool:
    role = cell.get("metadata", {}).get("nbgrader", {})
    return bool(role.get("solution") and role.get("grade_id"))


def read_answers(
    course: Course, assignment: str
) -> tuple[dict[str, dict[str, str]], dict[str, list[str]]]:
    """student -> grade_id -> source of every answer cell of `assignment`, from each student's
    submitted notebook (or the autograded one when there is no submitted copy) as admission
    reads it (NOTE [Admission] in admission.py: bounded, answer cells by the course's roles
    only); and student -> what of theirs could not be read, with the reason. A missing notebook
    gives no cells (the grading report flags it); an unreadable one is listed."""
    autograded = course.root / course.coursedir.autograded_directory
    students = set(course.students(assignment))
    if autograded.is_dir():
        students |= {p.name for p in autograded.iterdir() if (p / assignment).is_dir()}
    releases = {  # the source notebooks: the release's cells and roles, and no release needed
        notebook: nbformat.read(course.folder("source", assignment) / f"{notebook}.ipynb", 4)
        for notebook in course.notebooks(assignment)
    }
    answers: dict[str, dict[str, str]] = {}
    problems: dict[str, list[str]] = {}
    for student in sorted(students):
        answers[student] = {}
        for notebook, release in releases.items():
            copies = [
                course.folder(step, assignment, student) / f"{notebook}.ipynb"
                for step in ("submitted", "autograded")
            ]
            path = next((path for path in copies if path.is_file()), None)
            if path is None:
                continue
            try:
                admitted = admission.admit_file(path, release)
            except Exception as error:  # the student's failure boundary
                problems.setdefault(student, []).append(f"{notebook}.ipynb: {error!r}"[:300])
                continue
            if admitted.nb is None or admission.unreadable_reason(admitted.nb):
                problems.setdefault(student, []).append(f"{notebook}.ipynb: {admitted.flags[0]}")
                continue
            for cell in filter(_is_answer, admitted.nb.cells):
                answers[student][cell.metadata["nbgrader"]["grade_id"]] = cell.source
    return answers, problems


def given_sources(course: Course, assignment: str) -> dict[str, list[str]]:
    """grade_id -> what anyone may hand in without copying: the reference answer (from
    course/notebooks/<assignment>.py and from the source notebook) and the blank release stub."""
    given: dict[str, list[str]] = {}
    cells = []
    for notebook in course.notebooks(assignment):
        path = course.folder("source", assignment) / f"{notebook}.ipynb"
        cells += filter(_is_answer, nbformat.read(path, as_version=4).cells)
    if (NOTEBOOKS / f"{assignment}.py").is_file():
        for reference in reference_cells(assignment):
            cell = nbformat.v4.new_code_cell(reference.source)
            cell.metadata["nbgrader"] = {"solution": True, "grade_id": reference.grade_id}
            cells.append(cell)
    for cell in cells:
        stub = nbformat.v4.new_notebook(cells=[copy.deepcopy(cell)])
        stub.metadata["kernelspec"] = {"language": "python", "name": "python3"}
        ClearSolutions(config=course.config).preprocess(stub, {})
        sources = given.setdefault(cell.metadata["nbgrader"]["grade_id"], [])
        sources += [cell.source, stub.cells[0].source]
    return given


def format_table(
    pairs: list[Pair],
    threshold: float,
    students: int,
    not_compared: dict[str, list[str]] | None = None,
    identical: list[Identical] | None = None,
    short: list[Pair] | None = None,
) -> str:
    """The flagged pairs as an aligned text table, with each pair's cells, most alike first;
    then what is too short to weigh (`identical` groups, `short` pairs; see `too_short`), and
    the students with cells not compared, and why, when `not_compared` is given."""
    identical, short = identical or [], short or []
    if not pairs:
        text = (
            f"no pair of the {students} students reaches similarity {threshold:g} with at "
            f"least {MIN_SHARED} k-grams in common"
        )
        if identical or short:
            text += " (what reaches it with fewer is listed below)"
    else:
        header = ("first", "second", "score", "cells (score)")
        lines = [
            (valid_text(pair.first), valid_text(pair.second), f"{pair.score:.2f}",
             _cell_scores(pair))
            for pair in pairs
        ]  # fmt: skip
        widths = [max(len(line[i]) for line in [header, *lines]) for i in range(3)]
        text = "\n".join(
            "  ".join([*(text.ljust(width) for text, width in zip(line, widths)), line[3]])
            for line in [header, *lines]
        )
    if identical or short:
        text += (
            f"\ntoo short to weigh (similarity {threshold:g} or more, but fewer than "
            f"{MIN_SHARED} k-grams in common; not flagged, read them):"
        )
    for group in identical:
        text += (
            f"\n  identical answers: {', '.join(map(valid_text, group.students))} "
            f"({', '.join(map(valid_text, group.cells))}; {group.shared} k-grams)"
        )
    for pair in short[:MAX_SHORT_LISTED]:
        text += (
            f"\n  alike {pair.score:.2f}: {valid_text(pair.first)}, {valid_text(pair.second)} "
            f"({pair.shared} k-grams in common; {_cell_scores(pair)})"
        )
    if len(short) > MAX_SHORT_LISTED:
        text += f"\n  and {len(short) - MAX_SHORT_LISTED} more alike pairs (similarity.html)"
    for student, problems in (not_compared or {}).items():
        text += f"\nnot compared: {valid_text(student)}: {valid_text('; '.join(problems))}"
    return text


def _cell_scores(pair: Pair) -> str:
    return ", ".join(
        f"{valid_text(grade_id)} {score:.2f}"
        for grade_id, score in sorted(pair.cells.items(), key=lambda c: -c[1])
        if score > 0
    )


_STYLE = """body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; width: 100%; table-layout: fixed; }
td, th { border: 1px solid #ccc; padding: 0.4em; vertical-align: top; text-align: left; }
pre { margin: 0; white-space: pre-wrap; font-size: 0.85em; }"""


def _shown(text: str) -> str:
    """Student text (an id, a grade_id, a source, a reason) as HTML: escaped, valid Unicode."""
    return html.escape(valid_text(text))


def write_html(
    pairs: list[Pair],
    answers: dict[str, dict[str, str]],
    assignment: str,
    threshold: float,
    destination: Path,
    not_compared: dict[str, list[str]] | None = None,
    identical: list[Identical] | None = None,
    short: list[Pair] | None = None,
) -> Path:
    """An HTML page showing, for each pair, the cells they have in common side by side; then
    what is too short to weigh (see `too_short`), and the students with cells not compared,
    and why."""
    title = _shown(f"Similar answers in {assignment} (threshold {threshold:g})")
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
             f"<style>{_STYLE}</style></head><body><h1>{title}</h1>",
             "<p>Flags for a person to read, not a verdict: answers that match after renaming "
             "and reordering, ignoring the reference answer and the blank stub.</p>"]  # fmt: skip
    if not pairs:
        parts.append(
            f"<p>No pair of the {len(answers)} students reaches the threshold with at least "
            f"{MIN_SHARED} k-grams in common.</p>"
        )
    parts += _pair_tables(pairs, answers, "h2")
    if identical or short:
        parts.append(
            f"<h2>Too short to weigh</h2><p>These reach the threshold with fewer than "
            f"{MIN_SHARED} k-grams in common: not flagged, shown for a person to read.</p>"
        )
    for group in identical or []:
        shown = group.students[:4]
        names = ", ".join(_shown(student) for student in group.students)
        parts.append(f"<h3>Identical answers: {names}</h3><table><tr><th>cell</th>")
        parts += [f"<th>{_shown(student)}</th>" for student in shown]
        parts.append("</tr>")
        for grade_id in group.cells:
            sources = "".join(
                f"<td><pre>{_shown(answers[student].get(grade_id, ''))}</pre></td>"
                for student in shown
            )
            parts.append(f"<tr><td>{_shown(grade_id)}</td>{sources}</tr>")
        parts.append("</table>")
    parts += _pair_tables(short or [], answers, "h3")
    if not_compared:
        parts.append("<h2>Not compared</h2><ul>")
        parts += [
            f"<li>{_shown(student)}: {_shown('; '.join(problems))}</li>"
            for student, problems in not_compared.items()
        ]
        parts.append("</ul>")
    parts.append("</body></html>")
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text("\n".join(parts), encoding="utf-8")
    return destination


def _pair_tables(pairs: list[Pair], answers: dict[str, dict[str, str]], level: str) -> list[str]:
    """Each pair's cells in common, side by side."""
    parts = []
    for pair in pairs:
        first, second = _shown(pair.first), _shown(pair.second)
        parts.append(f"<{level}>{first} and {second}: {pair.score:.2f}</{level}>")
        parts.append(f"<table><tr><th>cell</th><th>{first}</th><th>{second}</th></tr>")
        for grade_id, score in pair.cells.items():
            if score > 0:
                left = _shown(answers[pair.first].get(grade_id, ""))
                right = _shown(answers[pair.second].get(grade_id, ""))
                parts.append(
                    f"<tr><td>{_shown(grade_id)}<br>{score:.2f}</td>"
                    f"<td><pre>{left}</pre></td><td><pre>{right}</pre></td></tr>"
                )
        parts.append("</table>")
    return parts


@dataclass
class Report:
    """What `similarity` found: the flagged pairs, every pair's scores, the HTML page, and the
    students with answers not compared (student -> why, one line per notebook or cell)."""

    flagged: list[Pair]
    pairs: list[Pair]
    answers: dict[str, dict[str, str]]
    html: Path
    not_compared: dict[str, list[str]] = field(default_factory=dict)
    identical: list[Identical] = field(default_factory=list)  # too short to weigh: `too_short`
    short: list[Pair] = field(default_factory=list)

    def table(self, threshold: float) -> str:
        """`format_table` of everything found."""
        return format_table(self.flagged, threshold, len(self.answers), self.not_compared,
                            self.identical, self.short)  # fmt: skip


def similarity_report(
    course: Course, assignment: str, threshold: float = DEFAULT_THRESHOLD
) -> Report:
    """Compare every submission of `assignment` and write <course>/reports/<assignment>/
    similarity.html. Reads the submissions only: never changes a grade. Run it in the main
    thread (see the module docstring)."""
    answers, unread = read_answers(course, assignment)
    prints, unprinted = fingerprints(answers, given_sources(course, assignment))
    not_compared = {
        student: unread.get(student, []) + unprinted.get(student, [])
        for student in sorted(unread.keys() | unprinted.keys())
    }
    pairs = score_pairs(prints)
    found = flagged(pairs, threshold)
    identical, short = too_short(prints, pairs, threshold)
    page = course.root / "reports" / assignment / "similarity.html"
    html_page = write_html(
        found, answers, assignment, threshold, page, not_compared, identical, short
    )
    return Report(found, pairs, answers, html_page, not_compared, identical, short)
