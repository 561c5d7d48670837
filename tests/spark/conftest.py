"""Spark test fixtures: one local[2] SparkSession per test session (UI off, 2 shuffle partitions).

Executors start ``PYSPARK_PYTHON``; it must be the venv's interpreter (pyarrow, rocketpipe), and
``tests/spark`` goes on ``PYTHONPATH`` so executors can import the test fakes. Both are set before
the JVM starts, which passes its environment to every Python worker.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from spark_cluster import ThreadedCluster, started

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")

_HERE = Path(__file__).resolve().parent
_VENV_PYTHON = _HERE.parents[1] / ".venv" / "bin" / "python"


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A shared ``local[2]`` SparkSession."""
    python = str(_VENV_PYTHON) if _VENV_PYTHON.exists() else sys.executable
    os.environ["PYSPARK_PYTHON"] = python
    os.environ["PYSPARK_DRIVER_PYTHON"] = python
    paths = [str(_HERE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("rocketpipe-spark-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.streaming.stopTimeout", "10s")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ThreadedCluster]:
    """An embedded name server + broker for one test module."""
    with started(tmp_path_factory.mktemp("spark-broker")) as tc:
        yield tc


@pytest.fixture(scope="module")
def ns(cluster: ThreadedCluster) -> str:
    """The module broker's name-server address."""
    assert cluster.cluster is not None
    return cluster.cluster.namesrv_addr
