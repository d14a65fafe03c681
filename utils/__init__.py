"""Reusable code for the course "Attention, from RNNs to Transformers".

One module per concept; notebooks build each idea step by step and then check it
against the version here, and later notebooks import it from here.

- ``utils.data``       download, verify and cache Multi30k and tiny-shakespeare
- ``utils.text``       tokenizer, vocabulary, padding/batching, synthetic sequence tasks
- ``utils.training``   seeds, device choice, a small training loop, checkpoints
- ``utils.metrics``    BLEU (sacrebleu), token accuracy, exact match
- ``utils.plotting``   attention heatmaps labelled with tokens, loss curves
- ``utils.diagrams``   diagrams of every mechanism (RNN encoder-decoder to the key/value cache), drawn by code
- ``utils.embeddings`` a CBOW word-embedding model, nearest neighbours, embedding maps
- ``utils.translation`` the Multi30k translation pipeline: data, loaders, decoding, BLEU
- ``utils.rnn``        RNN encoder, decoders with and without attention, score functions, beam search
- ``utils.attention``  scaled dot-product attention, masks, multi-head attention
- ``utils.positional`` sinusoidal and learned positional encodings
- ``utils.transformer`` the encoder-decoder Transformer with cached incremental decoding
- ``utils.schedule``   the Transformer's warm-up learning-rate schedule and Adam settings
- ``utils.gpt``        a GPT-style decoder-only language model: character tokenizer, batches, sampling with a cache
- ``utils.explorers_rnn``, ``utils.explorers``, ``utils.explorers_transformer``, ``utils.explorers_gpt``  figures behind the notebooks' widgets
"""

__version__ = "0.1.0"
