"""The ``rocketpipe`` command line (L4): serve, produce, consume, demo.

Built with typer and rich. May import only the public API of ``rocketpipe.client``,
``rocketpipe.broker``, ``rocketpipe.namesrv`` and ``rocketpipe.testing``; the Spark source is
used through ``format("rocketmq")`` only. Entry point: :data:`rocketpipe.cli.main.app`.
"""
