"""The figures behind the notebooks' explorers, and the one function that makes them live.

``explore(plot_fn, **controls)`` shows one figure with ipywidgets controls (:mod:`.interact`); each
part of the course has a module of ``plot_*`` functions that draw one complete figure from plain
arguments, so a notebook calls one once statically and then offers it through ``explore``:

- :mod:`.rnn` (notebooks 02-03): the context vector's sensitivity, attention alignments;
- :mod:`.attention` (04-06): softmax saturation, per-head maps, positional encodings;
- :mod:`.transformer` (07-08): gradient norms by depth, a translation's attention;
- :mod:`.gpt` (09): the next character's distribution;
- :mod:`.scale` (10): rotary positions' scores against the offset.

Import what you need from here (``from utils.explorers import explore, plot_alignment``).
"""

from utils.explorers.attention import DEFAULT_KEYS, plot_head_maps, plot_positional_encoding, plot_softmax_saturation
from utils.explorers.gpt import next_char_probabilities, plot_next_char
from utils.explorers.interact import explore, explorer
from utils.explorers.rnn import context_sensitivity, plot_alignment, plot_context_sensitivity
from utils.explorers.scale import plot_rope_scores, rope_scores
from utils.explorers.transformer import (gradient_norms_by_depth, plot_gradient_norms, plot_translation,
                                         translate_sentence)

__all__ = ["explore", "explorer",
           "context_sensitivity", "plot_context_sensitivity", "plot_alignment",
           "DEFAULT_KEYS", "plot_softmax_saturation", "plot_head_maps", "plot_positional_encoding",
           "gradient_norms_by_depth", "plot_gradient_norms", "translate_sentence", "plot_translation",
           "next_char_probabilities", "plot_next_char",
           "rope_scores", "plot_rope_scores"]
