"""In a real SparkSession started as the demo starts it, Spark's Python processes (the data-source
planner and the workers) import pyspark from site-packages, not from ``pyspark.zip``."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

#: A data source Spark finds itself (``lookup_data_sources`` imports every ``pyspark_*`` module),
#: as it finds ``format("rocketmq")``: such a source's planner runs under PYSPARK_DRIVER_PYTHON.
_SOURCE = textwrap.dedent(
    """
    from pyspark.sql.datasource import DataSource, DataSourceReader


    def where():
        import pyspark

        return pyspark.__file__


    class Reader(DataSourceReader):
        def __init__(self, planner):
            self.planner = planner

        def read(self, partition):
            yield (self.planner, where())


    class DefaultSource(DataSource):
        @classmethod
        def name(cls):
            return "where_is_pyspark"

        def schema(self):
            return "planner STRING, worker STRING"

        def reader(self, schema):
            return Reader(where())  # runs in the planner process
    """
)

_DRIVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from pyspark.sql import SparkSession

    from rocketpipe.cli.demo_pipeline import DemoPaths, start_spark

    mode, out_dir = sys.argv[1], Path(sys.argv[2])
    if mode == "demo":
        spark = start_spark(DemoPaths(out_dir))
    else:
        spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
    try:
        for row in spark.read.format("where_is_pyspark").load().collect():
            print("PLANNER", row.planner)
            print("WORKER", row.worker)
    finally:
        spark.stop()
    """
)


def _origins(mode: str, tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "driver.py"
    script.write_text(_DRIVER)
    modules = tmp_path / "modules"
    modules.mkdir(exist_ok=True)
    (modules / "pyspark_where_is_pyspark.py").write_text(_SOURCE)
    pythonpath = os.pathsep.join(filter(None, [str(modules), os.environ.get("PYTHONPATH")]))
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": pythonpath,
    }
    out = subprocess.run(
        [sys.executable, str(script), mode, str(tmp_path / f"{mode} out")],  # a space, as users' paths have
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    found = dict(line.split(" ", 1) for line in out.stdout.splitlines() if line.startswith(("PLANNER ", "WORKER ")))
    assert set(found) == {"PLANNER", "WORKER"}, out.stdout
    return found


@pytest.mark.timeout(400)
def test_the_demos_spark_imports_pyspark_from_site_packages(tmp_path: Path) -> None:
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None
    assert _origins("demo", tmp_path) == {"PLANNER": spec.origin, "WORKER": spec.origin}
    # the reference: a session with the plain interpreter puts Spark's zip first
    plain = _origins("plain", tmp_path)
    assert all("pyspark.zip" in origin for origin in plain.values()), plain
