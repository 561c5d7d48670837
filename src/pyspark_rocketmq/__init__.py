"""Auto-registration of ``format("rocketmq")`` for PySpark (4.0+).

PySpark's data source lookup imports every top-level module whose name starts with
``pyspark_`` and registers its ``DefaultSource`` under ``DefaultSource.name()``, so installing
rocketpipe is enough for ``spark.read.format("rocketmq")``, ``readStream``, ``df.write`` and
``df.writeStream`` — no ``spark.dataSource.register``.
"""

from __future__ import annotations

from rocketpipe.spark.source import RocketMQDataSource as DefaultSource

__all__ = ["DefaultSource"]
