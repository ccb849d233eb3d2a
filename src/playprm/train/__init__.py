"""Training: QLoRA SFT of the policy (``sft``, TRL SFTTrainer) and the process reward model (``prm``, HF Trainer).

``recipe`` maps YAML recipes and ``--field VALUE`` options onto the configs (``sft_config``, ``prm_config``);
``qlora`` holds the model card's shared settings and device defaults; ``base_model`` resolves and loads
``--model``; ``dataset_files`` reads the datasets; ``run_dir`` checks the output folder and resuming;
``prm_metrics`` computes AUROC, Brier score and the calibration plot; ``run_record`` leaves the run's settings,
data summary, hardware and versions beside the model, ``model_card`` renders README.md from those files and
``card_evaluation`` its Evaluation section from ``playprm report`` tables. See docs/training.md.
"""
