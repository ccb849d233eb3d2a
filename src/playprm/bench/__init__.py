"""The benchmark suite behind ``playprm bench`` and the scripts in ``benchmarks/``.

Each module measures one thing, with its paths alternated pair by pair in one process (``timing.alternate``):

- ``generation``: N candidates per context (HFPolicy against one call per candidate, transformers'
  ``num_return_sequences`` and clemcore's HuggingfaceLocalModel), and the torch thread count;
- ``scoring``: shared-context PRM scoring against one candidate and the naive full-sequence path;
- ``architectures``: figures 1 and 2 on the card's Qwen3.5 and on Qwen3 of the same size, interleaved;
- ``episodes``: ``playprm eval`` against clemcore's own runner, and best-of-N against greedy;
- ``growth``: beam-search time against B x N, and memory over a long run.

``suite`` runs them all and ``report`` writes BENCHMARKS.md. Nothing here is imported by the CLI until
``playprm bench`` runs.
"""

FIGURES = ("threads", "generation", "prm", "architectures", "episodes", "best_of_n", "beam_growth", "memory")
