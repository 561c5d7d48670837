"""UPDATE_BROKER_CONFIG (25) at run time (L3): which keys a running broker changes, how, and
the file that keeps the changes across restarts.

Mirrors ``Configuration.update`` / ``Configuration.persist`` as ``AdminBrokerProcessor.updateBrokerConfig``
drives them, with the differences below. The vocabulary is GET_BROKER_CONFIG's: each
:class:`~rocketpipe.broker.BrokerConfig` field in Java's camelCase (``max_message_size`` →
``maxMessageSize``). Imports the stdlib, :mod:`rocketpipe.errors`, :mod:`rocketpipe.backup_file`
and the broker's config/context.

* **Black list.** ``brokerConfigPath``, ``rocketmqHome`` and ``configBlackList`` (Java's fixed
  entries plus the default of ``BrokerConfig.configBlackList``) are refused as a whole request.
* **Run-time keys** (:data:`RUNTIME_KEYS`): read by the broker at each request or tick, so a
  new value takes effect at once; the frozen :class:`~rocketpipe.broker.BrokerConfig` (and the
  store's ``StoreConfig`` for the store-side keys) are replaced, never mutated.
* **Other known keys** (ports, paths, names, periods captured at start…): refused with
  INVALID_PARAMETER naming them. Java would write them into its config object, where most take
  effect only after a restart and some (``brokerName``) at once and inconsistently.
* **Unknown keys** are ignored, as Java's ``mergeIfExist`` ignores keys its configuration does
  not have; the SUCCESS answer names them in its remark (Java's remark is null).
* **Bad values** (``maxMessageSize=abc``, a non-positive size) are refused with
  INVALID_PARAMETER and nothing changes; Java silently keeps the old value.
* **Persistence.** The changed keys (all changes so far, merged) are written to
  ``<store_dir>/config/broker.properties`` (:data:`CONFIG_FILE`; Java's default
  ``brokerConfigPath`` is ``~/store/config/broker.properties``) with a ``.bak``
  (:func:`rocketpipe.backup_file.write_atomic`), and applied again when the broker is built
  (:func:`restore`), over the values it was given. Java writes every setting to that file and
  reads it back only when started with ``-c`` on it. Delete the file to go back to the given
  configuration.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from ...backup_file import read_with_backup, write_atomic
from ...errors import InvalidArgumentError
from ..config import BrokerConfig
from ..context import BrokerContext

log = logging.getLogger(__name__)

#: the file of the keys changed at run time, in ``<store_dir>/config``
CONFIG_FILE: Final = "broker.properties"
#: keys never changed remotely (``AdminBrokerProcessor.initConfigBlackList`` + the default
#: ``BrokerConfig.configBlackList`` "configBlackList;brokerConfigPath")
BLACK_LIST: Final = frozenset({"brokerConfigPath", "rocketmqHome", "configBlackList"})


@dataclass(frozen=True, slots=True)
class RuntimeKey:
    """A setting a running broker honours at once.

    Attributes:
        field: the :class:`~rocketpipe.broker.BrokerConfig` field.
        in_store: the store reads it too (its ``StoreConfig`` field of the same name).
        minimum: smallest accepted value of an integer setting.
    """

    field: str
    in_store: bool = False
    minimum: int = 1


def property_name(field_name: str) -> str:
    """Java's camelCase name of a config field: ``max_message_size`` → ``maxMessageSize``."""
    head, *rest = field_name.split("_")
    return head + "".join(p.capitalize() for p in rest)


#: the keys UPDATE_BROKER_CONFIG changes, by Java property name
RUNTIME_KEYS: Final[dict[str, RuntimeKey]] = {
    property_name(k.field): k
    for k in (
        RuntimeKey("broker_permission", minimum=0),
        RuntimeKey("long_polling_enable"),
        RuntimeKey("short_polling_time_mills"),
        RuntimeKey("notify_consumer_ids_changed_enable"),
        RuntimeKey("channel_expired_timeout_ms"),
        RuntimeKey("register_broker_timeout_mills"),
        RuntimeKey("region_id"),
        RuntimeKey("trace_on"),
        RuntimeKey("enable_property_filter"),
        RuntimeKey("reject_transaction_message"),
        RuntimeKey("store_reply_message_enable"),
        RuntimeKey("timer_precision_ms"),
        RuntimeKey("timer_max_delay_sec"),
        RuntimeKey("recall_message_enable"),
        RuntimeKey("allow_recall_when_broker_not_writeable"),
        RuntimeKey("max_message_size", in_store=True),
        RuntimeKey("max_transfer_count_on_message_in_memory", in_store=True),
        RuntimeKey("max_transfer_bytes_on_message_in_memory", in_store=True),
        RuntimeKey("file_reserved_time", in_store=True),
        RuntimeKey("clean_file_forcibly_enable", in_store=True),
    )
}

