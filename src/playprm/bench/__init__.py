"""The benchmark suite behind ``playprm bench`` and the scripts in ``benchmarks/``.

Each module measures one thing, with its paths alternated pair by pair in one process (``timing.alternate``):

- ``workload``: the models (tiny random ones, and the multi-turn workload: a small policy trained just until it
  keeps the formats of wordle and taboo, so that its episodes play several turns) and the clemcore workspace;
- ``generation``: N candidates per context (HFPolicy against one call per candidate, transformers'
  ``num_return_sequences`` and clemcore's HuggingfaceLocalModel), and the torch thread count;
- ``scoring``: shared-context PRM scoring against one candidate and the naive full-sequence path, by width;
- ``architectures``: figures 1 and 2 on the card's Qwen3.5 and on Qwen3 of the same size, interleaved;
- ``episodes``: ``playprm eval`` against clemcore's ``clem run`` (whole processes), and best-of-N against
  greedy, on multi-turn episodes;
- ``growth``: prefill tokens against turns with and without cross-turn reuse, beam-search time against B x N,
  and memory over a long multi-turn run.

``suite`` runs them all and ``report`` writes BENCHMARKS.md. Nothing here is imported by the CLI until
``playprm bench`` runs.
"""

FIGURES = ("threads", "generation", "prm", "architectures", "episodes", "best_of_n", "prefill", "beam_growth",
           "memory")
