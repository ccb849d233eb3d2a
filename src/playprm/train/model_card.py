"""The README.md model card of a ``train-sft`` or ``train-prm`` run, rendered from the run's own files.

Every number comes from a file of the run folder: ``metrics.json`` (validation results, runtime), ``trainer_state.json``
(steps, best checkpoint, total FLOPs), ``training_config.json`` (hyperparameters), ``run_info.json`` (base model,
training data and its ``dataset_summary.json``, hardware, versions), ``adapter_config.json`` (LoRA as saved),
``model_registry.json`` (SFT) or ``prm_config.json`` (PRM), and, once ``playprm card`` has read a report,
``card.json`` (evaluation rows, companion model, license). The front matter is Hugging Face Hub metadata:
``base_model`` and ``datasets`` only where they are hub ids, ``library_name: peft``, ``license``, ``tags``,
``pipeline_tag``. The card is written after the trainer and PEFT have saved (both write README.md files of their
own), so it is the one that stays.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from playprm.atomic import write_text
from playprm.data.card import markdown_table
from playprm.models.registry import REGISTRY_FILE
from playprm.train.run_record import CONFIG_FILE, METRICS_FILE, RUN_INFO_FILE, TRAINER_STATE_FILE

CARD_FILE = "README.md"
CARD_SETTINGS_FILE = "card.json"  # what `playprm card` adds: evaluation rows, companion, license, base model id
PRM_CONFIG_FILE = "prm_config.json"
CALIBRATION_PLOT = "calibration.png"
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
EVALUATION_HEADING = "## Evaluation"


def read_json_file(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def is_hub_id(name: str | None) -> bool:
    """Whether ``name`` reads as a Hub repository id (``owner/name``) rather than a local path."""
    return bool(name) and bool(HUB_ID.fullmatch(name)) and not Path(name).exists()


POLICY_KINDS = ("sft", "dpo", "grpo")  # runs that write a policy (the rest write a PRM)


class RunFiles:
    """The files of one run folder, read once; missing ones read as empty."""

    def __init__(self, model_dir: Path):
        self.dir = Path(model_dir)
        self.metrics = read_json_file(self.dir / METRICS_FILE)
        self.state = read_json_file(self.dir / TRAINER_STATE_FILE)
        self.config = read_json_file(self.dir / CONFIG_FILE)
        self.info = read_json_file(self.dir / RUN_INFO_FILE)
        self.settings = read_json_file(self.dir / CARD_SETTINGS_FILE)
        self.kind = self.info.get("kind", "sft")
        adapter = self.dir / ("adapter" if self.kind == "prm" else "") / "adapter_config.json"
        self.adapter = read_json_file(adapter)
        registry = self.dir / REGISTRY_FILE
        self.registry = json.loads(registry.read_text(encoding="utf-8"))[0] if registry.is_file() else {}
        self.prm_config = read_json_file(self.dir / PRM_CONFIG_FILE)

    @property
    def name(self) -> str:
        return self.config.get("model_name") or self.registry.get("model_name") or self.dir.resolve().name

    @property
    def base_model(self) -> str:
        return self.settings.get("base_model_id") or self.info.get("base_model", "")

    @property
    def location(self) -> str:
        """Where users load this model from: its hub id (``hub_model_id``) or the run folder."""
        return self.config.get("hub_model_id") or str(self.dir.resolve())

    @property
    def summary(self) -> dict | None:
        return self.info.get("dataset_summary")


def base_model_license(base_model: str) -> str | None:
    """The ``license`` of the base model's own card: a local folder's README.md, or a hub id's cached one."""
    path = Path(base_model) / CARD_FILE
    if not path.is_file() and is_hub_id(base_model):
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(base_model, CARD_FILE)
        except Exception:  # no cache, or an id the hub library rejects: nothing to read
            cached = None
        path = Path(cached) if isinstance(cached, str) else path
    if not path.is_file():
        return None
    match = re.search(r"^---\n(.*?)\n---", path.read_text(encoding="utf-8", errors="replace"), re.S)
    found = re.search(r"^license:\s*(\S+)", match[1], re.M) if match else None
    return found[1].strip("'\"") if found else None


def front_matter(run: RunFiles) -> str:
    """Hub metadata: base_model and datasets where they are hub ids, library, license, tags, pipeline."""
    import yaml

    source = (run.summary or {}).get("source") or {}
    data = {}
    if is_hub_id(run.base_model):
        data["base_model"] = run.base_model
    data["library_name"] = "peft" if run.adapter else "transformers"
    data["license"] = license_of(run)
    tags = ["playprm", "clembench", "playpen", "dialogue-games"]
    tags += ["peft", "lora"] + (["qlora"] if run.metrics.get("load_in_4bit") else []) if run.adapter else []
    tags += ["trl", run.kind] if run.kind in POLICY_KINDS else ["process-reward-model", "reward-model"]
    data["tags"] = tags
    if source.get("kind") == "hub":
        data["datasets"] = source["paths"]
    data["pipeline_tag"] = "text-generation" if run.kind in POLICY_KINDS else "text-classification"
    return "---\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True) + "---"