_KNOWN: Final = frozenset(property_name(f.name) for f in dataclasses.fields(BrokerConfig))
_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_ESCAPE_RE: Final = re.compile(r"\\(u[0-9a-fA-F]{4}|.)")


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``Properties`` text (``Properties.load``, as ``MixAll.string2Properties``).

    Comment lines start with ``#`` or ``!``; a key ends at the first unescaped ``=``, ``:`` or
    blank; a line ending in an odd number of backslashes continues on the next one; ``\\t``,
    ``\\n``, ``\\uXXXX`` and escaped separators are decoded. A later duplicate key wins.
    """
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while (len(line) - len(line.rstrip("\\"))) % 2 == 1 and i < len(lines):
            line = line[:-1] + lines[i].lstrip(" \t\f")
            i += 1
        m = re.match(r"((?:\\.|[^=:\s\\])*)\s*[=:]?\s*(.*)\Z", line, re.S)
        if m is None:  # pragma: no cover - the pattern matches any string
            continue
        out[_unescape(m.group(1))] = _unescape(m.group(2))
    return out


def _unescape(s: str) -> str:
    def one(m: re.Match[str]) -> str:
        e = m.group(1)
        if len(e) == 5:
            return chr(int(e[1:], 16))
        return _ESCAPES.get(e, e)

    return _ESCAPE_RE.sub(one, s)


def _parse_value(config: BrokerConfig, key: str, spec: RuntimeKey, text: str) -> Any:
    current = getattr(config, spec.field)
    text = text.strip()
    if isinstance(current, bool):
        if text.lower() not in ("true", "false"):
            raise InvalidArgumentError(f"{key}={text}: not true or false")
        return text.lower() == "true"
    if isinstance(current, int):
        try:
            value = int(text)
        except ValueError:
            raise InvalidArgumentError(f"{key}={text}: not an integer") from None
        if value < spec.minimum:
            raise InvalidArgumentError(f"{key}={text}: must be at least {spec.minimum}")
        return value
    return text


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """A checked UPDATE_BROKER_CONFIG request.

    Attributes:
        changes: config field -> new value (run-time keys only).
        properties: the accepted ``key=value`` pairs as sent (what is persisted).
        ignored: unknown keys, left alone as Java does.
    """

    changes: dict[str, Any]
    properties: dict[str, str]
    ignored: tuple[str, ...]


def plan_update(config: BrokerConfig, properties: dict[str, str]) -> ConfigUpdate:
    """Check ``properties`` against the vocabulary; nothing is changed here.

    Raises:
        InvalidArgumentError: a known key that a running broker cannot change, or a bad value
            (the message names them).
    """
    static = sorted(k for k in properties if k in _KNOWN and k not in RUNTIME_KEYS)
    if static:
        raise InvalidArgumentError(
            f"can not change {', '.join(static)} while the broker runs (restart it with the new value); "
            f"keys changed at run time: {', '.join(sorted(RUNTIME_KEYS))}"
        )
    changes: dict[str, Any] = {}
    accepted: dict[str, str] = {}
    for key, text in properties.items():
        spec = RUNTIME_KEYS.get(key)
        if spec is not None:
            changes[spec.field] = _parse_value(config, key, spec, text)
            accepted[key] = text.strip()
    dataclasses.replace(config, **changes)  # __post_init__ checks: raises InvalidArgumentError
    ignored = tuple(sorted(k for k in properties if k not in RUNTIME_KEYS))
    return ConfigUpdate(changes, accepted, ignored)


def apply(broker: BrokerContext, changes: dict[str, Any]) -> None:
    """Put ``changes`` (config field -> value) into effect: replace the broker's config and,
    for the store-side keys, the store's ``StoreConfig``."""
    if not changes:
        return
    broker.config = dataclasses.replace(broker.config, **changes)
    store_changes = {f: v for f, v in changes.items() if RUNTIME_KEYS[property_name(f)].in_store}
    if store_changes:
        broker.store.config = dataclasses.replace(broker.store.config, **store_changes)


def config_path(broker: BrokerContext) -> Path:
    """``<store_dir>/config/broker.properties``."""
    return broker.config_dir / CONFIG_FILE


def _decode(data: bytes) -> dict[str, str]:
    return parse_properties(data.decode("utf-8"))


def _read(path: Path, recover: bool) -> dict[str, str]:
    loaded = read_with_backup(path, _decode, recover=recover, hint="delete it to drop the run-time changes")
    if loaded.faults:
        log.warning("file=%s: %s", path, loaded.faults)
    return loaded.value or {}


def persist(broker: BrokerContext, properties: dict[str, str]) -> None:
    """Merge ``properties`` into the file of run-time changes (``Configuration.persist``).

    Raises:
        OSError: the file cannot be written (the previous version stays).
        MetadataError: the existing file and its ``.bak`` are unreadable.
    """
    if not properties:
        return
    path = config_path(broker)
    merged = _read(path, broker.config.recover_metadata)
    merged.update(properties)
    text = "".join(f"{k}={_escape(v)}\n" for k, v in sorted(merged.items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text.encode())


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n")


def restore(broker: BrokerContext) -> int:
    """Apply the persisted run-time changes to a broker being built; return how many keys.

    Keys of the file that are no (longer) run-time keys or have bad values are skipped, in one
    warning line with their count.

    Raises:
        MetadataError: the file and its ``.bak`` are unreadable and ``recover_metadata`` is off.
        OSError: the file exists but cannot be read.
    """
    path = config_path(broker)
    saved = _read(path, broker.config.recover_metadata)
    changes: dict[str, Any] = {}
    skipped: list[str] = []
    for key, text in saved.items():
        spec = RUNTIME_KEYS.get(key)
        try:
            if spec is None:
                raise InvalidArgumentError(key)
            changes[spec.field] = _parse_value(broker.config, key, spec, text)
        except InvalidArgumentError:
            skipped.append(key)
    try:
        apply(broker, changes)
    except InvalidArgumentError as exc:
        log.warning("file=%s: run-time changes not applied (%s)", path, exc)
        return 0
    if skipped:
        log.warning("file=%s: %d keys skipped (not changeable at run time or bad): %s", path, len(skipped), skipped)
    if changes:
        log.info("file=%s: %d run-time config changes applied", path, len(changes))
    return len(changes)
