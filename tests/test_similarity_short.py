"""Issue 32, section 2: identical or near-identical short answers are reported.

A pair needs MIN_SHARED k-grams in common to be flagged, so two byte-identical notebooks whose
own answers are a few lines were not flagged, and the report said "no pair ... reaches similarity
0.1" as if nothing were alike. Now what reaches the threshold below that floor is listed apart,
"too short to weigh": identical answers as one group, other alike pairs one by one; blank
notebooks (nothing of their own) are never listed. No kernels run here.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from course_notebooks import release_source
from course_support import NOTEBOOK_1, copy_course_source, with_answers
from similarity_class import ALICE, DAVE, REFERENCE, answer_cells

from solutions.instructor import similarity
from solutions.instructor.cli import main
from solutions.instructor.course import open_course

LOOP = ALICE["ex7_graph_sizes"]
# The same loop, names changed and a comment added: identical once normalized.
RENAMED_LOOP = """
    result = []  # one size per input
    for sample in inputs:
        output = model(sample)
        result.append(len(collect_nodes(output)))
    return result
"""
BLANK = {grade_id: release_source(source) for grade_id, source in REFERENCE.items()}
STUDENTS = {
    "x": {**REFERENCE, **answer_cells({"ex7_graph_sizes": LOOP})},
    "w": {**REFERENCE, **answer_cells({"ex7_graph_sizes": RENAMED_LOOP})},
    # x's loop and her own count_ops: x's own answers are found whole in hers
    "v": {
        **REFERENCE,
        **answer_cells({"ex7_graph_sizes": LOOP, "ex2_count_ops": DAVE["ex2_count_ops"]}),
    },  # fmt: skip
    "blank-1": BLANK,
    "blank-2": BLANK,
}


@pytest.fixture(scope="module")
def course(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """x and y hand in byte-identical files; so do the two blank students."""
    root = copy_course_source(tmp_path_factory.mktemp("short") / "course", [NOTEBOOK_1])
    source = nbformat.read(root / "source" / NOTEBOOK_1 / f"{NOTEBOOK_1}.ipynb", as_version=4)
    files = {student: nbformat.writes(with_answers(source, cells))
             for student, cells in STUDENTS.items()}  # fmt: skip
    files["y"] = files["x"]
    files["blank-2"] = files["blank-1"]
    for student, text in files.items():
        folder = root / "submitted" / student / NOTEBOOK_1
        folder.mkdir(parents=True)
        (folder / f"{NOTEBOOK_1}.ipynb").write_text(text)
    return root


def test_identical_short_answers_are_listed_and_blank_ones_are_not(course: Path) -> None:
    found = similarity.similarity_report(open_course(course), NOTEBOOK_1, threshold=0.1)
    assert found.flagged == []
    (group,) = found.identical
    assert group.students == ["w", "x", "y"] and group.cells == ["ex7_graph_sizes"]
    assert 0 < group.shared < similarity.MIN_SHARED
    alike = {(pair.first, pair.second): pair.score for pair in found.short}
    assert alike == {("v", "w"): 1.0, ("v", "x"): 1.0, ("v", "y"): 1.0}, alike
    page = found.html.read_text()
    assert "Too short to weigh" in page and "Identical answers: w, x, y" in page
    assert "blank-1" not in page.split("Too short to weigh")[1]


def test_the_message_says_the_floor_and_lists_them(course: Path, capsys) -> None:
    assert main(["--course", str(course), "similarity", NOTEBOOK_1, "--threshold", "0.1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        f"no pair of the 6 students reaches similarity 0.1 with at least {similarity.MIN_SHARED} "
        "k-grams in common (what reaches it with fewer is listed below)"
    )
    assert lines[1].startswith("too short to weigh (similarity 0.1 or more, but fewer than")
    assert lines[2].startswith("  identical answers: w, x, y (ex7_graph_sizes; ")
    assert [line.split(":")[0] for line in lines[3:]] == ["  alike 1.00"] * 3
    assert not any("blank" in line for line in lines)


def test_a_threshold_above_one_lists_nothing(course: Path, capsys) -> None:
    assert main(["--course", str(course), "similarity", NOTEBOOK_1, "--threshold", "1.01"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("no pair of the 6 students reaches similarity 1.01")