def license_of(run: RunFiles) -> str:
    return run.settings.get("license") or base_model_license(run.info.get("base_model", "")) or "unknown"


def method(run: RunFiles) -> str:
    """How the weights were trained, as this run really did it."""
    if not run.adapter:
        return "full fine-tune of every weight"
    if run.metrics.get("load_in_4bit"):
        from playprm.models.loading import bnb_4bit_config

        quant = bnb_4bit_config()
        double = ", double quantization" if quant.bnb_4bit_use_double_quant else ""
        dtype = str(quant.bnb_4bit_compute_dtype).removeprefix("torch.")
        return f"QLoRA (4-bit {quant.bnb_4bit_quant_type.upper()} base{double}, {dtype} compute, LoRA adapters)"
    dtype = "bfloat16" if run.config.get("bf16") else "float32"
    why = " (no CUDA device: bitsandbytes 4-bit is CUDA-only)" if run.info.get("cpu_fallback") else ""
    return f"LoRA adapters on the unquantized {dtype} base{why}"


def model_details(run: RunFiles) -> str:
    versions = run.info.get("versions", {})
    base = run.base_model
    base_text = f"`{base}`" if is_hub_id(base) else (
        f"the local folder `{base}` (not a hub id: `playprm card --base-model-id ID` names it)")
    kind = ("Causal LM" if run.kind in POLICY_KINDS else "Process reward model (backbone + scalar head on each reply's "
            "end-of-turn token)")
    peft_type = str(run.adapter.get("peft_type", "LORA")).replace("LORA", "LoRA")
    kind += f" — {peft_type} adapter (PEFT)" if run.adapter else " — full weights"
    trainer_class = {"dpo": "DPOTrainer", "grpo": "GRPOTrainer"}.get(run.kind, "SFTTrainer")
    trainer = (f"TRL {versions.get('trl', '')} {trainer_class}"
               if run.kind in POLICY_KINDS
               else f"Transformers {versions.get('transformers', '')} Trainer with playprm's PRM loss")
    lines = [
        f"- **Base model:** {base_text}",
        f"- **Model type:** {kind}",
        f"- **Fine-tuning method:** {method(run)}",
        f"- **Training framework:** {trainer}, PEFT {versions.get('peft', '')}, run by `{run.info.get('command')}` "
        f"(playprm {versions.get('playprm', '')})",
        f"- **License:** {license_of(run)}",
    ]
    return "## Model details\n\n" + "\n".join(lines)


def _source_text(summary: dict | None, info: dict) -> str:
    if not summary:
        return (f"the dataset folder `{info.get('data_dir')}` (no `dataset_summary.json`: not written by "
                "`playprm sft-data`, so the episodes behind it are not known)")
    source = summary["source"]
    if source["kind"] == "results-dir":
        return "clemcore results folders " + ", ".join(f"`{path}`" for path in source["paths"])
    return source.get("description") or f"`{source['paths'][0]}`"


def per_game_table(run: RunFiles) -> str:
    """Per game: episodes (or records) seen by outcome and the samples kept in each split."""
    summary = run.summary
    counts = run.info.get("samples_per_game", {})
    if not summary:
        rows = [[game, c["train"], c["validation"]] for game, c in counts.items()]
        rows.append(["**total**", sum(c["train"] for c in counts.values()),
                     sum(c["validation"] for c in counts.values())])
        what = {"sft": "samples", "dpo": "pairs"}.get(run.kind, "records")
        return markdown_table(["game", f"train {what}", f"validation {what}"], rows)
    words = [*summary["outcome_words"], "unknown"]
    games = sorted(set(summary["seen"]) | set(summary["samples"]))
    rows = []
    for game in games:
        seen = summary["seen"].get(game, {})
        kept = summary["samples"].get(game, {"train": 0, "validation": 0})
        rows.append([game, sum(seen.values()), *(seen.get(word, 0) for word in words), kept["train"],
                     kept["validation"]])
    totals = [sum(row[i] for row in rows) for i in range(1, len(words) + 4)]
    rows.append(["**total**", *totals])
    unit = summary["unit"]
    return markdown_table(["game", f"{unit} seen", *words, "train samples", "validation samples"], rows)


