"""The demo's picture: average departure delay by day for the main carriers (L4, cli).

Drawn from the delay-stats table the demo's Spark query wrote (``delay_stats``, Parquet, one row
per day × carrier × origin), read with pyarrow — not from the source data. A carrier's average
for a day is the mean departure delay of its flights that left that day, from every origin:
``Σ avg_dep_delay × departed / Σ departed`` over its rows (``avg_dep_delay`` is a mean over the
``departed`` flights). Over a long range each carrier's line is a centred 7-day average of that
kind (all the carrier's departures in the 7 days around the date), which takes out the weekday
pattern and the one-day noise that otherwise tangles the lines; the average of all carriers by
single day stays as a grey line behind them, so the bad days are still visible.

Why lines rather than a heat map of day of year × hour of day: the delay statistics are per
day, with no hour of day, and the picture must come from what the Spark query produced.

Imports: matplotlib (the ``demo`` extra, Agg backend, never pyplot), pyarrow and pandas (the
``spark`` extra) lazily, so that importing the CLI stays fast.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

#: Carriers drawn (the largest by flights).
MAIN_CARRIERS: Final = 5
#: Days of each carrier's centred moving average, when the data span at least SMOOTH_MIN_SPAN days.
SMOOTH_DAYS: Final = 7
#: Shorter spans are drawn day by day (a 7-day average of a few days says little).
SMOOTH_MIN_SPAN: Final = 28
#: Spans up to this many days get a tick per day (or few days) and a marker per point.
SHORT_SPAN: Final = 60
#: Size of the picture: inches × dots per inch = 1200 × 640 pixels.
FIGSIZE: Final = (12.0, 6.4)
DPI: Final = 100
#: The key of the all-carriers series in :attr:`DelaysPicture.series`.
ALL: Final = "all"

_COLOURS: Final = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


@dataclass(slots=True)
class DelaysPicture:
    """What :func:`draw_delays` drew.

    Attributes:
        path: the PNG written.
        width: its width in pixels.
        height: its height in pixels.
        smooth_days: days of each carrier's moving average (1 = by single day).
        series: carrier (or :data:`ALL`) → the values of its line as drawn, a pandas Series of
            average departure delays in minutes indexed by day (``datetime64``); days without a
            departure are NaN (a gap in the line).
        seconds: wall time to read the table and draw the picture.
    """

    path: Path
    width: int
    height: int
    smooth_days: int
    series: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


def daily_sums(stats: Any) -> Any:
    """Sum departure delays and departed flights by day and carrier.

    Args:
        stats: the delay-stats table (pandas) with window_start, carrier, departed, avg_dep_delay.

    Returns:
        A DataFrame indexed by every day from the first to the last (no gaps), with a column
        MultiIndex (``dep_sum`` | ``departed``, carrier); ``dep_sum`` is minutes of delay.
    """
    import pandas as pd

    day = pd.to_datetime(stats["window_start"])
    if day.dt.tz is not None:  # the demo's Spark session writes New York wall time in UTC
        day = day.dt.tz_convert("UTC").dt.tz_localize(None)
    df = pd.DataFrame(
        {
            "day": day.dt.normalize(),
            "carrier": stats["carrier"].astype(str),
            "departed": stats["departed"].astype("float64"),
        }
    )
    df["dep_sum"] = stats["avg_dep_delay"].astype("float64").fillna(0.0) * df["departed"]
    wide = df.pivot_table(index="day", columns="carrier", values=["dep_sum", "departed"], aggfunc="sum", fill_value=0.0)
    days = pd.date_range(wide.index.min(), wide.index.max(), freq="D", name="day")
    return wide.reindex(days, fill_value=0.0)


def _average(dep_sum: Any, departed: Any, window: int) -> Any:
    """Centred ``window``-day average delay (partial windows at the ends); NaN without departures."""
    if window > 1:
        dep_sum = dep_sum.rolling(window, center=True, min_periods=1).sum()
        departed = departed.rolling(window, center=True, min_periods=1).sum()
    return (dep_sum / departed.where(departed > 0)).astype("float64")


def draw_delays(
    delay_stats: Path,
    out: Path,
    *,
    names: Mapping[str, str] | None = None,
    carriers: int = MAIN_CARRIERS,
    subtitle: str = "",
) -> DelaysPicture:
    """Draw the average departure delay by day of the main carriers to a PNG.

    Args:
        delay_stats: the demo's ``delay_stats`` Parquet directory (or file).
        out: the PNG to write (its directory must exist).
        names: carrier code → airline name, for the legend.
        carriers: how many carriers to draw, the largest by flights.
        subtitle: a line under the title (e.g. where the data came from).

    Returns:
        What was drawn (the plotted series, the size of the picture, the time taken).

    Raises:
        ValueError: the table has no rows.
    """
    started = time.monotonic()
    import matplotlib

    matplotlib.use("Agg")  # no display
    import matplotlib.dates

    mdates: Any = matplotlib.dates  # its locators and formatters carry no annotations
    import pyarrow.parquet as pq
    from matplotlib.figure import Figure

    stats = pq.read_table(delay_stats, columns=["window_start", "carrier", "flights", "departed", "avg_dep_delay"])
    if stats.num_rows == 0:
        raise ValueError(f"{delay_stats} has no rows to draw")
    frame = stats.to_pandas()
    sums = daily_sums(frame)
    days = sums.index
    smooth = SMOOTH_DAYS if len(days) >= SMOOTH_MIN_SPAN else 1
    flights = frame.groupby("carrier")["flights"].sum().sort_values(ascending=False, kind="stable")
    main = [str(c) for c in flights.index[:carriers]]
    names = names or {}

    series: dict[str, Any] = {}
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    ax = fig.add_subplot()
    x = days.to_numpy()
    everyone = _average(sums["dep_sum"].sum(axis=1), sums["departed"].sum(axis=1), 1)
    ys = everyone.to_numpy()
    marker: dict[str, Any] = {"marker": "o", "markersize": 4} if smooth == 1 else {}
    ax.fill_between(x, 0.0, ys, color="0.88", linewidth=0, zorder=0.5)
    drawn = ax.plot(
        x,
        ys,
        color="0.7",
        linewidth=0.7,
        label="all carriers, by single day" if smooth > 1 else "all carriers",
        zorder=1,
        **marker,
    )
    series[ALL] = _drawn(drawn[0])
    for i, carrier in enumerate(main):
        line = _average(sums["dep_sum"][carrier], sums["departed"][carrier], smooth)
        label = f"{carrier} {_short(names.get(carrier, ''))}".strip() + f" ({int(flights[carrier]):,} flights)"
        drawn = ax.plot(
            x, line.to_numpy(), color=_COLOURS[i % len(_COLOURS)], linewidth=1.8, label=label, zorder=2, **marker
        )
        series[carrier] = _drawn(drawn[0])

    first, last = days[0], days[-1]
    how = f"{smooth}-day centred average of its departures" if smooth > 1 else "average of its departures by day"
    span = _day(first) if first == last else f"{_day(first, year=first.year != last.year)} – {_day(last)}"
    fig.suptitle(f"Average departure delay by day, main carriers from New York, {span}", fontsize=14, weight="bold")
    ax.set_title(
        f"each carrier: {how}; {int(flights.sum()):,} flights" + (f", {subtitle}" if subtitle else ""),
        fontsize=10,
        color="0.3",
    )
    ax.set_ylabel("average departure delay (minutes)")
    ax.set_xlabel(f"scheduled departure date ({first.year})" if first.year == last.year else "scheduled departure date")
    if len(days) > SHORT_SPAN:
        locator = mdates.AutoDateLocator(minticks=4, maxticks=14)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, show_offset=False))
    else:  # a tick a day (or every few days), never hours
        ax.xaxis.set_major_locator(mdates.DayLocator(interval=max(1, -(-len(days) // 12))))
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%d %b"))
    if len(x) > 1:
        ax.set_xlim(x[0], x[-1])
    # Head room for the legend (two rows across the top) above the highest point.
    values = [v for s in series.values() for v in s.dropna().tolist()]
    low, high = min([0.0, *values]), max([0.0, *values])
    ax.set_ylim(low - 0.04 * (high - low or 1.0), high + 0.25 * (high - low or 1.0))
    worst = everyone.idxmax() if everyone.notna().any() else None
    if worst is not None and smooth > 1:  # the grey spikes stand out only behind smoothed lines
        right = worst < days[len(days) * 3 // 4]
        ax.annotate(
            f"{_day(worst, year=False)}: {everyone[worst]:.0f} min (all carriers)",
            xy=(worst, everyone[worst]),
            xytext=(8 if right else -8, -4),
            textcoords="offset points",
            ha="left" if right else "right",
            va="top",
            fontsize=9,
            color="0.35",
        )
    ax.axhline(0.0, color="0.2", linewidth=0.8, zorder=1.5)
    ax.grid(True, color="0.9", linewidth=0.7)
    ax.set_axisbelow(True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ax.legend(loc="upper center", ncols=3, fontsize=9, frameon=True, framealpha=0.92, edgecolor="0.85")
    fig.savefig(out, format="png", dpi=DPI)
    width, height = (round(v * DPI) for v in FIGSIZE)
    return DelaysPicture(
        path=out,
        width=width,
        height=height,
        smooth_days=smooth,
        series=series,
        seconds=time.monotonic() - started,
    )


def _drawn(line: Any) -> Any:
    """The values of a drawn ``Line2D`` as a Series indexed by its x values (the days)."""
    import pandas as pd

    return pd.Series(line.get_ydata(), index=pd.DatetimeIndex(line.get_xdata(), name="day"), name=line.get_label())


def _day(ts: Any, *, year: bool = True) -> str:
    return f"{ts.day} {ts:%b %Y}" if year else f"{ts.day} {ts:%b}"


def _short(name: str) -> str:
    for suffix in (" Inc.", " Co.", " Corporation"):
        name = name.replace(suffix, "")
    return name
