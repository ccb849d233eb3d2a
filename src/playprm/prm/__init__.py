"""The process reward model: a backbone with a scalar head (``model``) and batched scoring of candidate replies
against their shared context (``scorer``)."""
