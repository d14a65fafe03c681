"""``utils.explorers.explore`` in a real Jupyter kernel (through nbclient, which records what
a front end would show, widget state included): exactly one figure per explorer, also after
a control moves, and a PNG fallback for the saved notebook; and ``fit``'s progress bar, a
widget whose saved text is the finished bar.

The control cell runs ``ipywidgets.interact`` on a function that returns an open figure, the
way the notebooks did before, and shows that the same counting sees its stale second copy."""

import base64

import nbformat
import pytest
from nbclient import NotebookClient

from notebook_utils import KERNEL

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

SETUP = """\
%matplotlib inline
import matplotlib.pyplot as plt
from ipywidgets import fixed, interact
from utils.explorers import explore, explorer, plot_softmax_saturation
KEYS = fixed(("a", "b", "c", "d"))"""


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in [
        SETUP,
        "explore(plot_softmax_saturation, d_k=[4, 1024], scaled=False, seed=(0, 3), key_tokens=KEYS)",
        # the same explorer object moved by code, as a slider drag would move it
        "w = explorer(plot_softmax_saturation, continuous_update=False, d_k=[4, 1024], scaled=False, seed=(0, 3),"
        " key_tokens=KEYS)\ndisplay(w)",
        "first = w.last_figure['image/png']\nw.kwargs_widgets[0].value = 1024\nassert w.last_figure['image/png'] != first",
        "interact(plot_softmax_saturation, d_k=[4, 1024], scaled=False, seed=(0, 3), key_tokens=KEYS);",
        "import torch\nfrom utils.training import fit\nm = torch.nn.Linear(2, 1)\n"
        "batches = [(torch.ones(3, 2), torch.zeros(3, 1))] * 5\n"
        "h = fit(m, lambda m, b: torch.nn.functional.mse_loss(m(b[0]), b[1]), batches, torch.optim.SGD(m.parameters(), 0.1))",
        "def not_a_figure(x=1):\n    plt.plot([x])\n\ndisplay(explorer(not_a_figure, x=(0, 3)))\nprint(plt.get_fignums())",
    ]]
    NotebookClient(nb, kernel_name=KERNEL, timeout=120).execute()
    state = nb.metadata.widgets["application/vnd.jupyter.widget-state+json"]["state"]
    return nb, state


def _images(outputs) -> list[str]:
    return [o["data"]["image/png"] for o in outputs if "image/png" in o.get("data", {})]


def _output_widget(state, view_output) -> dict:
    """The Output widget inside the interactive that ``view_output`` shows."""
    box = state[view_output["data"][WIDGET_VIEW]["model_id"]]["state"]
    out_id = box["children"][-1].removeprefix("IPY_MODEL_")
    assert state[out_id]["model_name"] == "OutputModel"
    return state[out_id]["state"]


def test_explore_shows_one_figure_and_a_png_fallback(executed):
    nb, state = executed
    outputs = nb.cells[1].outputs
    assert len(outputs) == 1, "explore must display one bundle and no figure outside the widget"
    bundle = outputs[0]["data"]
    assert {WIDGET_VIEW, "image/png", "text/plain"} <= set(bundle)
    assert "interactive(children" not in bundle["text/plain"]
    assert base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
    live = _images(_output_widget(state, outputs[0])["outputs"])
    assert live == [bundle["image/png"]], "the widget shows exactly the fallback figure, once"


def test_moving_a_control_replaces_the_figure(executed):
    nb, state = executed
    (view,) = [o for o in nb.cells[2].outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(_images(nb.cells[2].outputs)) == 0
    assert not nb.cells[3].outputs, "the assert in the cell held"
    widget = _output_widget(state, view)
    assert len(_images(widget["outputs"])) == 1, "after the move the widget still shows exactly one figure"
    box = state[view["data"][WIDGET_VIEW]["model_id"]]["state"]
    (seed,) = [state[c.removeprefix("IPY_MODEL_")]["state"] for c in box["children"]
               if state[c.removeprefix("IPY_MODEL_")]["state"].get("description") == "seed"]
    assert seed["continuous_update"] is False  # continuous_update=False reached the slider
    assert state[seed["style"].removeprefix("IPY_MODEL_")]["state"]["description_width"] == "initial"


def test_the_count_sees_interacts_stale_copy(executed):
    nb, state = executed
    outputs = nb.cells[4].outputs
    (view,) = [o for o in outputs if WIDGET_VIEW in o.get("data", {})]
    assert len(_images(_output_widget(state, view)["outputs"])) == 1
    assert len(_images(outputs)) == 1, "interact on an open figure leaves a second copy outside the widget"


def test_a_figure_function_must_return_a_figure(executed):
    nb, state = executed
    (view,) = [o for o in nb.cells[6].outputs if WIDGET_VIEW in o.get("data", {})]
    errors = [o for o in _output_widget(state, view)["outputs"] if o["output_type"] == "error"]
    assert errors and errors[0]["evalue"] == ("an explorer's figure function must return a matplotlib Figure, "
                                              "'not_a_figure' returned NoneType")
    text = "".join(o.get("text", "") for o in nb.cells[6].outputs)
    assert text.strip() == "[]", "the half-drawn figure was closed"


def test_fit_shows_a_progress_widget_whose_saved_text_is_the_finished_bar(executed):
    nb, state = executed
    outputs = nb.cells[5].outputs
    assert [o["output_type"] for o in outputs] == ["display_data"], "no stderr box, no extra print"
    data = outputs[0]["data"]
    assert WIDGET_VIEW in data
    assert data["text/plain"].startswith("training: 100%") and "5/5" in data["text/plain"]
    box = state[data[WIDGET_VIEW]["model_id"]]["state"]
    bars = [state[c.removeprefix("IPY_MODEL_")] for c in box["children"]]
    (progress,) = [b["state"] for b in bars if b["model_name"] == "FloatProgressModel"]
    assert progress["value"] == progress["max"] == 5
