"""The demo's picture: drawn from a delay_stats table, the plotted values are the right averages."""

from __future__ import annotations

import math
import random
import struct
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from rocketpipe.cli.demo_picture import ALL, DPI, FIGSIZE, SMOOTH_DAYS, draw_delays  # noqa: E402

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WIDTH, HEIGHT = round(FIGSIZE[0] * DPI), round(FIGSIZE[1] * DPI)
DAY0 = datetime(2013, 1, 1)

Row = dict[str, Any]


def row(day: int, carrier: str, origin: str, flights: int, departed: int, avg: float | None) -> Row:
    return {
        "window_start": DAY0 + timedelta(days=day),
        "window_end": DAY0 + timedelta(days=day + 1),
        "carrier": carrier,
        "origin": origin,
        "flights": flights,
        "departed": departed,
        "cancelled": flights - departed,
        "avg_dep_delay": avg,
        "max_dep_delay": None if avg is None else avg + 30.0,
        "avg_arr_delay": avg,
        "delayed_15_share": 0.1,
    }


def write_stats(rows: list[Row], path: Path, tz: str | None = None) -> Path:
    """Write rows with the schema the demo's Spark query gives delay_stats."""
    schema = pa.schema(
        [
            ("window_start", pa.timestamp("ns", tz=tz)),
            ("window_end", pa.timestamp("ns", tz=tz)),
            ("carrier", pa.string()),
            ("origin", pa.string()),
            ("flights", pa.int64()),
            ("departed", pa.int64()),
            ("cancelled", pa.int64()),
            ("avg_dep_delay", pa.float64()),
            ("max_dep_delay", pa.float64()),
            ("avg_arr_delay", pa.float64()),
            ("delayed_15_share", pa.float64()),
        ]
    )
    path.mkdir()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path / "part-00000.parquet")
    return path


def expected_means(rows: list[Row], carriers: set[str] | None, days: range, window: int = 1) -> list[float]:
    """Average departure delay of the flights of ``carriers`` (None = all) in the ``window`` days centred on each day."""
    half = window // 2
    out = []
    for d in days:
        delay = departed = 0.0
        for r in rows:
            day = (r["window_start"] - DAY0).days
            if abs(day - d) <= half and (carriers is None or r["carrier"] in carriers) and r["departed"]:
                delay += r["avg_dep_delay"] * r["departed"]
                departed += r["departed"]
        out.append(delay / departed if departed else math.nan)
    return out


def assert_series(actual: Any, expected: list[float], days: range) -> None:
    assert [d.to_pydatetime() for d in actual.index] == [DAY0 + timedelta(days=d) for d in days]
    values = actual.tolist()
    assert len(values) == len(expected)
    for got, want in zip(values, expected, strict=True):
        if math.isnan(want):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(want, rel=1e-12)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


# Four days; A has the most flights, then B, C, D. C flies no departure on day 2 (all cancelled).
SHORT = [
    row(0, "A", "EWR", 10, 10, 12.0),
    row(0, "A", "JFK", 30, 28, 4.0),
    row(0, "B", "LGA", 20, 19, -3.5),
    row(0, "C", "EWR", 5, 5, 60.0),
    row(0, "D", "JFK", 2, 2, 100.0),
    row(1, "A", "EWR", 12, 11, 8.25),
    row(1, "B", "LGA", 25, 25, 15.0),
    row(1, "B", "JFK", 4, 3, 1.0),
    row(1, "C", "EWR", 6, 6, 2.0),
    row(2, "A", "JFK", 40, 40, 0.5),
    row(2, "B", "LGA", 18, 17, 22.0),
    row(2, "C", "EWR", 3, 0, None),
    row(3, "A", "EWR", 9, 9, -1.0),
    row(3, "B", "LGA", 21, 21, 7.0),
    row(3, "C", "LGA", 8, 8, 30.0),
    row(3, "D", "EWR", 1, 1, 5.0),
]


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_demo_picture_plots_each_carriers_daily_average(tmp_path: Path, tz: str | None) -> None:
    stats = write_stats(SHORT, tmp_path / "delay_stats", tz)
    out = tmp_path / "delays.png"

    picture = draw_delays(stats, out, names={"A": "Alpha Air Inc.", "B": "Beta Airways"}, carriers=3)

    assert picture.path == out
    assert png_size(out) == (WIDTH, HEIGHT) == (picture.width, picture.height)
    assert picture.smooth_days == 1  # four days: not smoothed
    assert list(picture.series) == [ALL, "A", "B", "C"]  # the 3 largest carriers by flights, largest first
    days = range(4)
    assert_series(picture.series[ALL], expected_means(SHORT, None, days), days)
    for carrier in ("A", "B", "C"):
        assert_series(picture.series[carrier], expected_means(SHORT, {carrier}, days), days)
    assert math.isnan(picture.series["C"].iloc[2])  # no departure that day: a gap, not a zero
    assert picture.series["A"].name == "A Alpha Air (101 flights)"
    assert picture.series["B"].name == "B Beta Airways (88 flights)"
    assert picture.seconds > 0


def test_demo_picture_smooths_a_long_span_over_seven_centred_days(tmp_path: Path) -> None:
    rng = random.Random(14)
    rows = []
    for day in range(45):
        if day == 20:  # a day without flights at all: the days around it still average their week
            continue
        for carrier, size in (("UA", 50), ("B6", 40), ("EV", 30)):
            for origin in ("EWR", "JFK", "LGA"):
                flights = rng.randint(size // 2, size)
                departed = flights - rng.randint(0, 3)
                rows.append(row(day, carrier, origin, flights, departed, round(rng.uniform(-10.0, 90.0), 3)))
    stats = write_stats(rows, tmp_path / "delay_stats")
    out = tmp_path / "delays.png"

    picture = draw_delays(stats, out, carriers=2)

    assert picture.smooth_days == SMOOTH_DAYS == 7
    assert list(picture.series) == [ALL, "UA", "B6"]
    days = range(45)
    assert_series(picture.series[ALL], expected_means(rows, None, days), days)  # all carriers: by single day
    assert math.isnan(picture.series[ALL].iloc[20])
    for carrier in ("UA", "B6"):
        assert_series(picture.series[carrier], expected_means(rows, {carrier}, days, window=7), days)
    assert not picture.series["UA"].isna().any()


def test_demo_picture_reads_back_as_an_image_of_its_size(tmp_path: Path) -> None:
    from matplotlib.image import imread
    from PIL import Image

    stats = write_stats(SHORT, tmp_path / "delay_stats")
    out = tmp_path / "delays.png"
    draw_delays(stats, out)

    with Image.open(out) as im:
        assert im.format == "PNG"
        assert im.size == (WIDTH, HEIGHT)
        im.verify()
    pixels = imread(out)
    assert pixels.shape[:2] == (HEIGHT, WIDTH)
    assert pixels.std() > 0.05  # something is drawn, not a blank canvas


def test_demo_picture_of_an_empty_table_is_an_error(tmp_path: Path) -> None:
    stats = write_stats([], tmp_path / "delay_stats")
    out = tmp_path / "delays.png"
    with pytest.raises(ValueError, match="no rows"):
        draw_delays(stats, out)
    assert not out.exists()
