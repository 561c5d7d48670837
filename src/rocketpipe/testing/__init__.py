"""Shipped test kit (L4): local clusters and a fake wall clock.

* :func:`~rocketpipe.testing.cluster.local_cluster` — name server + broker on 127.0.0.1:0;
* :class:`~rocketpipe.testing.clock.FakeClock` — a settable :class:`~rocketpipe.clock.Clock`.
"""

from __future__ import annotations

from .clock import FakeClock
from .cluster import LocalCluster, local_cluster

__all__ = ["FakeClock", "LocalCluster", "local_cluster"]
