"""The ``rocketmq`` Spark data source (L4 spark).

Usage::

    spark.readStream.format("rocketmq").option("nameServer", "127.0.0.1:9876")
        .option("topic", "TopicA").load()
    spark.read.format("rocketmq").option("nameServer", ...).option("topic", ...).load()
    df.write.format("rocketmq").option("nameServer", ...).option("topic", ...).mode("append").save()
    df.writeStream.format("rocketmq").option("nameServer", ...).option("checkpointLocation", ...).start()

``format("rocketmq")`` works without registration when ``rocketpipe`` is installed (the
top-level ``pyspark_rocketmq`` module exposes ``DefaultSource``), or after
``spark.dataSource.register(RocketMQDataSource)``. Options are listed in
:mod:`rocketpipe.spark.options`; the offset JSON in :mod:`rocketpipe.spark.offsets`; the sink's
column contract (Kafka-sink-like: ``body`` required, optional ``topic``, ``tags``, ``keys``,
``properties``, ``queue_id``, ``broker_name``) and delivery guarantee (at-least-once) in
:mod:`rocketpipe.spark.writer`.

Rows have a fixed schema (:data:`SCHEMA`); a user-supplied ``.schema(...)`` must equal it.
Limitations (Spark's Python Data Source API): micro-batch only (no continuous trigger), no
column pruning and no filter pushdown, so every column is always decoded.

Imports: pyspark and the other ``rocketpipe.spark`` modules.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .options import SourceOptionError, parse_sink_options, parse_source_options
from .reader import RocketMQBatchReader, RocketMQStreamReader
from .writer import make_writer

#: Row schema of the source; ``read()`` yields Arrow batches of exactly
#: ``to_arrow_schema(SCHEMA, timezone="UTC")`` (= :data:`rocketpipe.spark.decode.ARROW_SCHEMA`).
SCHEMA: Final = StructType(
    [
        StructField("topic", StringType()),
        StructField("broker_name", StringType()),
        StructField("queue_id", IntegerType()),
        StructField("queue_offset", LongType()),
        StructField("msg_id", StringType()),
        StructField("tags", StringType()),
        StructField("keys", StringType()),
        StructField("body", BinaryType()),
        StructField("born_timestamp", TimestampType()),
        StructField("store_timestamp", TimestampType()),
        StructField("reconsume_times", IntegerType()),
        StructField("properties", MapType(StringType(), StringType())),
    ]
)


def _check_schema(schema: StructType) -> None:
    if schema != SCHEMA:
        raise SourceOptionError(
            "format('rocketmq') has a fixed schema; remove .schema(...) or pass exactly " + SCHEMA.simpleString()
        )


class RocketMQDataSource(DataSource):
    """Apache RocketMQ topics as a Spark batch and streaming source and sink (``format("rocketmq")``).

    Options are validated when Spark asks for a reader or writer and raise
    :class:`~rocketpipe.spark.options.SourceOptionError` /
    :class:`~rocketpipe.spark.options.SinkOptionError` (both ``ValueError``) naming the fix.
    """

    @classmethod
    def name(cls) -> str:
        """The format name: ``rocketmq``."""
        return "rocketmq"

    def schema(self) -> StructType:
        """The fixed row schema (:data:`SCHEMA`)."""
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader over ``[startingOffsets, endingOffsets)``.

        Raises:
            SourceOptionError: invalid options or a different schema.
        """
        _check_schema(schema)
        return RocketMQBatchReader(parse_source_options(self.options, streaming=False))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch stream reader.

        Raises:
            SourceOptionError: invalid options or a different schema.
        """
        _check_schema(schema)
        return RocketMQStreamReader(parse_source_options(self.options, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch writer: every row of ``schema`` becomes one message (driver side, no I/O).

        Raises:
            SinkOptionError: invalid options, no topic, or ``mode("overwrite")``.
            SinkSchemaError: no ``body`` column, or a sink column of an unsupported type.
        """
        return make_writer(parse_sink_options(self.options), schema, overwrite=overwrite, streaming=False)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A micro-batch writer (also rebuilt by Spark for every commit; no I/O here).

        ``overwrite`` (complete output mode) re-sends the whole result table every batch.

        Raises:
            SinkOptionError, SinkSchemaError: as :meth:`writer`.
        """
        return make_writer(parse_sink_options(self.options), schema, overwrite=overwrite, streaming=True)
