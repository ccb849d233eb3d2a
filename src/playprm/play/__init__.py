"""Playing a run: the validated config (``config``), the run job that opens or resumes a results folder (``job``,
``lock``), the wiring of policy, scorer and strategy (``wiring``), the batched runner (``runner``), rollout
collection (``collect``) and the table of policy and scorer names (``players``)."""
