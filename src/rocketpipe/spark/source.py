"""The ``rocketmq`` Spark data source (L4 spark).

Usage::

    spark.readStream.format("rocketmq").option("nameServer", "127.0.0.1:9876")
        .option("topic", "TopicA").load()
    spark.read.format("rocketmq").option("nameServer", ...).option("topic", ...).load()
    df.write.format("rocketmq").option("nameServer", ...).option("topic", ...).mode("append").save()
    df.writeStream.format("rocketmq").option("nameServer", ...).option("checkpointLocation", ...).start()

``format("rocketmq")`` works without registration when ``rocketpipe`` is installed (the
top-level ``pyspark_rocketmq`` module exposes ``DefaultSource``), or after :func:`register`
(``spark.dataSource.register(RocketMQDataSource)`` plus what a streaming read needs), which an
application that ships rocketpipe with ``--py-files rocketpipe.zip`` must call: Spark's
data-source lookup does not see ``--py-files`` (docs/spark-deployment.md has the details). Options are listed in
:mod:`rocketpipe.spark.options`; the offset JSON in :mod:`rocketpipe.spark.offsets`; the sink's
column contract (Kafka-sink-like: ``body`` required, optional ``topic``, ``tags``, ``keys``,
``properties``, ``queue_id``, ``broker_name``) and delivery guarantee (at-least-once) in
:mod:`rocketpipe.spark.writer`.

Rows have the schema :data:`SCHEMA`. A user-supplied ``.schema(...)`` may name a subset of its
columns, in any order, with the same types (e.g. ``"msg_id STRING, queue_offset LONG"``): the
batches then carry only those columns, so Spark neither receives nor converts the others (a
projection the user states; Spark's Python Data Source API does no column pruning itself).
With option ``includeHeaders=true`` rows also have Kafka's ``headers`` column
(:data:`HEADERS_FIELD`), the user properties that the ``properties`` map holds too.

Limitations: micro-batch only (no continuous trigger); filters are pushed down only with option
``pushFilters=true`` (:mod:`rocketpipe.spark.pushdown`).

Imports: pyspark and the other ``rocketpipe.spark`` modules.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from .options import SourceOptionError, SourceOptions, parse_sink_options, parse_source_options

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

# The readers and writers are imported when Spark asks for one: the data-source lookup and
# schema steps (each a fresh Python process) then import only this module and the options.

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


#: The column option ``includeHeaders=true`` adds after :data:`SCHEMA`'s (Kafka's ``headers``):
#: the message's user properties (RocketMQ's system properties left out) in stored order, each
#: value UTF-8 encoded; ``[]`` for a message without user properties.
HEADERS_FIELD: Final = StructField(
    "headers",
    ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
)


def source_schema(include_headers: bool) -> StructType:
    """The source's full row schema: :data:`SCHEMA`, plus :data:`HEADERS_FIELD` with ``includeHeaders``."""
    return StructType([*SCHEMA.fields, HEADERS_FIELD]) if include_headers else SCHEMA


def _include_headers(options: Mapping[str, str]) -> bool:
    """Whether option ``includeHeaders`` is ``true`` (any case; a bad value fails later, in
    :func:`~rocketpipe.spark.options.parse_source_options`)."""
    return any(str(k).lower() == "includeheaders" and str(v).strip().lower() == "true" for k, v in options.items())


def projection(schema: StructType, include_headers: bool = False) -> tuple[str, ...] | None:
    """The source columns ``schema`` selects, in its order; ``None`` when it is :data:`SCHEMA` itself.

    Args:
        schema: the user's ``.schema(...)`` or the source's own.
        include_headers: option ``includeHeaders``: the ``headers`` column may be selected.

    Raises:
        SourceOptionError: a column that the source does not have (``headers`` without
            ``includeHeaders=true``), a type other than the source's, a duplicate, or no column.
    """
    if schema == SCHEMA:
        return None
    full = source_schema(include_headers)
    ours = {f.name: f.dataType for f in full.fields}
    names: list[str] = []
    for f in schema.fields:
        if f.name == HEADERS_FIELD.name and not include_headers:
            raise SourceOptionError(
                ".schema(...) column 'headers' needs .option('includeHeaders', 'true') (Kafka's option)"
            )
        if f.name not in ours or f.dataType != ours[f.name] or f.name in names:
            why = (
                "is not a column of format('rocketmq')"
                if f.name not in ours
                else "appears twice"
                if f.name in names
                else f"has type {f.dataType.simpleString()}, the source's is {ours[f.name].simpleString()}"
            )
            raise SourceOptionError(
                f".schema(...) column {f.name!r} {why}; name a subset of "
                + full.simpleString()
                + " or remove .schema(...)"
            )
        names.append(f.name)
    if not names:
        raise SourceOptionError(".schema(...) names no column; name a subset of " + full.simpleString())
    return tuple(names)


