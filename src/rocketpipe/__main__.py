"""``python -m rocketpipe``: the same command line as the ``rocketpipe`` script."""

from __future__ import annotations

from rocketpipe.cli.main import app

if __name__ == "__main__":
    app(prog_name="rocketpipe")