def training_methodology(run: RunFiles) -> str:
    summary = run.summary
    steps = run.state.get("global_step", run.metrics.get("global_step"))
    if run.kind == "grpo":
        metrics = run.metrics
        pipeline = [f"Play each training instance {metrics.get('num_generations')} times with the current policy "
                    "(every player the policy, sampled at the run's temperature), through playprm's runner.",
                    f"Reward each player's side with the episode's outcome (`--reward {metrics.get('reward')}`) and "
                    "its advantage against the group of episodes of the same instance (GRPO).",
                    f"Update on the player's own sampled reply tokens only (the game's text is masked out): {steps} "
                    f"optimizer steps, {metrics.get('episodes_played')} episodes played."]
        return "\n\n".join(["## Training methodology",
                            "Online reinforcement learning on the games' own reward (GRPO, TRL's `GRPOTrainer` with "
                            "playprm's rollout).", "Training pipeline:",
                            "\n".join(f"{i}. {step}" for i, step in enumerate(pipeline, 1)), per_game_table(run)])
    if run.kind == "dpo":
        pipeline = [f"Build preference pairs with `playprm pref-data` (`{run.info.get('data_dir')}`; its README.md "
                    "names the source: Monte-Carlo values of sibling replies, or a scorer's ranking of candidates).",
                    f"Train by DPO against the starting policy as reference: {steps} optimizer steps."]
        return "\n\n".join(["## Training methodology",
                            "Direct preference optimisation: the policy raises the likelihood of each chosen reply "
                            "over its rejected sibling, relative to the starting policy.", "Training pipeline:",
                            "\n".join(f"{i}. {step}" for i, step in enumerate(pipeline, 1)), per_game_table(run)])
    if run.kind == "prm":
        what = ("The PRM learns to predict, from the context a player saw and one candidate reply, whether the "
                f"episode goes on to succeed (loss `{run.metrics.get('loss')}`: binary cross-entropy on the turn "
                "labels, Bradley-Terry on preference pairs, or both). Each labelled reply is one target; turns of "
                "one episode share one forward pass where their tokens line up.")
        pipeline = [f"Play games and keep the transcripts: {_source_text(summary, run.info)}.",
                    "Label every LLM turn with its episode's outcome or a Monte-Carlo estimate (`playprm prm-data`).",
                    f"Train a LoRA adapter and the scalar head: {steps} optimizer steps."]
        return "\n\n".join(["## Training methodology", what, "Training pipeline:",
                            "\n".join(f"{i}. {step}" for i, step in enumerate(pipeline, 1)),
                            per_game_table(run)])
    if summary and summary.get("weights"):
        return weighted_methodology(run, summary, steps)
    kept = ", ".join((summary or {}).get("filter", {}).get("outcome", [])) or "success"
    pipeline = [f"Play games and keep the transcripts: {_source_text(summary, run.info)}."]
    design = []
    if summary:
        unit = summary["unit"]
        seen_total = sum(sum(c.values()) for c in summary["seen"].values())
        kept_total = sum(summary["seen"].get(g, {}).get(w, 0) for g in summary["seen"]
                         for w in summary["kept_outcomes"])
        extra = [f"{key} in {', '.join(values)}" for key, values in summary["filter"].items()
                 if key != "outcome" and values]
        pipeline.append(f"Keep the {unit} whose outcome is {kept}: {kept_total} of {seen_total} {unit} seen"
                        + (f", then samples with {'; '.join(extra)}" if extra else "") + ".")
        if summary["filter"]["outcome"] == ["success"]:
            design.append("**Positive-only filtering:** only winning trajectories are trained on, so the policy "
                          "imitates what led to a win and never learns from partial-credit or losing turns.")
    pipeline.append(f"Fine-tune on every assistant reply of the kept dialogues ({method(run)}): {steps} optimizer "
                    "steps.")
    parts = ["## Training methodology",
             f"Supervised fine-tuning on game transcripts whose outcome was {kept}: each sample is the dialogue one "
             "LLM player saw and said, and the loss covers that player's replies (and their end-of-turn tokens) "
             "only.",
             "Training pipeline:", "\n".join(f"{i}. {step}" for i, step in enumerate(pipeline, 1))]
    return "\n\n".join(parts + design + [per_game_table(run)])


