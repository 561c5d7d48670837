"""Auto-registration of ``format("rocketmq")`` for PySpark (4.0+).

PySpark's data source lookup imports every top-level module whose name starts with
``pyspark_`` and registers its ``DefaultSource`` under ``DefaultSource.name()``, so installing
rocketpipe is enough for ``spark.read.format("rocketmq")``, ``readStream``, ``df.write`` and
``df.writeStream`` — no ``spark.dataSource.register``.

When rocketpipe is not installed but shipped with ``spark-submit --py-files rocketpipe.zip``,
that lookup does not see it: call ``pyspark_rocketmq.register(spark)`` once, before the first
``format("rocketmq")`` (see :func:`rocketpipe.spark.source.register` and docs/spark-deployment.md).
"""

from __future__ import annotations

from rocketpipe.spark.source import RocketMQDataSource as DefaultSource
from rocketpipe.spark.source import register

__all__ = ["DefaultSource", "register"]
