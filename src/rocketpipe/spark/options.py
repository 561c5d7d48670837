"""Parsing and validation of the ``rocketmq`` Spark source and sink options (L4 spark, pure).

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
``minOffsetsPerTrigger``   streaming: skip a trigger with fewer new rows than this, until
                           ``maxTriggerDelay`` (default ``15m``) has passed since the last batch
                           (Kafka's options; not applied under ``Trigger.AvailableNow``).
``fetchOffset.numRetries`` the driver's look-ups of queues and offsets are tried again this many
                           times after a transport error (default 3, Kafka's), waiting
                           ``fetchOffset.retryIntervalMs`` (default 10) ms in between.
``failOnDataLoss``         ``true`` (default) or ``false``: whether a queue whose min offset moved
                           past the requested start fails the query or is skipped with a warning.
``pullBatchSize``          messages asked per pull request (default 1024, 1..65536).
``pullTimeoutMs``          timeout of one pull request in milliseconds (default 10000).
``pullConcurrency``        pull requests kept in flight per Spark task (default 8, 1..64), over
                           the task's queue ranges in order (the next range's first pulls start
                           while the current one's last answers arrive); brokers cap one pull
                           (32 messages / 256 KiB by default), so pipelining is what keeps a task
                           busy.
``minPartitions``          at least this many input partitions: queue ranges are cut in
                           proportion to their size (Kafka's option). By default, as in Kafka,
                           one input partition per queue with new messages.
``maxRecordsPerPartition`` at most this many rows per input partition (Kafka's option).
``numPartitions``          instead of the two above: this many input partitions planned by row
                           count, short queue ranges sharing one (rocketpipe's own option).
``clientFactory``          advanced/testing: ``module:callable`` returning an admin client with
                           ``SyncAdmin``'s methods; called with the name-server address.
``includeHeaders``         ``true``: add Kafka's ``headers`` column (``array<struct<key:string,
                           value:binary>>``): the message's user properties in stored order,
                           values UTF-8 (default ``false``).
=========================  ========================================================================

Connection options of the source and the sink (:class:`ConnectionOptions`; names as Java's
``ClientConfig`` / ``TlsSystemConfig``):

=============================  ====================================================================
``accessKey``, ``secretKey``   ACL 1.0 account: every request is signed (Java's
                               ``AclClientRPCHook``); give both or neither.
``securityToken``              optional STS token sent with the signed requests (needs the keys).
``useTLS``                     ``true``: every connection speaks TLS (``ClientConfig.useTLS``).
``tls.client.trustCertPath``   PEM CA certificates the servers' certificates must chain to
                               (default: the system's CAs).
``tls.client.certPath``        PEM client certificate for mutual TLS.
``tls.client.keyPath``         its PEM private key (default: in the certificate file).
``tls.client.keyPassword``     password of an encrypted key.
``tls.test.mode.enable``       ``true``: do not verify the servers' certificates.
=============================  ====================================================================

The secrets (``secretKey``, ``securityToken``, ``tls.client.keyPassword``) never appear in a
``repr``, a log line or an error message of this package; Spark itself redacts options whose
names match ``spark.redaction.regex`` (by default ``secret``, ``password``, ``token`` and
``access.key``) in plans and the UI. The ``tls.*`` files are read where a client opens: on the
driver (source) and on every executor, at the same paths.

Sink options are parsed by :func:`parse_sink_options` into :class:`SinkOptions` and raise
:class:`SinkOptionError`; they are listed in that function's docstring.

Imports: stdlib, :mod:`rocketpipe.errors` and :mod:`rocketpipe.spark.offsets`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

from ..errors import InvalidArgumentError
from ..protocol.message import MessageQueue
from .offsets import OffsetSpec, TimestampSpec, parse_offset_spec, parse_timestamp_spec

if TYPE_CHECKING:
    from ..client.config import ClientConfig

#: The connection options of the source and the sink (lower-cased; see :class:`ConnectionOptions`).
CONNECTION_OPTIONS: Final = frozenset(
    {
        "accesskey",
        "secretkey",
        "securitytoken",
        "usetls",
        "tls.client.trustcertpath",
        "tls.client.certpath",
        "tls.client.keypath",
        "tls.client.keypassword",
        "tls.test.mode.enable",
    }
)
_CONNECTION_HINT: Final = (
    "accessKey, secretKey, securityToken, useTLS, tls.client.trustCertPath, tls.client.certPath, "
    "tls.client.keyPath, tls.client.keyPassword, tls.test.mode.enable"
)

#: Options this source knows (lower-cased, as Spark stores them).
KNOWN_OPTIONS: Final = frozenset(
    {
        "nameserver",
        "topic",
        "subscribe",
        "subscribepattern",
        "assign",
        "startingoffsets",
        "endingoffsets",
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsetsbytimestampstrategy",
        "endingtimestamp",
        "endingoffsetsbytimestamp",
        "maxoffsetspertrigger",
        "minoffsetspertrigger",
        "maxtriggerdelay",
        "failondataloss",
        "pullbatchsize",
        "pulltimeoutms",
        "pullconcurrency",
        "numpartitions",
        "minpartitions",
        "maxrecordsperpartition",
        "clientfactory",
        "pushfilters",
        "fetchoffset.numretries",
        "fetchoffset.retryintervalms",
        "includeheaders",
        # Spark adds "path" for load(path); tolerated and ignored.
        "path",
    }
    | CONNECTION_OPTIONS
)
#: The end of the message naming unknown source options.
_SOURCE_UNKNOWN_HINT: Final = (
    "for format('rocketmq'); known options are nameServer, topic (or subscribe), subscribePattern, assign, "
    "startingOffsets, endingOffsets, "
    "startingTimestamp, startingOffsetsByTimestamp, startingOffsetsByTimestampStrategy, endingTimestamp, "
    "endingOffsetsByTimestamp, maxOffsetsPerTrigger, minOffsetsPerTrigger, maxTriggerDelay, failOnDataLoss, "
    "pullBatchSize, pullTimeoutMs, "
    "pullConcurrency, minPartitions, maxRecordsPerPartition, numPartitions, pushFilters, "
    "fetchOffset.numRetries, fetchOffset.retryIntervalMs, includeHeaders, " + _CONNECTION_HINT
)

DEFAULT_PULL_BATCH_SIZE: Final = 1024
DEFAULT_PULL_TIMEOUT_MS: Final = 10_000
DEFAULT_PULL_CONCURRENCY: Final = 8


@dataclass(frozen=True, slots=True)
class ConnectionOptions:
    """ACL credentials and TLS settings of the source's and the sink's clients (picklable: they
    travel to the executors inside the input partitions and the writer).

    Attributes mirror :class:`rocketpipe.client.config.ClientConfig` (Java ``ClientConfig`` with
    ``AclClientRPCHook`` and ``TlsSystemConfig``): ``access_key`` / ``secret_key`` /
    ``security_token`` (``SessionCredentials``), ``use_tls`` and the ``tls_client_*`` paths,
    password and ``tls_test_mode_enable``. ``repr`` shows the access key and whether TLS is on,
    never a secret.
    """

    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    use_tls: bool = False
    tls_client_trust_cert_path: str | None = None
    tls_client_cert_path: str | None = None
    tls_client_key_path: str | None = None
    tls_client_key_password: str | None = None
    tls_test_mode_enable: bool = False

    def __repr__(self) -> str:
        return f"ConnectionOptions(access_key={self.access_key!r}, use_tls={self.use_tls})"

    def client_config(self, name_server: str) -> ClientConfig:
        """The client settings for ``name_server`` (``host:port[;host:port]``): signed when the
        keys are set, TLS with ``use_tls``.

        Raises:
            InvalidArgumentError: a ``tls.client.*`` file does not exist (here, on this machine),
                or a key path without a certificate path.
        """
        from ..client.config import ClientConfig, SessionCredentials

        credentials = (
            None
            if self.access_key is None or self.secret_key is None
            else SessionCredentials(self.access_key, self.secret_key, self.security_token)
        )
        return ClientConfig(
            namesrv_addr=name_server,
            credentials=credentials,
            use_tls=self.use_tls,
            tls_client_trust_cert_path=self.tls_client_trust_cert_path,
            tls_client_cert_path=self.tls_client_cert_path,
            tls_client_key_path=self.tls_client_key_path,
            tls_client_key_password=self.tls_client_key_password,
            tls_test_mode_enable=self.tls_test_mode_enable,
        )


class SourceOptionError(InvalidArgumentError):
    """An option of the ``rocketmq`` source is missing or invalid; the message names the fix."""


@dataclass(frozen=True, slots=True)
class SourceOptions:
    """Validated options of the ``rocketmq`` source.

    Attributes:
        name_server: name-server address list (``host:port[;host:port]``).
        topics: topics to read, in the order given, without duplicates (``topic`` /
            ``subscribe``, or the topics of ``assign``; empty with ``subscribePattern``).
        topic_pattern: ``subscribePattern``: a regular expression every topic to read matches
            in full (Java's ``Pattern.matches``), topics listed by the name server again at
            each trigger; or ``None``.
        assigned: ``assign``: the only queues to read, or ``None``.
        starting_offsets: where a new query / batch read starts.
        ending_offsets: where a batch read ends (``None`` when not given).
        max_offsets_per_trigger: max rows per micro-batch, or ``None`` for no limit.
        min_offsets_per_trigger: ``minOffsetsPerTrigger``: a trigger with fewer new rows is
            skipped until ``max_trigger_delay_ms`` has passed since the last batch, or ``None``.
        max_trigger_delay_ms: ``maxTriggerDelay`` in ms (Kafka's default ``15m``).
        fetch_offset_num_retries: ``fetchOffset.numRetries``: the driver's look-ups of queues
            and offsets are tried again this many times after a transport error (Kafka: 3).
        fetch_offset_retry_interval_ms: ``fetchOffset.retryIntervalMs``: wait between those
            tries, ms (Kafka: 10).
        fail_on_data_loss: raise (``True``) or skip ahead (``False``) on lost messages.
        pull_batch_size: messages asked per pull request.
        pull_timeout_s: timeout of one pull request in seconds.
        pull_concurrency: pull requests in flight per task.
        num_partitions: ``numPartitions``: input partitions per batch planned by row count
            (short ranges share one), or ``None`` for Kafka's planning (one per queue range,
            ``min_partitions`` / ``max_records_per_partition`` to split).
        min_partitions: ``minPartitions``: split queue ranges until there are at least this
            many input partitions (Kafka's option), or ``None``.
        max_records_per_partition: ``maxRecordsPerPartition``: most rows of one input
            partition (Kafka's option), or ``None``.
        client_factory: ``module:callable`` building the admin client, or ``None`` for SyncAdmin.
        columns: the source columns a user ``.schema(...)`` selected, in its order, or ``None``
            for all of them (set by the data source, not an option).
        starting_timestamps: ``startingTimestamp`` / ``startingOffsetsByTimestamp`` (epoch ms;
            they win over ``startingOffsets``, as in Kafka's source), or ``None``.
        ending_timestamps: ``endingTimestamp`` / ``endingOffsetsByTimestamp`` (batch reads; win
            over ``endingOffsets``), or ``None``.
        starting_timestamp_strategy: ``startingOffsetsByTimestampStrategy``: ``"error"``
            (default) or ``"latest"`` for a queue with no message at or after its timestamp.
        push_filters: ``pushFilters``: the batch reader takes the filters Spark pushes down
            (Spark then also needs ``spark.sql.python.filterPushdown.enabled=true``); default
            ``False``.
        include_headers: ``includeHeaders``: rows have Kafka's ``headers`` column too.
        connection: ACL credentials and TLS settings (:class:`ConnectionOptions`).
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
    num_partitions: int | None
    client_factory: str | None
    columns: tuple[str, ...] | None = None
    starting_timestamps: TimestampSpec | None = None
    ending_timestamps: TimestampSpec | None = None
    starting_timestamp_strategy: Literal["error", "latest"] = "error"
    push_filters: bool = False
    topic_pattern: str | None = None
    assigned: frozenset[MessageQueue] | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 10
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    include_headers: bool = False
    connection: ConnectionOptions = ConnectionOptions()


def _get(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name.lower())
    if value is None:
        return None
    value = str(value).strip()
    return value or None


def _lowered(
    options: Mapping[str, str], known: frozenset[str], error: type[InvalidArgumentError], unknown_hint: str
) -> dict[str, str]:
    """``options`` with lower-cased keys.

    Raises:
        error: a key is not in ``known``; the message lists them, then ``unknown_hint``.
    """
    lowered = {str(k).lower(): v for k, v in options.items()}
    unknown = sorted(set(lowered) - known)
    if unknown:
        raise error(f"unknown option(s) {', '.join(unknown)} {unknown_hint}")
    return lowered


def _name_server(lowered: Mapping[str, str], error: type[InvalidArgumentError], *aliases: str) -> str:
    """The ``nameServer`` option (or the first of ``aliases`` given).

    Raises:
        error: none of them is set.
    """
    for name in ("nameServer", *aliases):
        value = _get(lowered, name)
        if value is not None:
            return value
    raise error("option nameServer is required; pass .option('nameServer', 'host:9876')")


#: Units of a duration option, in ms (Spark's ``JavaUtils.timeStringAsMs`` suffixes).
_DURATION_UNITS: Final = {
    "us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000,
}  # fmt: skip
_DURATION: Final = re.compile(r"\s*(\d+)\s*([a-z]*)\s*")


def parse_duration_ms(raw: str, name: str) -> int:
    """A duration such as ``15m``, ``30s``, ``500ms`` or ``500`` (ms) in ms, as Spark reads
    Kafka's ``maxTriggerDelay`` (``JavaUtils.timeStringAsMs``: no suffix means ms).

    Raises:
        SourceOptionError: not a number with one of the suffixes us, ms, s, m, min, h, d.
    """
    m = _DURATION.fullmatch(raw.lower())
    if m is None or m.group(2) not in ("", *_DURATION_UNITS):
        raise SourceOptionError(f"option {name}={raw!r} must be a duration such as '15m', '30s' or '500ms'")
    return int(int(m.group(1)) * _DURATION_UNITS.get(m.group(2) or "ms", 1))


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


def parse_connection_options(lowered: Mapping[str, str], error: type[InvalidArgumentError]) -> ConnectionOptions:
    """The connection options (see the module docstring) of lower-cased Spark options.

    Raises:
        error: only one of ``accessKey`` / ``secretKey``, ``securityToken`` without them, a
            ``tls.*`` option without ``useTLS=true``, or a boolean that is not true/false. The
            message never contains a secret's value.
    """
    access_key, secret_key = _get(lowered, "accessKey"), _get(lowered, "secretKey")
    token = _get(lowered, "securityToken")
    if (access_key is None) != (secret_key is None):
        raise error("options accessKey and secretKey go together; set both (or neither, for a cluster without ACL)")
    if token is not None and access_key is None:
        raise error("option securityToken needs accessKey and secretKey")

    def flag(name: str) -> bool:
        try:
            return _parse_bool(lowered, name, False)
        except SourceOptionError as exc:
            raise error(str(exc)) from None

    use_tls = flag("useTLS")
    test_mode = flag("tls.test.mode.enable")
    paths = {
        name: _get(lowered, name)
        for name in ("tls.client.trustCertPath", "tls.client.certPath", "tls.client.keyPath", "tls.client.keyPassword")
    }
    given = [name for name, value in paths.items() if value is not None] + (
        ["tls.test.mode.enable"] if test_mode else []
    )
    if given and not use_tls:
        raise error(f"option(s) {', '.join(given)} need useTLS=true")
    if paths["tls.client.keyPath"] is not None and paths["tls.client.certPath"] is None:
        raise error("option tls.client.keyPath needs tls.client.certPath (the client certificate)")
    return ConnectionOptions(
        access_key=access_key,
        secret_key=secret_key,
        security_token=token,
        use_tls=use_tls,
        tls_client_trust_cert_path=paths["tls.client.trustCertPath"],
        tls_client_cert_path=paths["tls.client.certPath"],
        tls_client_key_path=paths["tls.client.keyPath"],
        tls_client_key_password=paths["tls.client.keyPassword"],
        tls_test_mode_enable=test_mode,
    )


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
    lowered = _lowered(options, KNOWN_OPTIONS, SourceOptionError, _SOURCE_UNKNOWN_HINT)
    name_server = _name_server(lowered, SourceOptionError)
    topics, pattern, assigned = _subscription(lowered)
    raw_topics = ",".join(topics) if pattern is None else pattern
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
    starting_ts = _timestamps(lowered, "starting")
    ending_ts = _timestamps(lowered, "ending")
    if ending_ts is not None and streaming:
        raise SourceOptionError("options endingTimestamp / endingOffsetsByTimestamp are for batch reads only")
    strategy = (_get(lowered, "startingOffsetsByTimestampStrategy") or "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise SourceOptionError(f"option startingOffsetsByTimestampStrategy={strategy!r} must be 'error' or 'latest'")
    for spec, name in (
        (starting, "startingOffsets"),
        (ending, "endingOffsets"),
        (starting_ts, "startingOffsetsByTimestamp"),
        (ending_ts, "endingOffsetsByTimestamp"),
    ):
        if spec is not None and spec.per_queue is not None and pattern is None:
            extra = sorted(set(spec.per_queue) - set(topics))
            if extra:
                raise SourceOptionError(
                    f"option {name} names topic(s) {', '.join(extra)} that are not in option topic={raw_topics!r}; "
                    "add them to topic or remove them from the JSON"
                )
    max_per_trigger = _parse_int(lowered, "maxOffsetsPerTrigger", None, 1, 2**62)
    min_per_trigger = _parse_int(lowered, "minOffsetsPerTrigger", None, 1, 2**62)
    max_delay_ms = parse_duration_ms(_get(lowered, "maxTriggerDelay") or "15m", "maxTriggerDelay")
    pull_batch_size = _parse_int(lowered, "pullBatchSize", DEFAULT_PULL_BATCH_SIZE, 1, 65536)
    pull_timeout_ms = _parse_int(lowered, "pullTimeoutMs", DEFAULT_PULL_TIMEOUT_MS, 1, 3_600_000)
    pull_concurrency = _parse_int(lowered, "pullConcurrency", DEFAULT_PULL_CONCURRENCY, 1, 64)
    num_partitions = _parse_int(lowered, "numPartitions", None, 1, 100_000)
    min_partitions = _parse_int(lowered, "minPartitions", None, 1, 100_000)
    max_records = _parse_int(lowered, "maxRecordsPerPartition", None, 1, 2**62)
    if num_partitions is not None and (min_partitions is not None or max_records is not None):
        raise SourceOptionError(
            "option numPartitions (row-count planning) cannot be combined with minPartitions / "
            "maxRecordsPerPartition (Kafka's planning); keep one of them"
        )
    client_factory = _get(lowered, "clientFactory")
    if client_factory is not None and ":" not in client_factory:
        raise SourceOptionError(f"option clientFactory={client_factory!r} must be 'module:callable'")
    assert pull_batch_size is not None and pull_timeout_ms is not None
    assert pull_concurrency is not None
    return SourceOptions(
        name_server=name_server,
        topics=tuple(topics),
        starting_offsets=starting,
        ending_offsets=ending,
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=max_delay_ms,
        fetch_offset_num_retries=_parse_int(lowered, "fetchOffset.numRetries", 3, 0, 1000) or 0,
        fetch_offset_retry_interval_ms=_parse_int(lowered, "fetchOffset.retryIntervalMs", 10, 0, 3_600_000) or 0,
        fail_on_data_loss=_parse_bool(lowered, "failOnDataLoss", True),
        pull_batch_size=pull_batch_size,
        pull_timeout_s=pull_timeout_ms / 1000.0,
        pull_concurrency=pull_concurrency,
        num_partitions=num_partitions,
        client_factory=client_factory,
        starting_timestamps=starting_ts,
        ending_timestamps=ending_ts,
        starting_timestamp_strategy="latest" if strategy == "latest" else "error",
        push_filters=_parse_bool(lowered, "pushFilters", False),
        topic_pattern=pattern,
        assigned=assigned,
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        include_headers=_parse_bool(lowered, "includeHeaders", False),
        connection=parse_connection_options(lowered, SourceOptionError),
    )


def _subscription(lowered: Mapping[str, str]) -> tuple[tuple[str, ...], str | None, frozenset[MessageQueue] | None]:
    """What to read: exactly one of ``topic`` (Kafka's ``subscribe``, also accepted), a
    ``subscribePattern`` or an ``assign`` JSON ``{"topic": ["brokerName:queueId", ...]}``.

    Returns:
        ``(topics, pattern, assigned queues)``.

    Raises:
        SourceOptionError: none or several of them, an empty topic name, a pattern that is not
            a regular expression, or a malformed ``assign``.
    """
    given = [name for name in ("topic", "subscribe", "subscribePattern", "assign") if _get(lowered, name) is not None]
    if len(given) != 1:
        raise SourceOptionError(
            "give exactly one of the options topic (or subscribe), subscribePattern and assign"
            + (f"; got {', '.join(given)}" if given else "; e.g. .option('topic', 'TopicA') or 'TopicA,TopicB'")
        )
    name = given[0]
    raw = _get(lowered, name) or ""
    if name == "subscribePattern":
        try:
            re.compile(raw)
        except re.error as exc:
            raise SourceOptionError(f"option subscribePattern={raw!r} is not a regular expression: {exc}") from None
        return (), raw, None
    if name == "assign":
        return _assignment(raw)
    topics: list[str] = []
    for t in raw.split(","):
        t = t.strip()
        if not t:
            raise SourceOptionError(f"option {name}={raw!r} has an empty topic name; remove the extra comma")
        if t not in topics:
            topics.append(t)
    return tuple(topics), None, None


def _assignment(raw: str) -> tuple[tuple[str, ...], None, frozenset[MessageQueue]]:
    """Parse ``assign``: ``{"topic": ["brokerName:queueId", ...]}`` (Kafka's ``{"topic": [partition, ...]}``).

    Raises:
        SourceOptionError: not that shape, or a queue written other than ``brokerName:queueId``.
    """
    try:
        spec = json.loads(raw)
    except ValueError as exc:
        raise SourceOptionError(f'option assign is not JSON ({exc}); e.g. {{"TopicA": ["broker-a:0"]}}') from None
    if not isinstance(spec, dict) or not spec:
        raise SourceOptionError('option assign must be a JSON object {"topic": ["brokerName:queueId", ...]}')
    queues: set[MessageQueue] = set()
    for topic, entries in spec.items():
        if not isinstance(entries, list) or not entries:
            raise SourceOptionError(f"option assign: topic {topic!r} needs a non-empty list of 'brokerName:queueId'")
        for entry in entries:
            broker, sep, qid = str(entry).rpartition(":")
            if not (isinstance(entry, str) and sep and broker and qid.isdigit()):
                raise SourceOptionError(f"option assign: {entry!r} of topic {topic!r} is not 'brokerName:queueId'")
            queues.add(MessageQueue(topic, broker, int(qid)))
    return tuple(spec), None, frozenset(queues)


def _timestamps(lowered: Mapping[str, str], which: str) -> TimestampSpec | None:
    """``<which>Timestamp`` or ``<which>OffsetsByTimestamp`` (``which``: starting / ending), parsed."""
    single, per_queue = f"{which}Timestamp", f"{which}OffsetsByTimestamp"
    try:
        return parse_timestamp_spec(_get(lowered, single), _get(lowered, per_queue))
    except InvalidArgumentError as exc:
        name = single if _get(lowered, single) is not None else per_queue
        raise SourceOptionError(f"option {name}: {exc}") from None


def describe(options: SourceOptions) -> str:
    """Return a one-line, log-friendly summary of ``options``."""
    return json.dumps(
        {"nameServer": options.name_server, "topics": list(options.topics), "numPartitions": options.num_partitions},
        sort_keys=True,
    )


# ---------------------------------------------------------------------------------------------
# Sink options (``df.write.format("rocketmq")`` / ``df.writeStream.format("rocketmq")``)

#: Options the sink knows (lower-cased). ``namesrv_addr`` and ``producer_group`` are aliases of
#: ``nameServer`` and ``producerGroup`` (the Java client's names); Spark may add ``path``
#: (``save(path)``) and ``checkpointLocation`` (``writeStream.option``), both ignored.
SINK_KNOWN_OPTIONS: Final = frozenset(
    {
        "nameserver",
        "namesrv_addr",
        "topic",
        "producergroup",
        "producer_group",
        "batchsize",
        "batchbytes",
        "maxinflight",
        "sendtimeoutms",
        "retries",
        "maxmessagesize",
        "writerinput",
        "deliveryguarantee",
        "transactionlogdir",
        "path",
        "checkpointlocation",
    }
    | CONNECTION_OPTIONS
)
#: The end of the message naming unknown sink options.
_SINK_UNKNOWN_HINT: Final = (
    "for the rocketmq sink; known options are nameServer, topic, "
    "producerGroup, batchSize, batchBytes, maxInFlight, sendTimeoutMs, retries, maxMessageSize, writerInput, "
    "deliveryGuarantee, transactionLogDir, " + _CONNECTION_HINT
)

#: ``DefaultMQProducer.maxMessageSize`` (4 MiB): the cap of one message or one encoded batch.
MAX_MESSAGE_SIZE: Final = 4 * 1024 * 1024
DEFAULT_PRODUCER_GROUP: Final = "rocketpipe_spark_sink"
DEFAULT_BATCH_SIZE: Final = 4096
DEFAULT_BATCH_BYTES: Final = 1024 * 1024
DEFAULT_MAX_IN_FLIGHT: Final = 4
DELIVERY_GUARANTEES: Final = ("at-least-once", "exactly-once")
DEFAULT_SEND_TIMEOUT_MS: Final = 10_000
DEFAULT_SEND_RETRIES: Final = 2
_GROUP_RE: Final = re.compile(r"^[%|a-zA-Z0-9_-]{1,255}$")


class SinkOptionError(InvalidArgumentError):
    """An option of the ``rocketmq`` sink is missing or invalid; the message names the fix."""


@dataclass(frozen=True, slots=True)
class SinkOptions:
    """Validated options of the ``rocketmq`` sink (picklable; travels to executors).

    Attributes:
        name_server: name-server address list (``host:port[;host:port]``).
        topic: the topic every row goes to (overrides a ``topic`` column, as the Kafka sink's
            ``topic`` option does), or ``None`` to take each row's ``topic`` column.
        producer_group: producer group of the executors' producers.
        batch_size: max messages per ``SEND_BATCH_MESSAGE`` request.
        batch_bytes: max encoded bytes per batch request (at most ``max_message_size``).
        max_in_flight: send requests kept outstanding per Spark task.
        send_timeout_s: budget of one send request across its retries, seconds
            (``DefaultMQProducer.sendMsgTimeout``).
        retries: extra attempts of a failed send (``retryTimesWhenSendFailed``).
        max_message_size: max body / encoded batch size in bytes (``maxMessageSize``).
        writer_input: ``"arrow"`` (Spark hands ``write()`` Arrow record batches; the default)
            or ``"rows"`` (Spark builds a ``Row`` per record; slower, kept for comparison).
        connection: ACL credentials and TLS settings of the producers (:class:`ConnectionOptions`).
        exactly_once: ``deliveryGuarantee=exactly-once``: rows go as half messages that the
            driver's commit ends (:mod:`rocketpipe.spark.transactional`).
        transaction_log_dir: where an exactly-once stream logs its commit decisions, or None.
    """

    name_server: str
    topic: str | None
    producer_group: str
    batch_size: int
    batch_bytes: int
    max_in_flight: int
    send_timeout_s: float
    retries: int
    max_message_size: int
    writer_input: str
    connection: ConnectionOptions = ConnectionOptions()
    exactly_once: bool = False
    transaction_log_dir: str | None = None


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate Spark options for the ``rocketmq`` sink (driver side, no I/O).

    =========================  ====================================================================
    ``nameServer``             required (alias ``namesrv_addr``); ``host:port[;host:port]``.
    ``topic``                  the topic of every row; overrides a ``topic`` column (Kafka sink
                               rule). Required when the data has no ``topic`` column.
    ``producerGroup``          alias ``producer_group``; default ``rocketpipe_spark_sink``.
    ``batchSize``              messages per batch request (default 4096, 1..65536; ``batchBytes``
                               usually binds first).
    ``batchBytes``             encoded bytes per batch request (default 1 MiB, 1 KiB..
                               ``maxMessageSize``).
    ``maxInFlight``            outstanding send requests per task (default 4, 1..256); use 1 to keep
                               the rows' order within each queue across retries.
    ``sendTimeoutMs``          budget of one send across retries, ms (default 10000).
    ``retries``                extra attempts of a failed send (default 2, 0..16).
    ``maxMessageSize``         bytes (default 4 MiB, as ``DefaultMQProducer.maxMessageSize``;
                               must not exceed the broker's ``maxMessageSize``).
    ``writerInput``            advanced: ``arrow`` (default) or ``rows`` (Spark's Row writer).
    ``deliveryGuarantee``      ``at-least-once`` (default) or ``exactly-once``: every row a
                               transactional half message, committed by the driver (one message
                               per request, up to 64 outstanding per task).
    ``transactionLogDir``      exactly-once streams (required there): directory of the commit
                               decisions, one the restarted driver reads again (as
                               ``checkpointLocation``).
    ``accessKey`` ...          the connection options of the module docstring (ACL, TLS).
    =========================  ====================================================================

    Returns:
        The validated options.

    Raises:
        SinkOptionError: an option is missing, unknown or malformed; the message says how to
            fix it.
    """
    lowered = _lowered(options, SINK_KNOWN_OPTIONS, SinkOptionError, _SINK_UNKNOWN_HINT)
    name_server = _name_server(lowered, SinkOptionError, "namesrv_addr")
    group = _get(lowered, "producerGroup") or _get(lowered, "producer_group") or DEFAULT_PRODUCER_GROUP
    if not _GROUP_RE.match(group):
        raise SinkOptionError(f"option producerGroup={group!r} is invalid; use 1-255 characters of [%|a-zA-Z0-9_-]")

    def parse(name: str, default: int, lo: int, hi: int) -> int:
        try:
            value = _parse_int(lowered, name, default, lo, hi)
        except SourceOptionError as exc:
            raise SinkOptionError(str(exc)) from None
        assert value is not None
        return value

    max_message_size = parse("maxMessageSize", MAX_MESSAGE_SIZE, 1024, 1024 * 1024 * 1024)
    batch_bytes = parse("batchBytes", min(DEFAULT_BATCH_BYTES, max_message_size), 1024, max_message_size)
    writer_input = (_get(lowered, "writerInput") or "arrow").lower()
    if writer_input not in ("arrow", "rows"):
        raise SinkOptionError(f"option writerInput={writer_input!r} is invalid; use 'arrow' (default) or 'rows'")
    guarantee = (_get(lowered, "deliveryGuarantee") or "at-least-once").lower()
    if guarantee not in DELIVERY_GUARANTEES:
        raise SinkOptionError(
            f"option deliveryGuarantee={guarantee!r} is invalid; use 'at-least-once' (default) or 'exactly-once'"
        )
    exactly_once = guarantee == "exactly-once"
    return SinkOptions(
        name_server=name_server,
        topic=_get(lowered, "topic"),
        producer_group=group,
        batch_size=parse("batchSize", DEFAULT_BATCH_SIZE, 1, 65536),
        batch_bytes=batch_bytes,
        max_in_flight=parse("maxInFlight", DEFAULT_MAX_IN_FLIGHT, 1, 256),
        send_timeout_s=parse("sendTimeoutMs", DEFAULT_SEND_TIMEOUT_MS, 1, 3_600_000) / 1000.0,
        retries=parse("retries", DEFAULT_SEND_RETRIES, 0, 16),
        max_message_size=max_message_size,
        writer_input=writer_input,
        connection=parse_connection_options(lowered, SinkOptionError),
        exactly_once=exactly_once,
        transaction_log_dir=_get(lowered, "transactionLogDir") or None,
    )
