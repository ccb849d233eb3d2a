"""transformers backend: batched N-candidate sampling that encodes each context once.

``generate(..., num_return_sequences=n)`` in transformers repeats every prompt n times before the prefill, so
the context is encoded n times (on 2 cores with a 2-layer model, n=4 took 3.6x the time of n=1). Here each
batch of contexts is prefilled once, its cache is repeated n times (``transformers_runtime.repeat_rows``: attention keys/values and, on
Qwen3.5, the linear-attention states), and the n continuations are decoded together in a small sampling loop
that also records log-probabilities and stops on the end-of-sequence tokens.

Generation follows what clemcore's ``huggingface_local`` backend asks of ``model.generate`` (clemcore 3.7.2,
``HuggingfaceLocalModel._generate_batch_response``), so that greedy play is clemcore's play: greedy at
temperature 0, else sampling at the temperature with the generation config's ``top_k`` and ``top_p``; the
generation config's ``repetition_penalty`` in both; stop on the generation config's ``eos_token_id``; the
reply decoded with its special tokens and post-processed by ``models.replies``.
"""

from __future__ import annotations

import logging

import torch

from playprm import chat
from playprm.models import gguf, prefix_cache, replies
from playprm.models.base import Candidate, PolicySpec
from playprm.models.loading import pretrained_loading
from playprm.transformers_runtime import (
    cache_kwargs,
    follow_cpu_threads,
    left_padded,
    output_cache,
    repeat_rows,
    select_rows,
)

logger = logging.getLogger(__name__)


