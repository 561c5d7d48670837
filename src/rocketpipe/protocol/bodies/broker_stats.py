"""Broker statistics bodies (L1, sans-IO): ``BrokerStatsData`` / ``BrokerStatsItem``, the answer
to VIEW_BROKER_STATS_DATA (315).

Mirrors ``remoting/protocol/body/{BrokerStatsData,BrokerStatsItem}``: one item per window of a
Java ``StatsItem`` (``getStatsDataInMinute`` / ``InHour`` / ``InDay``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import javajson as jj

__all__ = ["BrokerStatsData", "BrokerStatsItem"]


@dataclass(frozen=True, slots=True)
class BrokerStatsItem:
    """One window of a statistics item (Java ``BrokerStatsItem`` from a ``StatsSnapshot``).

    Attributes:
        sum: value added during the window (messages or bytes, by item).
        tps: ``sum`` per second over the window.
        avgpt: ``sum`` per recorded call (request or pull batch) in the window; 0.0 without calls.
    """

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {"avgpt": float(self.avgpt), "sum": self.sum, "tps": float(self.tps)}

    @classmethod
    def from_obj(cls, d: Any) -> BrokerStatsItem:
        """Build from a parsed bean (missing keys: 0)."""
        d = jj.as_dict(d)
        return cls(jj.as_int(d.get("sum")), jj.as_float(d.get("tps")), jj.as_float(d.get("avgpt")))


@dataclass(frozen=True, slots=True)
class BrokerStatsData:
    """A statistics item over the last minute, hour and day (Java ``BrokerStatsData``)."""

    stats_minute: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = field(default_factory=BrokerStatsItem)

    def to_obj(self) -> dict[str, Any]:
        """The fastjson bean form."""
        return {
            "statsDay": self.stats_day.to_obj(),
            "statsHour": self.stats_hour.to_obj(),
            "statsMinute": self.stats_minute.to_obj(),
        }

    def encode(self) -> bytes:
        """Encode as JSON."""
        return jj.dumps(self.to_obj())

    @classmethod
    def decode(cls, data: bytes | memoryview | str) -> BrokerStatsData:
        """Decode.

        Raises:
            ProtocolError: the body is not JSON.
        """
        d = jj.as_dict(jj.loads(data))
        return cls(
            BrokerStatsItem.from_obj(d.get("statsMinute")),
            BrokerStatsItem.from_obj(d.get("statsHour")),
            BrokerStatsItem.from_obj(d.get("statsDay")),
        )
