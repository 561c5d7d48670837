"""PySpark connector: ``format("rocketmq")`` batch and streaming source and sink (L4, optional extra).

Needs the ``rocketpipe[spark]`` extra (pyspark 4.3, pyarrow, pandas<3). Modules:

* :mod:`~rocketpipe.spark.source` — the DataSource (``name()``, schema, readers, writers);
* :mod:`~rocketpipe.spark.reader` — batch/stream readers and the executor pull loop;
* :mod:`~rocketpipe.spark.writer` — batch/stream writers (the sink) and the executor send loop;
* :mod:`~rocketpipe.spark.decode` — column-wise Arrow decoding of pull bodies;
* :mod:`~rocketpipe.spark.offsets` — offset JSON and partition planning (pure);
* :mod:`~rocketpipe.spark.options` — option parsing and validation (pure).

Imports only rocketpipe's public client API, :mod:`rocketpipe.protocol`, :mod:`rocketpipe.errors`,
pyspark, pyarrow and numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .options import SinkOptionError, SourceOptionError
    from .reader import DataLossError, SourceError
    from .source import SCHEMA, RocketMQDataSource, register
    from .writer import RocketMQCommitMessage, SinkDataError, SinkError, SinkSchemaError

# Lazy (PEP 562): Spark's data-source lookup imports ``rocketpipe.spark.source`` in a fresh
# Python process for every planning step, which must not pay for the reader's and writer's
# imports (the client, pyarrow, numpy).
_HOME: dict[str, str] = {
    "SinkOptionError": ".options",
    "SourceOptionError": ".options",
    "DataLossError": ".reader",
    "SourceError": ".reader",
    "SCHEMA": ".source",
    "RocketMQDataSource": ".source",
    "register": ".source",
    "RocketMQCommitMessage": ".writer",
    "SinkDataError": ".writer",
    "SinkError": ".writer",
    "SinkSchemaError": ".writer",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "SCHEMA",
    "DataLossError",
    "RocketMQCommitMessage",
    "RocketMQDataSource",
    "SinkDataError",
    "SinkError",
    "SinkOptionError",
    "SinkSchemaError",
    "SourceError",
    "SourceOptionError",
    "register",
]