def weighted_methodology(run: RunFiles, summary: dict, steps) -> str:
    """The methodology of a train-sft run on ``sft-data --weights`` turns (value-weighted SFT)."""
    weights = summary["weights"]
    train = weights["train"]
    spread = (f"train weights: mean {train['mean']:.3f}, median {train['median']:.3f}, range {train['min']:.3f}-"
              f"{train['max']:.3f}, {train['zero']} of {train['examples']} at 0") if train.get("examples") else ""
    pipeline = [f"Play games with branched rollouts and keep their trees: {_source_text(summary, run.info)}.",
                f"Value every policy turn by Monte-Carlo (the share of won leaves below its reply) and weight it by "
                f"`{summary.get('built_by', 'playprm sft-data --weights')}`: weight = {weights['formula']}"
                + (f" ({spread})" if spread else "") + ".",
                f"Fine-tune on each turn's reply under the context the player saw, its loss scaled by the weight "
                f"({method(run)}, from `{run.metrics.get('start')}`): {steps} optimizer steps."]
    return "\n\n".join([
        "## Training methodology",
        "Value-weighted supervised fine-tuning (advantage-weighted regression, or filtered behaviour cloning with "
        "0/1 weights): one example per policy turn of branched rollouts, losing episodes' turns included, so "
        "replies that led to wins count more than those that did not.",
        "Training pipeline:", "\n".join(f"{i}. {step}" for i, step in enumerate(pipeline, 1)), per_game_table(run)])


def training_data(run: RunFiles) -> str:
    summary = run.summary
    counts = run.info.get("samples_per_game", {})
    kwargs = run.info.get("chat_template_kwargs") or {}
    template = f"with `{json.dumps(kwargs)}`" if kwargs else "with no extra kwargs"
    train = sum(c["train"] for c in counts.values())
    validation = sum(c["validation"] for c in counts.values())
    what = {"sft": "samples", "dpo": "preference pairs"}.get(run.kind, "turn records")
    lines = [
        f"- **Source:** {_source_text(summary, run.info)}",
        f"- **Dataset folder:** `{run.info.get('data_dir')}`",
        f"- **Games:** {', '.join(counts) or 'none'}",
    ]
    if summary:
        split = summary["split"]
        lines.append(f"- **Split:** by game instance (seed {split['seed']}, val-fraction {split['val_fraction']}): "
                     f"{train} train {what} from {split['train_instances']} instances, {validation} validation "
                     f"{what} from {split['validation_instances']}; no instance in both")
    else:
        lines.append(f"- **Split:** {train} train and {validation} validation {what}, as the folder holds them")
    sequences = run.metrics.get("train_sequences")
    if run.kind == "grpo":
        lines = [f"- **Source:** the policy's own episodes, played during training on the instances of "
                 f"`{run.info.get('data_dir') or 'the built-in games'}`",
                 f"- **Games:** {', '.join(counts) or 'none'}",
                 f"- **Rows:** {train} (instance, player) pairs",
                 f"- **Preprocessing:** the chat template {template}; each player's turns one token row, its sampled "
                 "reply ids trained, the game's text masked"]
        return "## Training data\n\n" + "\n".join(lines)
    if run.kind == "dpo":
        lines.append(f"- **Preprocessing:** the chat template {template}; each pair's context and replies tokenised "
                     "as inference tokenises a turn")
        return "## Training data\n\n" + "\n".join(lines)
    lines.append(f"- **Preprocessing:** the base model's chat template {template}, tokenised turn by turn as "
                 f"inference does; {sequences} train and {run.metrics.get('validation_sequences')} validation "
                 f"sequences of at most {run.config.get('max_length')} tokens")
    length = (summary or {}).get("length")
    if length:
        lines.append(f"- **Length check** (`sft-data --tokenizer {length['tokenizer']} --max-length "
                     f"{length['max_length']}`): {length['within']} samples within, {length['shortened']} shortened "
                     f"by cutting the oldest context, {length['dropped']} dropped")
    return "## Training data\n\n" + "\n".join(lines)


def _number(value) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _schedule(config: dict) -> str:
    warmup = config.get("warmup_steps") or 0
    warmup_text = f"{warmup:.0%} of steps" if isinstance(warmup, float) and 0 < warmup < 1 else f"{warmup} steps"
    return f"{config.get('lr_scheduler_type')}, warmup {warmup_text}" if warmup else str(config.get("lr_scheduler_type"))


