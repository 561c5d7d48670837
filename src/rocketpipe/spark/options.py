"""Parsing and validation of the ``rocketmq`` Spark source options (L4 spark, pure).

Spark hands a data source its options as a case-insensitive ``str -> str`` mapping (keys are
lower-cased). :func:`parse_source_options` turns that mapping into a frozen
:class:`SourceOptions` and raises :class:`SourceOptionError` (an
:class:`~rocketpipe.errors.InvalidArgumentError`, hence also a ``ValueError``) whose message
names the option and the fix.

Options (names are case-insensitive; every value is a string):

=========================  ========================================================================
``nameServer``             required; ``host:port`` of the name server(s), ``;``-separated.
``topic``                  required; one topic or a comma-separated list.
``startingOffsets``        ``earliest`` (default), ``latest``, or offsets JSON (see
                           :mod:`rocketpipe.spark.offsets`; ``-2`` = earliest, ``-1`` = latest per
                           queue; queues missing from the JSON start at earliest).
``endingOffsets``          batch reads only: ``latest`` (default) or offsets JSON (``-1`` = latest).
``maxOffsetsPerTrigger``   streaming: max rows per micro-batch over all queues (default: no limit).
``failOnDataLoss``         ``true`` (default) or ``false``: whether a queue whose min offset moved
                           past the requested start fails the query or is skipped with a warning.
``pullBatchSize``          messages asked per pull request (default 1024, 1..65536).
``pullTimeoutMs``          timeout of one pull request in milliseconds (default 10000).
``pullConcurrency``        pull requests kept in flight per Spark task (default 8, 1..64); brokers
                           cap one pull (32 messages / 256 KiB by default), so pipelining is what
                           keeps a task busy.
``numPartitions``          target input partitions per batch, planned by row count (default 2,
                           about one per executor core).
``clientFactory``          advanced/testing: ``module:callable`` returning an admin client with
                           ``SyncAdmin``'s methods; called with the name-server address.
=========================  ========================================================================

Imports: stdlib, :mod:`rocketpipe.errors` and :mod:`rocketpipe.spark.offsets`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..errors import InvalidArgumentError
from .offsets import OffsetSpec, parse_offset_spec

#: Options this source knows (lower-cased, as Spark stores them).
KNOWN_OPTIONS: Final = frozenset({
    "nameserver", "topic", "startingoffsets", "endingoffsets", "maxoffsetspertrigger",
    "failondataloss", "pullbatchsize", "pulltimeoutms", "pullconcurrency", "numpartitions", "clientfactory",
    # Spark adds "path" for load(path); tolerated and ignored.
    "path",
})

DEFAULT_PULL_BATCH_SIZE: Final = 1024
DEFAULT_PULL_TIMEOUT_MS: Final = 10_000
DEFAULT_NUM_PARTITIONS: Final = 2
DEFAULT_PULL_CONCURRENCY: Final = 8


class SourceOptionError(InvalidArgumentError):
    """An option of the ``rocketmq`` source is missing or invalid; the message names the fix."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Validated options of the ``rocketmq`` source.

    Attributes:
        name_server: name-server address list (``host:port[;host:port]``).
        topics: topics to read, in the order given, without duplicates.
        starting_offsets: where a new query / batch read starts.
        ending_offsets: where a batch read ends (``None`` when not given).
        max_offsets_per_trigger: max rows per micro-batch, or ``None`` for no limit.
        fail_on_data_loss: raise (``True``) or skip ahead (``False``) on lost messages.
        pull_batch_size: messages asked per pull request.
        pull_timeout_s: timeout of one pull request in seconds.
        pull_concurrency: pull requests in flight per task.
        num_partitions: target number of input partitions per batch.
        client_factory: ``module:callable`` building the admin client, or ``None`` for SyncAdmin.
    """

    name_server: str
    topics: tuple[str, ...]
    starting_offsets: OffsetSpec
    ending_offsets: OffsetSpec | None
    max_offsets_per_trigger: int | None
    fail_on_data_loss: bool
    pull_batch_size: int
    pull_timeout_s: float
    pull_concurrency: int
    num_partitions: int
    client_factory: str | None


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _parse_int(options: Mapping[str, str], name: str, default: int | None, lo: int, hi: int) -> int | None:
    raw = _get(options, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SourceOptionError(f"option {name}={raw!r} is not an integer; pass a whole number such as {lo}") from None
    if not lo <= value <= hi:
        raise SourceOptionError(f"option {name}={value} is out of range; use a value in [{lo}, {hi}]")
    return value


def _parse_bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = _get(options, name)
    if raw is None:
        return default
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    raise SourceOptionError(f"option {name}={raw!r} is not a boolean; use 'true' or 'false'")


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate Spark options for the ``rocketmq`` source.

    Args:
        options: Spark's option mapping (keys compared lower-cased; values are strings).
        streaming: ``True`` for ``readStream`` (``endingOffsets`` is then rejected), ``False``
            for a batch ``read`` (``maxOffsetsPerTrigger`` is then ignored).

    Returns:
        The validated options.

    Raises:
        SourceOptionError: an option is missing, unknown or malformed; the message says how to
            fix it.
    """
    lowered = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(set(lowered) - KNOWN_OPTIONS)
    if unknown:
        raise SourceOptionError(
            f"unknown option(s) {', '.join(unknown)} for format('rocketmq'); known options are "
            "nameServer, topic, startingOffsets, endingOffsets, maxOffsetsPerTrigger, failOnDataLoss, "
            "pullBatchSize, pullTimeoutMs, pullConcurrency, numPartitions"
        )
    name_server = _get(lowered, "nameServer")
    if name_server is None:
        raise SourceOptionError("option nameServer is required; pass .option('nameServer', 'host:9876')")
    raw_topics = _get(lowered, "topic")
    if raw_topics is None:
        raise SourceOptionError("option topic is required; pass .option('topic', 'TopicA') or 'TopicA,TopicB'")
    topics: list[str] = []
    for t in raw_topics.split(","):
        t = t.strip()
        if not t:
            raise SourceOptionError(f"option topic={raw_topics!r} has an empty topic name; remove the extra comma")
        if t not in topics:
            topics.append(t)
    starting_raw = _get(lowered, "startingOffsets") or "earliest"
    try:
        starting = parse_offset_spec(starting_raw, allow_earliest=True)
    except InvalidArgumentError as exc:
        raise SourceOptionError(f"option startingOffsets: {exc}") from None
    ending: OffsetSpec | None = None
    ending_raw = _get(lowered, "endingOffsets")
    if ending_raw is not None:
        if streaming:
            raise SourceOptionError("option endingOffsets is for batch reads only; remove it from readStream")
        try:
            ending = parse_offset_spec(ending_raw, allow_earliest=False)
        except InvalidArgumentError as exc:
            raise SourceOptionError(f"option endingOffsets: {exc}") from None
    for spec, name in ((starting, "startingOffsets"), (ending, "endingOffsets")):
        if spec is not None and spec.per_queue is not None:
            extra = sorted(set(spec.per_queue) - set(topics))
            if extra:
                raise SourceOptionError(
                    f"option {name} names topic(s) {', '.join(extra)} that are not in option topic={raw_topics!r}; "
                    "add them to topic or remove them from the JSON"
                )
    max_per_trigger = _parse_int(lowered, "maxOffsetsPerTrigger", None, 1, 2**62)
    pull_batch_size = _parse_int(lowered, "pullBatchSize", DEFAULT_PULL_BATCH_SIZE, 1, 65536)
    pull_timeout_ms = _parse_int(lowered, "pullTimeoutMs", DEFAULT_PULL_TIMEOUT_MS, 1, 3_600_000)
    pull_concurrency = _parse_int(lowered, "pullConcurrency", DEFAULT_PULL_CONCURRENCY, 1, 64)
    num_partitions = _parse_int(lowered, "numPartitions", DEFAULT_NUM_PARTITIONS, 1, 100_000)
    client_factory = _get(lowered, "clientFactory")
    if client_factory is not None and ":" not in client_factory:
        raise SourceOptionError(f"option clientFactory={client_factory!r} must be 'module:callable'")
    assert pull_batch_size is not None and pull_timeout_ms is not None and num_partitions is not None
    assert pull_concurrency is not None
    return SourceOptions(
        name_server=name_server,
        topics=tuple(topics),
        starting_offsets=starting,
        ending_offsets=ending,
        max_offsets_per_trigger=max_per_trigger,
        fail_on_data_loss=_parse_bool(lowered, "failOnDataLoss", True),
        pull_batch_size=pull_batch_size,
        pull_timeout_s=pull_timeout_ms / 1000.0,
        pull_concurrency=pull_concurrency,
        num_partitions=num_partitions,
        client_factory=client_factory,
    )


def describe(options: SourceOptions) -> str:
    """Return a one-line, log-friendly summary of ``options``."""
    return json.dumps(
        {"nameServer": options.name_server, "topics": list(options.topics), "numPartitions": options.num_partitions},
        sort_keys=True,
    )
