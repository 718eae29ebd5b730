"""The runtime: config, model providers, the agent loop, checkpoints, CLI entry points."""

__version__ = "0.1.0"