def load_causal_lm(spec: PolicySpec, *, device: str | None = None):
    """Load model and tokenizer for ``spec`` as ``models.loading`` decides (4-bit on CUDA when asked), with its
    PEFT adapter when given."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    loading = pretrained_loading("policy", device=device, dtype=spec.dtype, load_in_4bit=spec.load_in_4bit,
                                 trust_remote_code=spec.trust_remote_code)
    if spec.trust_remote_code:
        print(f"playprm: trust_remote_code=True for {spec.model_id} (asked for by {spec.lookup_source})")
    if spec.load_in_4bit and not loading.load_in_4bit:
        print(f"playprm: load_in_4bit needs CUDA; loading {spec.model_id} unquantized on CPU")
    if gguf.is_gguf_path(spec.model_id):  # de-quantised in memory
        model, tokenizer = gguf.load(spec.model_id, dtype=loading.gguf_dtype())
        if loading.cuda:
            model.to(loading.device)
    else:
        tokenizer = AutoTokenizer.from_pretrained(spec.model_id, trust_remote_code=spec.trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(spec.model_id, **loading.kwargs())
    if spec.peft_model:
        from playprm.models.adapter_base import warn_if_other_base
        warn_if_other_base(spec.peft_model, spec.model_id)  # PEFT loads on any base of matching shapes
        from playprm.models.adapters import load_adapter

        model = load_adapter(model, spec.peft_model)  # either layout of a multimodal checkpoint
    from playprm.models.adapters import merge_for_inference

    model = merge_for_inference(model)  # an adapter given by spec.peft_model or by the model folder itself
    if not loading.cuda:
        model.to(loading.device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


class HFPolicy:
    """A transformers causal LM behind the ``Policy`` interface."""

    compact_rows = True  # drop finished rows from the decode batch (False: every row decodes to the end, for A/B)
    greedy_first = True  # generate(greedy_first=True): each context's first row greedy, from the same prefill

    def __init__(self, spec: PolicySpec, model=None, tokenizer=None, *, max_batch_rows: int = 64,
                 reuse_cache: bool = True):
        self.spec = spec
        if model is None:
            model, tokenizer = load_causal_lm(spec)
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows  # contexts x n decoded together at most
        # each episode's state at the end of its last prompt, so its next turn encodes only the new tokens
        self.prefix_store = prefix_cache.PrefixStore() if reuse_cache else None
        self.generation_config = getattr(model, "generation_config", None)
        self.stop_ids = stop_ids(self.generation_config, tokenizer)
        self.reply_rule = replies.reply_rule(spec, tokenizer)
        warn_unmirrored(self.generation_config)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def prompt_ids(self, context: list[dict]) -> list[int]:
        return chat.prompt_ids(self.tokenizer, context, self.spec.chat_template_kwargs)

    def generate(self, contexts: list[list[dict]], *, n: int = 1, temperature: float = 0.0,
                 max_tokens: int = 256, seed: int | None = None, prefixes: list[str] | None = None,
                 greedy_first: bool = False) -> list[list[Candidate]]:
        """Per context, ``n`` candidates (continuations of ``prefixes`` when given); with ``greedy_first`` the
        first of them is the greedy reply and the others are sampled. Contexts are sorted by length and decoded
        in chunks."""
        if not contexts:
            return []
        prompts = [self.prompt_ids(context) for context in contexts]
        keep = [chat.history_length(self.tokenizer, context, prompt, self.spec.chat_template_kwargs)
                for context, prompt in zip(contexts, prompts)] if prefix_cache.reuses(self.prefix_store) else None
        if prefixes is not None:
            prompts = [p + self.tokenizer(prefix, add_special_tokens=False).input_ids if prefix else p
                       for p, prefix in zip(prompts, prefixes)]
        return self.generate_ids(prompts, n=n, temperature=temperature, max_tokens=max_tokens, seed=seed, keep=keep,
                                 greedy_first=greedy_first)

    def generate_ids(self, prompts: list[list[int]], *, n: int = 1, temperature: float = 0.0, max_tokens: int = 256,
                     seed: int | None = None, keep: list[int] | None = None, greedy_first: bool = False,
                     plain_sampling: bool = False) -> list[list[Candidate]]:
        """``generate`` from prompts given as token ids (``train-grpo`` continues each player's own token history,
        which a re-rendered chat would change); each candidate keeps its sampled ``token_ids``. ``keep[i]``: how
        much of prompt ``i`` the prefix store keeps (see ``prefix_cache.encode``). ``plain_sampling``: sample from
        softmax(logits / temperature) alone, without the generation config's top-k, top-p and repetition penalty:
        the distribution whose log-probabilities TRL's GRPO loss computes (train-grpo's rollout)."""
        if not prompts:
            return []
        order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
        per_chunk = max(1, self.max_batch_rows // n)
        generator = torch.Generator(device=self.device)  # sample where the logits are: no per-step copy
        generator.manual_seed(0 if seed is None else seed)
        results: list[list[Candidate] | None] = [None] * len(prompts)
        for start in range(0, len(order), per_chunk):
            follow_cpu_threads()  # between batches, by the cores idle now (a large model's choice playprm made)
            chunk = order[start:start + per_chunk]
            outputs = self._sample([prompts[i] for i in chunk], n, temperature, max_tokens, generator,
                                   keep=None if keep is None else [keep[i] for i in chunk], greedy_first=greedy_first,
                                   plain=plain_sampling)
            for i, candidates in zip(chunk, outputs):
                results[i] = candidates
        return results  # type: ignore[return-value]

    def processors(self, temperature: float, mask: torch.Tensor, plain: bool = False):
        """The logits processors ``model.generate`` would apply for clemcore's generation arguments (greedy:
        ``do_sample=False, top_p=None``; sampling: the temperature and the generation config's ``top_p``, its
        ``top_k`` merged in by transformers), and whether they need the token history. ``plain``: the temperature
        alone (``generate_ids(plain_sampling=True)``)."""
        from transformers.generation.logits_process import (
            RepetitionPenaltyLogitsProcessor,
            TemperatureLogitsWarper,
            TopKLogitsWarper,
            TopPLogitsWarper,
        )

        config = None if plain else self.generation_config
        chain: list = []
        penalty = getattr(config, "repetition_penalty", None)
        if penalty is not None and penalty != 1.0:  # left padding is not history (as generate does it)
            chain.append(RepetitionPenaltyLogitsProcessor(penalty, prompt_ignore_length=(mask != 0).int().argmax(1)))
        if temperature > 0:
            if temperature != 1.0:
                chain.append(TemperatureLogitsWarper(temperature))
            top_k, top_p = getattr(config, "top_k", None), getattr(config, "top_p", None)
            if top_k:
                chain.append(TopKLogitsWarper(top_k=top_k))
            if top_p is not None and top_p < 1.0:
                chain.append(TopPLogitsWarper(top_p=top_p))
        return chain, bool(chain and penalty is not None and penalty != 1.0)

    @torch.inference_mode()
    def _sample(self, prompts: list[list[int]], n: int, temperature: float, max_tokens: int,
                generator: torch.Generator, *, keep: list[int] | None = None, greedy_first: bool = False,
                plain: bool = False) -> list[list[Candidate]]:
        device = self.device
        batch = prefix_cache.encode(self.model, prompts, self.tokenizer.pad_token_id, self.prefix_store, device,
                                    keep=keep)
        cache, logits, mask, position = batch.cache, batch.logits, batch.mask, batch.next_position
        if n > 1:  # the context was encoded once; its cache now serves all n continuations
            repeat_rows(cache, len(prompts), n, device)
            logits = logits.repeat_interleave(n, dim=0)
            mask = mask.repeat_interleave(n, dim=0)
            position = position.repeat_interleave(n, dim=0)
        rows = logits.shape[0]
        chain, needs_history = self.processors(temperature, mask, plain)
        history = left_padded(prompts, self.tokenizer.pad_token_id, device)[0].repeat_interleave(n, dim=0) \
            if needs_history else None
        stop = torch.tensor(self.stop_ids, device=device)
        # Every step's token and log-probability stay where the logits are; the one host synchronisation a step
        # is the count of rows still running, which stopping needs. Rows that stopped leave the batch once a
        # quarter of it has stopped (their cache rows dropped), so they stop costing compute.
        tokens = torch.zeros((rows, max_tokens), dtype=torch.long, device=device)
        token_logprobs = torch.zeros((rows, max_tokens), dtype=torch.float32, device=device)
        running = torch.arange(rows, device=device)  # the original row of each row still in the batch
        stopped = torch.zeros(rows, dtype=torch.bool, device=device)
        # the greedy rows: the sampling warpers (temperature, top-k, top-p) keep the argmax, so it is greedy's
        greedy = torch.arange(rows, device=device) % n == 0 if greedy_first and temperature > 0 else None
        steps = 0
        for step in range(max_tokens):
            logprobs = torch.log_softmax(logits, dim=-1)
            scores = logits
            for processor in chain:
                scores = processor(history, scores)
            if temperature <= 0:
                chosen = scores.argmax(dim=-1)
            else:  # one uniform draw per original row and step: a row's sample does not depend on which rows
                # are still in the batch (or on the other contexts), only on the seed and its place in the call
                draws = torch.rand(rows, generator=generator, device=device)[running]
                cdf = torch.softmax(scores, dim=-1, dtype=torch.float32).cumsum(dim=-1)
                chosen = torch.searchsorted(cdf, (draws * cdf[:, -1])[:, None], right=True).squeeze(-1)
                if greedy is not None:
                    chosen = torch.where(greedy[running], scores.argmax(dim=-1), chosen)
            tokens[running, step] = chosen
            token_logprobs[running, step] = logprobs.gather(1, chosen[:, None]).squeeze(-1)
            steps = step + 1
            stopped = stopped | torch.isin(chosen, stop)
            alive = int((~stopped).sum())
            if alive == 0 or steps == max_tokens:
                break
            if self.compact_rows and alive <= 3 * len(running) // 4:
                keep = (~stopped).nonzero().squeeze(-1)
                select_rows(cache, keep)
                running, stopped, chosen, mask, position = (running[keep], stopped[keep], chosen[keep], mask[keep],
                                                            position[keep])
                if history is not None:
                    history = history[keep]
                chain, _ = self.processors(temperature, mask, plain)
            if history is not None:
                history = torch.cat([history, chosen[:, None]], dim=1)
            mask = torch.cat([mask, torch.ones((len(running), 1), dtype=mask.dtype, device=device)], dim=1)
            out = self.model(input_ids=chosen[:, None], attention_mask=mask, position_ids=position[:, None],
                             use_cache=True, **cache_kwargs(self.model, cache))
            cache, logits = output_cache(out), out.logits[:, -1, :].float()
            position = position + 1
        return self._candidates(prompts, n, tokens[:, :steps].cpu(), token_logprobs[:, :steps].cpu(), batch.encoded)

    def _candidates(self, prompts: list[list[int]], n: int, tokens: torch.Tensor, token_logprobs: torch.Tensor,
                    encoded: list[int]) -> list[list[Candidate]]:
        """The decoded rows as candidates: each row up to and including its first stop token."""
        stop_set = set(self.stop_ids)
        prompt_texts = [self.tokenizer.decode(prompt) for prompt in prompts]
        candidates: list[Candidate] = []
        for row in range(tokens.shape[0]):
            ids = tokens[row].tolist()
            end = next((k + 1 for k, token in enumerate(ids) if token in stop_set), len(ids))
            ids = ids[:end]
            stopped = bool(ids) and ids[-1] in stop_set
            prompt = prompts[row // n]
            # clemcore decodes prompt and reply together and removes the decoded prompt (huggingface_local_api.py,
            # split_and_clean_batch_outputs); the end-of-sequence token stays in the raw text, eos_to_cull cuts it
            raw = self.tokenizer.decode(prompt + ids).replace(prompt_texts[row // n], "")
            candidates.append(Candidate(text=self.reply_rule(raw), num_tokens=len(ids),
                                        logprob=float(token_logprobs[row, :end].double().sum()), finished=stopped,
                                        raw=raw, prefill_tokens=encoded[row // n], token_ids=ids))
        return [candidates[i * n:(i + 1) * n] for i in range(len(prompts))]


def stop_ids(generation_config, tokenizer) -> list[int]:
    """The token ids generation stops on: the generation config's ``eos_token_id`` (one id or a list), which
    is what ``model.generate`` stops on for clemcore; without one, the template's end-of-turn token and the
    tokenizer's eos token."""
    eos = getattr(generation_config, "eos_token_id", None)
    if eos is not None:
        return sorted({eos} if isinstance(eos, int) else set(eos))
    return sorted(set(chat.end_of_turn_ids(tokenizer)[-1:] + [tokenizer.eos_token_id]) - {None})


# generation-config settings that model.generate would apply and this decode loop does not
_UNMIRRORED = ("no_repeat_ngram_size", "bad_words_ids", "min_new_tokens", "min_p", "typical_p", "epsilon_cutoff",
               "eta_cutoff", "sequence_bias", "suppress_tokens", "begin_suppress_tokens", "forced_bos_token_id",
               "forced_eos_token_id", "top_h")


def warn_unmirrored(generation_config) -> None:
    """One warning naming generation-config settings that clemcore's ``model.generate`` would apply and
    playprm's decode loop does not, so that a difference from ``clem run`` has a named cause."""
    found = {key: getattr(generation_config, key, None) for key in _UNMIRRORED}
    found = {key: value for key, value in found.items() if value not in (None, 0, 1.0, [], False)}
    if found:
        logger.warning("generation config sets %s, which playprm's decoding does not apply; `clem run` on this "
                       "model applies them", ", ".join(f"{k}={v!r}" for k, v in sorted(found.items())))
