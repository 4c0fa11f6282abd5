"""askgate: let AI agents ask a human 1-3 structured questions and wait for the answer."""

__version__ = "0.1.0"
