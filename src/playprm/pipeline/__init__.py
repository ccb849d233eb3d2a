"""The pipeline presets (``playprm pipeline``) and what they leave behind: the stage runner and its done markers
(``stages``), the smoke run (``tiny``), the card's claim at small scale (``small``) and its RESULTS.md
(``summary``), and the real-hardware plan (``plan``)."""
