"""The demo's PYSPARK_PYTHON launcher: which PYTHONPATH entries it drops (run through a real
/bin/sh), which interpreter it runs, and where it may be written."""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from rocketpipe.cli import spark_python

pytest.importorskip("pyspark")

_SHOW = "import os, sys, pyspark; print(os.environ.get('PYTHONPATH', '<unset>')); print(pyspark.__file__); print(sys.prefix)"


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


def test_launcher_drops_the_zips_and_empty_entries_and_keeps_the_rest_in_order(tmp_path: Path) -> None:
    launcher = spark_python.write_launcher(tmp_path / "spark-python")
    assert os.access(launcher, os.X_OK)
    (tmp_path / "glob-match").mkdir()  # "glob-*" would expand to it without `set -f`
    zips = spark_python.zips_to_drop()
    kept = ["/a dir/with space", str(tmp_path / "glob-*"), str(tmp_path / "other" / "pyspark.zip"), "/last"]
    given = [kept[0], "", *zips, kept[1], "", kept[2], kept[3]]
    path, pyspark_file, prefix = _run(launcher, os.pathsep.join(given))
    assert path.split(os.pathsep) == kept
    # with the zips gone, pyspark comes from site-packages (where its bytecode is kept)
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None
    assert pyspark_file == spec.origin
    assert prefix == sys.prefix  # the interpreter as this process runs it (a venv stays a venv)


def test_launcher_with_only_zips_unsets_pythonpath_and_leaves_others_alone(tmp_path: Path) -> None:
    launcher = spark_python.write_launcher(tmp_path / "spark-python")
    assert _run(launcher, os.pathsep.join(spark_python.zips_to_drop()))[0] == "<unset>"
    assert _run(launcher, None)[0] == "<unset>"
    assert _run(launcher, "/only/this")[0] == "/only/this"


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


def test_install_writes_into_a_private_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    python = spark_python.install_launcher()
    assert python == str(spark_python.launcher_path())
    assert Path(python).parent.parent == tmp_path
    assert Path(python).parent.stat().st_mode & 0o777 == 0o700
    assert _run(Path(python), "/kept")[0] == "/kept"
    assert spark_python.install_launcher() == python  # rewritten in place on the next start


def test_install_falls_back_to_this_interpreter_on_an_unsafe_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "with space"))
    with caplog.at_level(logging.WARNING, logger=spark_python.__name__):
        assert spark_python.install_launcher() == sys.executable
    assert "holds characters Spark's launch scripts split at" in caplog.text
    assert not (tmp_path / "with space").exists()


def test_install_falls_back_when_another_user_could_replace_the_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = spark_python.launcher_path().parent
    shared.mkdir()
    shared.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger=spark_python.__name__):
        assert spark_python.install_launcher() == sys.executable
    assert "is not a directory private to this user" in caplog.text
    assert list(shared.iterdir()) == []


def test_a_failed_write_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        spark_python.write_launcher(tmp_path / "spark-python")
    assert list(tmp_path.iterdir()) == []