def hyperparameters(run: RunFiles) -> str:
    config, metrics, adapter = run.config, run.metrics, run.adapter
    world = metrics.get("world_size", config.get("world_size", 1))
    accumulation = metrics.get("gradient_accumulation_steps", config.get("gradient_accumulation_steps"))
    per_device = config.get("per_device_train_batch_size")
    steps = run.state.get("global_step")
    epochs = run.state.get("epoch")
    budget = f"max {config['max_steps']} steps" if config.get("max_steps", -1) > 0 else \
        f"{_number(config.get('num_train_epochs'))} epochs"
    patience = config.get("early_stopping_patience")
    stop = f", early stopping after {patience} evaluations without improvement" if patience else ""
    rows = [
        ["Learning rate", _number(config.get("learning_rate"))],
        ["LR scheduler", _schedule(config)],
        ["Epochs / steps", f"{steps} steps ({epochs:.2f} epochs) of {budget}{stop}" if epochs is not None
         else f"{steps} steps of {budget}{stop}"],
        ["Per-device batch size", per_device],
        ["Gradient accumulation", accumulation],
        ["Effective batch size", f"{per_device * accumulation * world} ({per_device} × {accumulation} × {world} "
                                 "processes)"],
        ["Max sequence length", f"{config.get('max_length')} tokens"],
    ]
    if adapter:
        targets = adapter.get("target_modules")
        targets = ", ".join(sorted(targets)) if isinstance(targets, list) else str(targets)
        rows += [["LoRA rank (r)", adapter.get("r")], ["LoRA alpha", adapter.get("lora_alpha")],
                 ["LoRA dropout", _number(adapter.get("lora_dropout"))], ["LoRA target modules", targets]]
    quantized = metrics.get("load_in_4bit")
    rows += [
        ["Quantization", "4-bit NF4 (bitsandbytes)" if quantized else "none"],
        ["Compute dtype", "bfloat16" if quantized or config.get("bf16") else "float32"],
        ["Optimizer", metrics.get("optim", config.get("optim"))],
        ["Seed", config.get("seed")],
    ]
    if config.get("loss_weight_pattern") is not None:
        tokens = (f" ({metrics['pattern_tokens']:,} of {metrics['trained_tokens']:,} trained tokens)"
                  if "pattern_tokens" in metrics else "")
        rows.append(["Token loss weight", f"{_number(config.get('loss_weight'))} on reply tokens matching "
                                          f"`{config['loss_weight_pattern']}`{tokens}, 1 on the others"])
    if run.kind == "prm":
        rows.insert(0, ["Loss", metrics.get("loss")])
    if run.kind == "dpo":
        rows.insert(0, ["DPO loss, beta", f"{', '.join(config.get('loss_type') or ['sigmoid'])}, {metrics.get('beta')}"])
    return "## Hyperparameters\n\n" + markdown_table(["Parameter", "Value"], rows)


def results(run: RunFiles) -> str:
    metrics, state = run.metrics, run.state
    best = state.get("best_model_checkpoint")
    by = run.config.get("metric_for_best_model") or "loss"
    by = by if by.startswith("eval_") else f"eval_{by}"  # the Trainer reads it with this prefix
    where = (f"the best checkpoint (`{Path(best).name}`, by `{by}` = {state.get('best_metric'):.4f}, loaded at the "
             "end of training)" if best else "the final weights (no best checkpoint was kept)")
    if run.kind == "dpo":
        rows = [[name, f"{metrics[key]:.4f}"] for name, key in (
            ("Validation DPO loss", "validation_loss"), ("Validation reward accuracy", "validation_reward_accuracy"),
            ("Validation reward margin", "validation_reward_margin"), ("Training loss (mean over the run)", "train_loss"))
            if isinstance(metrics.get(key), (int, float))]
        return "\n\n".join(["## Validation results", f"Measured on the validation pairs with {where}.",
                            markdown_table(["Metric", "Value"], rows)])
    if run.kind == "grpo":
        rows = [[name, f"{metrics[key]:.4f}"] for name, key in (
            ("Mean reward, first step", "first_reward"), ("Mean reward, last step", "last_reward"),
            ("Training loss (mean over the run)", "train_loss")) if isinstance(metrics.get(key), (int, float))]
        return "\n\n".join(["## Training results", "The mean episode reward of the rollouts (sampled play, not "
                            "greedy; evaluate on held-out instances with `playprm eval`).",
                            markdown_table(["Metric", "Value"], rows)])
    if run.kind == "sft":
        rows = [["Validation loss (per assistant token)", f"{metrics['validation_loss']:.4f}"],
                ["Validation token accuracy", f"{metrics['validation_token_accuracy']:.1%}"],
                ["Validation assistant tokens", metrics.get("validation_tokens")],
                ["Training loss (mean over the run)", f"{metrics['train_loss']:.4f}"]]
        return "\n\n".join(["## Validation results", f"Measured on the validation split with {where}.",
                            markdown_table(["Metric", "Value"], rows)])
    rows = [[name, f"{metrics[key]:.4f}"] for name, key in (
        ("AUROC", "validation_auroc"), ("Brier score", "validation_brier"), ("Pair accuracy", "validation_pair_accuracy"),
        ("Validation loss", "validation_loss")) if isinstance(metrics.get(key), (int, float))]
    rows += [["Labelled validation turns", metrics.get("validation_count")],
             ["Share of positive labels", f"{metrics.get('validation_positive_rate', 0):.1%}"],
             ["Training loss (mean over the run)", f"{metrics['train_loss']:.4f}"]]
    bins = [[f"{b['low']:.1f}–{b['high']:.1f}", b["count"], f"{b['mean_probability']:.3f}", f"{b['mean_label']:.3f}"]
            for b in metrics.get("calibration", []) if b["count"]]
    parts = ["## Validation results", f"Measured on the validation split with {where}.",
             markdown_table(["Metric", "Value"], rows), sibling_section(metrics), "Calibration (filled bins):",
             markdown_table(["predicted", "turns", "mean predicted", "mean label"], bins)]
    if (run.dir / CALIBRATION_PLOT).is_file():
        parts.append(f"![Calibration of the PRM on the validation turns]({CALIBRATION_PLOT})")
    return "\n\n".join(parts)


