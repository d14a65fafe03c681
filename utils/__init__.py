"""Reusable code for the course "Attention, from RNNs to Transformers".

One module per concept; notebooks build each idea step by step and then check it
against the version here, and later notebooks import it from here.

- ``utils.data``       download, verify and cache Multi30k and tiny-shakespeare
- ``utils.text``       tokenizer, vocabulary, padding/batching, synthetic sequence tasks
- ``utils.training``   seeds, device choice, a small training loop, checkpoints
- ``utils.metrics``    BLEU (sacrebleu), token accuracy, exact match
- ``utils.plotting``   attention heatmaps labelled with tokens, loss curves
"""

__version__ = "0.1.0"
