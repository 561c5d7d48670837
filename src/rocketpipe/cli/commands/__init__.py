"""Subcommands of the ``rocketpipe`` CLI: one module per command (serve, produce, consume)."""