def sibling_section(metrics: dict) -> str:
    """What best-of-N asks of the PRM: how it orders replies to one validation context (``sibling_*`` metrics)."""
    games = metrics.get("validation_sibling_games") or {}
    if not games:
        return ("Sibling ranking: no validation context holds two different replies with different labels "
                "(best-of-N's question, which reply to one context is better, is not measured here).")
    number = lambda value, form: format(value, form) if isinstance(value, (int, float)) else "–"  # noqa: E731
    rows = [[game, row.get("pairs"), number(row.get("accuracy"), ".1%"), number(row.get("delta"), ".4f"),
             number(row.get("sigma"), ".4f") + (" (all games)" if "sigma" in row and row.get("sigma_from") == "all games"
                                                else ""),
             number(row.get("delta_over_sigma"), ".3f")] for game, row in games.items()]
    rows.append(["all", metrics.get("validation_sibling_pairs"),
                 number(metrics.get("validation_sibling_accuracy"), ".1%"),
                 number(metrics.get("validation_sibling_delta"), ".4f"),
                 number(metrics.get("validation_sibling_sigma"), ".4f"),
                 number(metrics.get("validation_sibling_delta_over_sigma"), ".3f")])
    return ("Sibling ranking (what best-of-N asks: of several replies to one context, which is better), on validation "
            "pairs of different replies to one context with different labels. Accuracy: share of pairs where the "
            "better-labelled reply scores higher (ties count 1/2; 50% is chance). Δ: mean score gap in its favour; "
            "σ: root mean square score gap between replies of equal label (a game without such pairs uses all "
            "games'; – where no game has one); the useful search width grows with (Δ/σ)² (Dalal et al. 2026).\n\n"
            + markdown_table(["game", "pairs", "sibling accuracy", "Δ", "σ", "Δ/σ"], rows))


def _flops(value: float) -> str:
    exponent = len(str(int(value))) - 1 if value >= 1 else 0
    return f"{value / 10**exponent:.2f} × 10^{exponent}" if value else "0"


def compute(run: RunFiles) -> str:
    hardware = run.info.get("hardware", {})
    seconds = run.metrics.get("train_runtime_s") or 0
    hours, rest = divmod(int(round(seconds)), 3600)
    clock = f" ({hours}:{rest // 60:02d}:{rest % 60:02d})" if seconds >= 60 else ""
    rows = [["Hardware", hardware.get("devices")], ["Processes", hardware.get("processes")],
            ["Training time", f"{seconds:.1f} s{clock}"],
            ["Steps per second", f"{run.metrics.get('train_steps_per_second', 0):.3f}"],
            ["Total FLOPs (Trainer estimate)", _flops(float(run.state.get("total_flos", 0)))]]
    return "## Compute\n\n" + markdown_table(["Resource", "Details"], rows)


def usage(run: RunFiles) -> str:
    return usage_sft(run) if run.kind in POLICY_KINDS else usage_prm(run)


def _quantization_lines(run: RunFiles) -> tuple[list[str], str]:
    if not run.metrics.get("load_in_4bit"):
        return [], ""
    from playprm.models.loading import bnb_4bit_config

    quant = bnb_4bit_config()
    dtype = str(quant.bnb_4bit_compute_dtype).removeprefix("torch.")
    return ["bnb_config = BitsAndBytesConfig(", "    load_in_4bit=True,",
            f"    bnb_4bit_compute_dtype=torch.{dtype},",
            f"    bnb_4bit_use_double_quant={quant.bnb_4bit_use_double_quant},",
            f'    bnb_4bit_quant_type="{quant.bnb_4bit_quant_type}",', ")"], \
        "    quantization_config=bnb_config,\n"