def _source_options(options: Mapping[str, str], schema: StructType, *, streaming: bool) -> SourceOptions:
    parsed = parse_source_options(options, streaming=streaming)
    return dataclasses.replace(parsed, columns=projection(schema, parsed.include_headers))


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
        """The row schema: :data:`SCHEMA`, with option ``includeHeaders=true`` followed by
        :data:`HEADERS_FIELD` (:func:`source_schema`)."""
        return source_schema(_include_headers(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        """A batch reader over ``[startingOffsets, endingOffsets)``; with option
        ``pushFilters=true`` one that narrows its pulls by the filters Spark pushes down.

        Raises:
            SourceOptionError: invalid options, or a schema that is not a subset of :data:`SCHEMA`.
        """
        from .reader import RocketMQBatchReader, RocketMQPushdownBatchReader

        options = _source_options(self.options, schema, streaming=False)
        if options.push_filters:
            return RocketMQPushdownBatchReader(options)
        return RocketMQBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A micro-batch stream reader.

        Raises:
            SourceOptionError: invalid options, or a schema that is not a subset of :data:`SCHEMA`.
        """
        from .reader import RocketMQStreamReader

        return RocketMQStreamReader(_source_options(self.options, schema, streaming=True))

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """A batch writer: every row of ``schema`` becomes one message (driver side, no I/O).

        Raises:
            SinkOptionError: invalid options, no topic, or ``mode("overwrite")``.
            SinkSchemaError: no ``body`` column, or a sink column of an unsupported type.
        """
        from .writer import make_writer

        return make_writer(parse_sink_options(self.options), schema, overwrite=overwrite, streaming=False)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A micro-batch writer (also rebuilt by Spark for every commit; no I/O here).

        ``overwrite`` (complete output mode) re-sends the whole result table every batch.

        Raises:
            SinkOptionError, SinkSchemaError: as :meth:`writer`.
        """
        from .writer import make_writer

        return make_writer(parse_sink_options(self.options), schema, overwrite=overwrite, streaming=True)


#: The sub-directory of the driver's SparkFiles root in which Spark 4.3's JVM tells the Python
#: streaming source process (``PythonStreamingSourceRunner``: ``writeSparkFiles(Some("streaming_job"),
#: …)``) to find the ``--py-files`` archives; nothing creates it.
STREAMING_FILES_DIR: Final = "streaming_job"


def register(spark: SparkSession) -> None:
    """Register ``format("rocketmq")`` in ``spark``, for rocketpipe shipped as ``--py-files``.

    Needed when rocketpipe is not installed in the Python of the driver and every executor but
    comes with ``spark-submit --py-files rocketpipe.zip`` (or a ``.whl``, or
    ``SparkContext.addPyFile("rocketpipe.zip")``); call it after the archive is added, before the
    first ``format("rocketmq")``. Harmless when rocketpipe is installed (one difference: the
    source's Python processes, driver-side and executors', then run ``PYSPARK_PYTHON`` as UDFs
    do; a source Spark finds by itself runs ``PYSPARK_DRIVER_PYTHON`` when that is set). It
    does three things:

    * puts the ``.whl`` files of ``spark.submit.pyFiles`` among the SparkContext's Python
      includes: PySpark adds only ``.zip``, ``.egg`` and ``.jar`` files there
      (``SparkContext.PACKAGE_EXTENSIONS``), so a wheel reached the driver's own Python only;
    * ``spark.dataSource.register(RocketMQDataSource)``: Spark's automatic lookup of
      ``pyspark_*`` modules runs in a driver-side Python process whose path has no
      ``--py-files`` archive (``DATA_SOURCE_NOT_FOUND`` otherwise); a data source registered from
      the driver's Python carries the includes, so the planning processes and the executors'
      workers put them on their path;
    * links each include into ``<SparkFiles root>/streaming_job/``, where Spark's Python streaming
      source process looks for them (without it a ``readStream`` fails with "No module named
      'rocketpipe'").

    With Spark Connect only the registration applies (there is no driver-side SparkContext).
    """
    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect: no SparkContext, and no SparkFiles root of ours
        sc = None
    if sc is not None:
        _include_wheels(sc)
    spark.dataSource.register(RocketMQDataSource)
    if sc is not None:
        _link_includes_for_streaming(sc)


def _include_wheels(sc: SparkContext) -> None:
    from pyspark import SparkFiles

    includes = sc._python_includes
    if includes is None:
        return
    root = Path(SparkFiles.getRootDirectory())
    for path in (sc.getConf().get("spark.submit.pyFiles") or "").split(","):
        name = path.rstrip("/").rsplit("/", 1)[-1]
        # SparkContext's constructor copied every spark.submit.pyFiles entry into the root.
        if name.lower().endswith(".whl") and name not in includes and (root / name).is_file():
            includes.append(name)


def _link_includes_for_streaming(sc: SparkContext) -> None:
    from pyspark import SparkFiles

    root = Path(SparkFiles.getRootDirectory())
    target_dir = root / STREAMING_FILES_DIR
    for name in sc._python_includes or []:
        source = root / name
        if not source.exists():
            continue
        target_dir.mkdir(exist_ok=True)
        link = target_dir / name
        if link.exists():
            continue
        try:
            os.symlink(source, link)
        except OSError:  # no symlinks (some Windows accounts): a copy does as well
            shutil.copyfile(source, link)
