"""Re-execute only a notebook's ``## Exercises`` section and write its new outputs in place.

The section is self-contained by the course's convention (autograding runs it alone), so its outputs
from a fresh kernel are the ones a Run All gives; execution counts continue from the last count
before the section. Use it after editing exercise or check cells, instead of re-running a notebook
whose demonstrations take minutes; ``make test`` still runs every notebook whole.

    python -m courseware execute-section notebooks/04_scaled_dot_product_attention.ipynb [more ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from courseware.editions.nbgrader_course import exercise_section_end, exercise_section_start  # noqa: E402

KERNEL = "attention-course"


def execute_section(path: Path, timeout: int = 900) -> float:
    nb = nbformat.read(path, as_version=4)
    start = exercise_section_start(nb)
    if start is None:
        raise SystemExit(f"{path}: no '## Exercises' section")
    section = nbformat.v4.new_notebook(metadata=nb.metadata)
    end = exercise_section_end(nb)   # the appendix, after the section, is not part of it
    section.cells = [nbformat.from_dict(c) for c in nb.cells[start:end]]
    client = NotebookClient(section, kernel_name=KERNEL, timeout=timeout, allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})
    t = time.time()
    client.execute()
    count = max((c.get("execution_count") or 0 for c in nb.cells[:start] if c.cell_type == "code"), default=0)
    for i, cell in enumerate(section.cells):
        if cell.cell_type == "code":
            count += 1
            cell.execution_count = count
            for o in cell.outputs:
                if o.output_type == "execute_result":
                    o.execution_count = count
            # adjacent stream outputs of one name merged, as a Run All in JupyterLab shows them
            merged = []
            for o in cell.outputs:
                if merged and o.output_type == "stream" and merged[-1].output_type == "stream" and merged[-1].name == o.name:
                    merged[-1].text += o.text
                else:
                    merged.append(o)
            cell.outputs = merged
            cell.metadata.pop("execution", None)
        nb.cells[start + i] = cell
    for cell in nb.cells[end:]:   # the appendix keeps its outputs; its counts continue after the section's
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            count += 1
            cell.execution_count = count
            for o in cell.outputs:
                if o.output_type == "execute_result":
                    o.execution_count = count
    nbformat.write(nb, path)
    return time.time() - t


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for name in argv:
        print(f"{name}: Exercises section executed in {execute_section(Path(name)):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
