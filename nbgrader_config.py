"""nbgrader configuration for running the course's notebooks as assignments (see INSTRUCTORS.md).

Run nbgrader from the repository root: the course directory is ``course/`` (git-ignored), built
from ``notebooks/`` by ``make course``; each notebook is one assignment, named after the notebook.
"""

import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parent
sys.path.insert(0, str(_REPO))
from courseware.editions.nbgrader_course import (  # noqa: E402
    RELEASE_PREPROCESSORS,
    SANITIZE_PREPROCESSORS,
    ExerciseSectionExecute,
    ReviewRules,
    WaitingCsvExport,
)
from nbconvert.preprocessors import ClearMetadataPreprocessor  # noqa: E402
from nbgrader.preprocessors import (  # noqa: E402
    AssignLatePenalties,
    CheckCellMetadata,
    IgnorePattern,
    LimitOutput,
    SaveAutoGrades,
)

c = get_config()  # noqa: F821 (provided by traitlets when it reads this file)

c.CourseDirectory.course_id = "attention-course"
c.CourseDirectory.root = str(_REPO / "course")

# Release: nbgrader's pipeline plus ClearReleaseMetadata (no ipywidgets state, no execution
# timestamps, no collapsed cells in what students get).
c.GenerateAssignment.preprocessors = RELEASE_PREPROCESSORS
c.ClearMarkScheme.enforce_metadata = False  # mark schemes live in the open questions' answer cells (RELEASE_CONFIG)

# Autograde's first pass: nbgrader's, with OverwriteReleasedCells for OverwriteCells, so an untouched check
# cell with hidden tests is not reported as changed (jupyter/nbgrader#1961; a changed one still is).
c.Autograde.sanitize_preprocessors = SANITIZE_PREPROCESSORS

# Autograde runs only the `## Exercises` section of a submission (self-contained by the course's
# convention), not the demonstration training above it: nbgrader's default pipeline otherwise, and
# ReviewRules after SaveAutoGrades.
c.Autograde.autograde_preprocessors = [
    ExerciseSectionExecute,
    IgnorePattern,
    ClearMetadataPreprocessor,
    LimitOutput,
    SaveAutoGrades,
    ReviewRules,          # a rule only the call watch checks: the cells that scored need a person (INSTRUCTORS.md)
    AssignLatePenalties,
    CheckCellMetadata,
]

# `nbgrader export`: grades.csv with a points_waiting column (the points of cells marked "needs manual grade",
# which count 0 in score until an instructor grades them in the formgrader)
c.ExportApp.plugin_class = WaitingCsvExport

# `nbgrader validate` runs the whole notebook, as a student's Run All does: notebook 03 takes
# about 7 minutes on a 2-core laptop, its longest cell about 3 (nbgrader's default is 30 s per cell).
c.Execute.timeout = 1800
c.ExerciseSectionExecute.timeout = 600
