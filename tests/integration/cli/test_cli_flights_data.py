"""The demo's data preparation: flight order, JSON bodies, the retry subset."""

from __future__ import annotations

import orjson

from rocketpipe.cli.flights import FLIGHTS_ROWS, is_retry_body, is_retry_flight, iter_flights, load_flights


def test_cli_retry_subset_is_flight_numbers_divisible_by_1111() -> None:
    assert [n for n in range(1, 9000) if is_retry_flight(n)] == [1111, 2222, 3333, 4444, 5555, 6666, 7777, 8888]
    assert not is_retry_flight(0)
    assert is_retry_body(b'{"flight": 2222}')
    assert not is_retry_body(b'{"flight": 2223}')
    assert not is_retry_body(b"not json")
    assert not is_retry_body(b"[1111]")


def test_cli_flights_are_published_in_scheduled_departure_order() -> None:
    df = load_flights()
    assert len(df) == FLIGHTS_ROWS
    keys = list(zip(df["month"], df["day"], df["sched_dep_time"], strict=True))
    assert keys == sorted(keys)
    assert int((df["flight"] % 1111 == 0).sum()) == 290


def test_cli_flight_bodies_are_json_with_nulls_and_ints() -> None:
    records = list(iter_flights(load_flights(3000)))
    assert len(records) == 3000
    docs = [orjson.loads(r.body) for r in records]
    first = docs[0]
    assert (first["year"], first["month"], first["day"]) == (2013, 1, 1)
    assert isinstance(first["dep_time"], int) and isinstance(first["dep_delay"], int)
    cancelled = [d for d in docs if d["dep_time"] is None]
    assert cancelled, "the first days of January include cancelled flights"
    assert all(d["dep_delay"] is None for d in cancelled)
    no_tail = [r for r in records if r.tailnum is None]
    assert all(orjson.loads(r.body)["tailnum"] is None for r in no_tail)
    assert len({d["row"] for d in docs}) == 3000
    assert [r.carrier for r in records] == [d["carrier"] for d in docs]
    assert sum(r.is_retry for r in records) == 4
    assert all(r.is_retry == is_retry_body(r.body) for r in records)
