"""The process reward model: a backbone with a scalar head (``model``), batched scoring of candidate replies
against their shared context (``scorer``), and the tiny policy/PRM pair of ``make-tiny`` (``tiny``)."""
