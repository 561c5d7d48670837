"""The demo's PYSPARK_PYTHON launcher: which PYTHONPATH entries it drops, run through a real /bin/sh."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocketpipe.cli import spark_python

pytest.importorskip("pyspark")

_SHOW = "import os, sys, pyspark; print(os.environ.get('PYTHONPATH', '<unset>')); print(pyspark.__file__)"


def _run(launcher: Path, pythonpath: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run([str(launcher), "-c", _SHOW], env=env, capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.splitlines()


def test_the_installed_pyspark_zips_are_found() -> None:
    drop = spark_python.zips_to_drop()
    names = sorted(Path(p).name for p in drop)
    assert "pyspark.zip" in names
    assert any(n.startswith("py4j-") and n.endswith("-src.zip") for n in names)
    assert all(Path(p).is_file() for p in drop)


def test_launcher_drops_exactly_the_zips_and_keeps_the_rest_in_order(tmp_path: Path) -> None:
    launcher = spark_python.write_launcher(tmp_path / "spark-python")
    assert os.access(launcher, os.X_OK)
    zips = spark_python.zips_to_drop()
    odd = ["/a dir/with space", "/glob/*", "/x;echo hi", str(tmp_path / "other" / "pyspark.zip")]
    path, pyspark_file = _run(launcher, os.pathsep.join([odd[0], *zips, *odd[1:]]))
    assert path.split(os.pathsep) == odd
    # with the zips gone, pyspark comes from site-packages (where its bytecode is kept)
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None
    assert pyspark_file == spec.origin
    assert ".zip" not in pyspark_file


def test_launcher_with_only_zips_unsets_pythonpath_and_leaves_others_alone(tmp_path: Path) -> None:
    launcher = spark_python.write_launcher(tmp_path / "spark-python")
    assert _run(launcher, os.pathsep.join(spark_python.zips_to_drop()))[0] == "<unset>"
    assert _run(launcher, None)[0] == "<unset>"
    assert _run(launcher, "/only/this")[0] == "/only/this"


def test_launcher_runs_the_given_interpreter(tmp_path: Path) -> None:
    launcher = spark_python.write_launcher(tmp_path / "spark-python", python=sys.executable)
    out = subprocess.run(
        [str(launcher), "-c", "import sys; print(sys.executable)"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert Path(out.stdout.strip()).resolve() == Path(sys.executable).resolve()


def test_without_pyspark_nothing_is_dropped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, package=None: None)
    assert spark_python.zips_to_drop() == []
    launcher = spark_python.write_launcher(tmp_path / "spark-python")
    assert "for entry in" not in launcher.read_text()  # no filter
    zip_entry = "/somewhere/pyspark/python/lib/pyspark.zip"
    out = subprocess.run(
        [str(launcher), "-c", "import os; print(os.environ['PYTHONPATH'])"],
        env={**os.environ, "PYTHONPATH": zip_entry},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert out.stdout.strip() == zip_entry