def usage_sft(run: RunFiles) -> str:
    quant, argument = _quantization_lines(run)
    imports = "from transformers import AutoModelForCausalLM, AutoTokenizer" + (", BitsAndBytesConfig" if quant else "")
    lines = ["from peft import PeftModel", imports] + (["import torch"] if quant else []) + [""]
    lines += [*quant, ""] if quant else []
    if run.adapter:
        lines += ["base = AutoModelForCausalLM.from_pretrained(", f'    "{run.base_model}",',
                  f'{argument}    device_map="auto",', ")",
                  f'model = PeftModel.from_pretrained(base, "{run.location}")']
    else:  # a full-weight run saved the whole model
        lines = lines[1:] + ["model = AutoModelForCausalLM.from_pretrained(", f'    "{run.location}",',
                             f'{argument}    device_map="auto",', ")"]
    lines.append(f'tokenizer = AutoTokenizer.from_pretrained("{run.location}")')
    snippet = "\n".join(lines)
    kwargs = run.info.get("chat_template_kwargs") or {}
    if kwargs:
        snippet += f"\n# chat with the kwargs it was trained with: tokenizer.apply_chat_template(..., **{kwargs!r})"
    entry = dict(run.registry)
    if run.adapter and run.settings.get("base_model_id"):  # the run trained on a local copy of this hub model
        entry["huggingface_id"] = run.base_model
    if run.config.get("hub_model_id") and run.adapter:
        entry["model_config"] = {**entry.get("model_config", {}), "peft_model": run.location}
    name = entry.get("model_name", run.name)
    prm = run.settings.get("companion")
    prm_arg = f"--prm-path {prm}" if prm else '--prm-path "$PRM"'
    commands = "\n".join([
        f"playprm eval --policy-model {name} --game-all --mode greedy",
        f"playprm eval --policy-model {name} --game-all --mode best-of-n {prm_arg} {card_flags()}",
        f"playprm eval --policy-model {name} --game-all --mode beam-search {prm_arg} {card_flags(beam=True)}",
    ])
    prm_note = (f"The companion PRM is `{prm}`." if prm else
                "`PRM` is the folder `playprm train-prm` wrote (`playprm card --companion PATH` writes it in here).")
    return "\n\n".join([
        "## Usage", "### Standalone (greedy inference)", f"```python\n{snippet}\n```",
        "### With PRM-guided inference",
        f"Register the adapter in `model_registry.json` (this run wrote the entry as `{REGISTRY_FILE}`):",
        f"```json\n{json.dumps(entry, indent=2)}\n```",
        "Then play greedy, best-of-N with the companion PRM, and beam search:",
        f"```bash\n{commands}\n```", prm_note, report_note(run),
    ])


def usage_prm(run: RunFiles) -> str:
    policy = run.settings.get("companion")
    policy_arg = policy or '"$POLICY"'
    code = "\n".join([
        "from playprm.prm.scorer import PRMScorer", "",
        f'scorer = PRMScorer.from_path("{run.location}"' + (", load_in_4bit=True)" if run.metrics.get("load_in_4bit")
                                                            else ")"),
        "context = [{\"role\": \"user\", \"content\": \"Let's play Wordle. Make your first guess.\"}]",
        'scores = scorer.score([context], [["guess: crane", "guess: xxxxx"]])  # probabilities of success',
    ])
    commands = "\n".join([
        f"playprm eval --policy-model {policy_arg} --game-all --mode best-of-n --prm-path {run.location} "
        + card_flags(),
        f"playprm eval --policy-model {policy_arg} --game-all --mode beam-search --prm-path {run.location} "
        + card_flags(beam=True),
    ])
    base = run.prm_config.get("base_model") or run.base_model
    note = (f"The companion policy is `{policy}`." if policy else "`POLICY` is a model name of "
            "`model_registry.json`, e.g. the one `playprm train-sft` wrote (`playprm card --companion NAME` writes "
            "it in here).")
    return "\n\n".join([
        "## Usage", f"The PRM loads its base model `{base}`, the adapter in `adapter/` and the head in "
        "`head.safetensors` (see `prm_config.json`).", f"```python\n{code}\n```",
        "Guide a policy with it:", f"```bash\n{commands}\n```", note, report_note(run)])


def card_flags(*, beam: bool = False) -> str:
    """The eval flags of the card's PRM-guided inference, spelt from eval's own defaults (``EvalConfig``)."""
    from playprm.play.config import SAMPLING_TEMPERATURE, EvalConfig, field_defaults

    card = field_defaults(EvalConfig)
    flags = f"--n-candidates {card['n_candidates']}"
    if beam:
        flags += f" --num-beam-iterations {card['num_beam_iterations']}"
    return flags + f" --temperature {SAMPLING_TEMPERATURE} --max-tokens {card['max_tokens']}"


def report_note(run: RunFiles) -> str:
    return ("Each command prints its results folder; `playprm report --compare` sets those folders side by side, "
            f"and `playprm card --model-dir {run.dir} --report` with the report's folder adds its table to this card.")


