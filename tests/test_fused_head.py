"""TRL's fused LM head on CPU scoring only labelled positions (train.fused_head): the same loss, per-token values
and gradients as scoring every position."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def fused_model(card_models):
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    model = AutoModelForCausalLM.from_pretrained(card_models["policy"])
    add_fused_lm_head(model, outputs=("log_probs", "entropy", "is_top1"))
    return model


def run(model, batch, compact: bool, monkeypatch):
    from trl.trainer import utils

    from playprm.train import fused_head

    original = getattr(utils._use_triton, "original", utils._use_triton)
    monkeypatch.setattr(utils, "_use_triton", original)
    if compact:
        fused_head.score_labelled_positions_only()
    scored = []
    apply = utils._ChunkedLogProbFunction.apply

    def counting(hidden, *args):
        scored.append(hidden.shape[0])
        return apply(hidden, *args)

    monkeypatch.setattr(utils._ChunkedLogProbFunction, "apply", counting)
    model.zero_grad()
    out = model(**batch, fused_lm_head=True)
    out.loss.backward()
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    return out, grads, scored[0]


def test_scoring_only_labelled_positions_changes_no_loss_value_or_gradient(fused_model, monkeypatch):
    torch.manual_seed(0)
    ids = torch.randint(5, 200, (3, 40))
    labels = ids.clone()
    labels[:, :30] = -100  # a prompt whose tokens are not learned, as SFT's conversations
    labels[2, 35:] = -100  # and a shorter reply
    batch = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    full, full_grads, every = run(fused_model, batch, False, monkeypatch)
    compact, compact_grads, labelled = run(fused_model, batch, True, monkeypatch)
    assert every == 3 * 39 and labelled == int((labels[:, 1:] != -100).sum()) == 25
    torch.testing.assert_close(compact.loss, full.loss)
    for name in ("log_probs", "entropy", "is_top1", "label_mask"):
        torch.testing.assert_close(getattr(compact, name), getattr(full, name))
    assert full_grads.keys() == compact_grads.keys() and full_grads
    for name, grad in full_grads.items():
        torch.testing.assert_close(compact_grads[name], grad, rtol=1e-4, atol=1e-6)
