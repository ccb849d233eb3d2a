"""report: clemscore / statscore exactly as clemcore computes clemscore, with CIs, comparisons and plots.

Entry points: ``compute_table`` (playprm.report.clemscore), ``compare_runs`` and ``render_comparison``
(playprm.report.compare), ``render_table`` (playprm.report.render). Shards are merged by
``playprm.results.merge``, which owns the results layout.
"""