def framework_section(run: RunFiles) -> str:
    versions = run.info.get("versions", {})
    names = {"peft": "PEFT", "trl": "TRL", "transformers": "Transformers", "torch": "PyTorch",
             "accelerate": "Accelerate", "datasets": "Datasets", "bitsandbytes": "bitsandbytes", "playprm": "playprm"}
    return "## Framework versions\n\n" + "\n".join(f"- {names.get(k, k)} {v}" for k, v in versions.items())


def evaluation_section(run: RunFiles) -> str | None:
    from playprm.train.card_evaluation import render_evaluation

    rows = run.settings.get("evaluation")
    return render_evaluation(rows, run.settings.get("evaluation_sources", [])) if rows else None


def intro(run: RunFiles) -> str:
    counts = run.info.get("samples_per_game", {})
    train = sum(c["train"] for c in counts.values())
    games = ", ".join(counts)
    if run.kind == "dpo":
        return (f"A policy trained by direct preference optimisation (`playprm train-dpo`, {method(run)}) from "
                f"`{run.metrics.get('start')}` on {train} preference pairs ({games}): two replies to one context, the "
                "better-valued one preferred; the reference policy is the starting policy.")
    if run.kind == "sft" and (run.summary or {}).get("weights"):
        return (f"A value-weighted supervised fine-tune (`playprm train-sft`, {method(run)}) from "
                f"`{run.metrics.get('start')}` on {train} single game turns ({games}) of branched rollouts, each "
                f"reply's loss weighted by its Monte-Carlo value (rule `{run.summary['weights']['rule']}`).")
    if run.kind == "grpo":
        return (f"A policy trained by online reinforcement learning (`playprm train-grpo`, GRPO, {method(run)}) from "
                f"`{run.metrics.get('start')}` on its own episodes of {train} (instance, player) rows ({games}), "
                "rewarded by the games' own outcome.")
    if run.kind == "sft":
        return (f"A supervised fine-tune of `{run.base_model}` ({method(run)}) on {train} winning game dialogues "
                f"({games}), trained with `playprm train-sft`. It is the policy of PRM-guided inference: at each game turn a "
                "companion process reward model scores candidate replies and the best one is played (best-of-N, "
                "beam search).")
    return (f"A process reward model on `{run.base_model}` ({method(run)}), trained with `playprm train-prm` on "
            f"{train} labelled game turns ({games}). It scores a candidate reply in the context a player saw with "
            "the probability that the episode succeeds, for best-of-N and beam-search inference.")


def render_model_card(model_dir: Path) -> str:
    """The full README.md of the run in ``model_dir``."""
    run = RunFiles(model_dir)
    sections = [front_matter(run), f"# {run.name}", intro(run), model_details(run), training_methodology(run),
                training_data(run), hyperparameters(run), results(run), compute(run), evaluation_section(run),
                usage(run), framework_section(run)]
    return "\n\n".join(section for section in sections if section) + "\n"


def write_model_card(model_dir: Path) -> Path:
    """Render and write ``model_dir/README.md`` atomically."""
    return write_text(Path(model_dir) / CARD_FILE, render_model_card(model_dir))


def is_playprm_run(model_dir: Path) -> bool:
    return (Path(model_dir) / RUN_INFO_FILE).is_file() and (Path(model_dir) / METRICS_FILE).is_file()


def replace_evaluation(card: str, section: str) -> str:
    """``card`` with its Evaluation section replaced by ``section`` (inserted before Usage, else appended)."""
    lines = card.split("\n")
    start = next((i for i, line in enumerate(lines) if line.strip() == EVALUATION_HEADING), None)
    if start is not None:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        return "\n".join(lines[:start] + section.rstrip("\n").split("\n") + [""] + lines[end:])
    usage_at = next((i for i, line in enumerate(lines) if line.strip() == "## Usage"), None)
    if usage_at is None:
        return card.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n"
    return "\n".join(lines[:usage_at] + section.rstrip("\n").split("\n") + [""] + lines[usage_at:])


def write_run_card(output_dir: Path, *, kind: str, trainer, config, base, data_dir: Path | None,
                   chat_template_kwargs: dict, samples_per_game: dict | None = None) -> Path:
    """At the end of a training run: record the run's files (``playprm.train.run_record``), then write the card
    over the README.md files TRL and PEFT left."""
    from playprm.train.run_record import record_run

    record_run(output_dir, kind=kind, trainer=trainer, config=config, base=base, data_dir=data_dir,
               chat_template_kwargs=chat_template_kwargs, samples_per_game=samples_per_game)
    return write_model_card(output_dir)
