"""The explorer machinery: :func:`explore` (controls + one live figure) and :func:`explorer`.

Each part's module (``rnn``, ``attention``, ``transformer``, ``gpt``, ``scale``) holds ``plot_*``
functions that draw one complete figure from plain arguments and return it, so a notebook can call
one once statically and then hand it to :func:`explore`.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import matplotlib.pyplot as plt

from utils.training import widget_bundle

__all__ = ["explore", "explorer"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def explorer(figure_fn: Callable[..., plt.Figure], /, *, continuous_update: bool = True, **controls: Any):
    """Build (without displaying) an ``ipywidgets.interactive`` whose output shows exactly
    one figure: ``figure_fn(**values)``, redrawn whenever a control changes.

    ``controls`` are ``interact``-style abbreviations or widgets (``fixed(x)`` for an
    argument that is not a control). ``figure_fn`` must return a matplotlib Figure;
    it is displayed once and closed, so the inline backend never shows it a second time
    (``interact`` on a function that returns an open Figure shows a stale copy under
    the live one). ``continuous_update=False`` redraws only when a slider is released
    (or a text box left), for figures that take a while to compute. Control labels get
    the width they need instead of being cut to "temperat…"."""
    from IPython import get_ipython
    from IPython.display import display
    from ipywidgets import interactive

    def draw(**values):
        drawn.append(True)
        fig = figure_fn(**values)
        if not isinstance(fig, plt.Figure):
            plt.close("all")
            raise TypeError(f"an explorer's figure function must return a matplotlib Figure, "
                            f"{getattr(figure_fn, '__name__', figure_fn)!r} returned {type(fig).__name__}")
        ip = get_ipython()
        if ip is not None:  # format once: the bundle shown is also kept as the saved view's fallback
            data, metadata = ip.display_formatter.format(fig)
            shown.clear()
            shown.update(data)
            display(data, metadata=metadata, raw=True)
        plt.close(fig)
        return fig  # kept as the interactive's .result (closed: drawn, never shown again)

    # controls start at figure_fn's defaults, as with interact; without the annotations, which
    # ipywidgets 7 would take for controls (a text box holding "int")
    sig = inspect.signature(figure_fn)
    draw.__signature__ = sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty)
                                                 for p in sig.parameters.values()],
                                     return_annotation=inspect.Signature.empty)
    shown: dict = {}  # the bundle of the figure on screen now
    drawn: list = []
    w = interactive(draw, **controls)
    w.last_figure = shown
    if not drawn:  # ipywidgets 7 (Colab's) draws when the widget is first displayed, 8 when it is built
        w.update()
    for control in w.kwargs_widgets:
        if hasattr(control, "continuous_update") and not continuous_update:
            control.continuous_update = False
        if hasattr(getattr(control, "style", None), "description_width"):
            control.style.description_width = "initial"
    return w


def explore(figure_fn: Callable[..., plt.Figure], /, *, continuous_update: bool = True, **controls: Any) -> None:
    """Display :func:`explorer` ``(figure_fn, continuous_update=..., **controls)`` in a notebook.

    The displayed bundle also carries a PNG of the first figure: JupyterLab prefers the
    live widget when the kernel runs, while a saved notebook seen without a kernel
    (GitHub, an untrusted notebook, an HTML hand-out) shows that figure instead of the
    widget's text repr."""
    from IPython.display import display

    w = explorer(figure_fn, continuous_update=continuous_update, **controls)
    bundle = widget_bundle(w)  # ipywidgets 8's _repr_mimebundle_, or the same bundle under 7
    if WIDGET_VIEW not in bundle:  # not in a Jupyter kernel: nothing live to show
        display(w)
        return
    if "image/png" in w.last_figure:
        bundle["image/png"] = w.last_figure["image/png"]
    bundle["text/plain"] = f"explorer of {getattr(figure_fn, '__name__', 'a figure')} (run the notebook to use its controls)"
    display(bundle, raw=True)


