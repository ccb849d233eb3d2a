"""Training: QLoRA SFT of the policy (``sft``, TRL SFTTrainer) and the process reward model (``prm``, HF Trainer).

``recipe`` maps YAML recipes and ``--field VALUE`` options onto the configs (``sft_config``, ``prm_config``);
``qlora`` holds the model card's shared settings and device defaults; ``base_model`` resolves and loads
``--model``; ``dataset_files`` reads the datasets; ``run_dir`` checks the output folder and resuming;
``prm_metrics`` computes AUROC, Brier score and the calibration plot. See docs/training.md.
"""
