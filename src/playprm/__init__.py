"""playprm: process-reward-model guided policies for clembench dialogue games."""

__version__ = "0.1.0"
