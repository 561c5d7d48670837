"""The demo's ``PYSPARK_PYTHON``: this interpreter, importing pyspark compiled rather than from ``pyspark.zip`` (L4, cli).

Spark starts its Python processes (the worker daemon, and one fresh process for each Python data
source lookup, read plan and streaming source) with ``$SPARK_HOME/python/lib/pyspark.zip`` and
the py4j zip at the front of ``PYTHONPATH``. With pyspark installed by pip, ``SPARK_HOME`` is the
installed package itself, so those zips hold the very code that site-packages holds, but Python
keeps no bytecode for a zip: each such process compiles pyspark again. Importing what a
data-source planner imports took 0.76–0.80 s from the zips against 0.22–0.24 s from
site-packages (2026-11-29, this 2-core machine).

:func:`write_launcher` writes a ``/bin/sh`` script that removes exactly those two entries from
``PYTHONPATH`` and runs this interpreter; the demo gives it to Spark as both ``PYSPARK_PYTHON``
and ``PYSPARK_DRIVER_PYTHON``: for a data source Spark finds itself (``format("rocketmq")``,
found by ``lookup_data_sources``), the planner and the workers both run the driver's Python. It
removes only the zips of the pyspark package this interpreter imports, and the py4j zip only
when the installed py4j has the zip's version: a ``SPARK_HOME`` pointing at another Spark keeps
its own zips. The demo started eight Python processes through it (two version checks, the
lookup, create and read-plan daemons, the worker daemon, a streaming source runner per query).
Three interleaved pairs of full demo runs (2026-11-29): 23.7–26.6 s against 28.0–29.1 s, the
host's CPU 42.8–46.8 s against 49.9–51.2 s, the warm-up read 4.3–4.4 s against 6.7–7.7 s.

Imports: the standard library; ``pyspark`` and ``py4j`` are only looked up, not imported.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shlex
import sys
from pathlib import Path

__all__ = ["write_launcher", "zips_to_drop"]


def zips_to_drop() -> list[str]:
    """The ``PYTHONPATH`` entries that site-packages already provides: ``<pyspark>/python/lib/pyspark.zip``
    and ``<pyspark>/python/lib/py4j-<installed version>-src.zip``, where each exists; [] without pyspark."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or spec.origin is None:
        return []
    names = ["pyspark.zip"]
    try:
        names.append(f"py4j-{importlib.metadata.version('py4j')}-src.zip")
    except importlib.metadata.PackageNotFoundError:  # py4j only in the zip: keep it
        pass
    package = Path(spec.origin).parent
    found: dict[str, None] = {}
    for root in (package, package.resolve()):  # as Spark spells SPARK_HOME, and without symlinks
        for name in names:
            zip_path = root / "python" / "lib" / name
            if zip_path.is_file():
                found[str(zip_path)] = None
    return list(found)


_HEAD = """\
#!/bin/sh
# Written by rocketpipe (rocketpipe/cli/spark_python.py): runs {python} with the
# pyspark installation's own zips removed from PYTHONPATH, so that Spark's Python processes
# import the same pyspark from site-packages, where Python keeps its bytecode.
"""

_FILTER = """\
set -f
kept=
old_ifs=$IFS
IFS=:
for entry in $PYTHONPATH; do
    case $entry in
        {patterns}) ;;
        *) kept=${{kept:+$kept:}}$entry ;;
    esac
done
IFS=$old_ifs
if [ -n "$kept" ]; then export PYTHONPATH="$kept"; else unset PYTHONPATH; fi
"""

_EXEC = """\
exec {python} "$@"
"""


def write_launcher(path: Path, python: str = sys.executable) -> Path:
    """Write the launcher to ``path`` (mode 0755) and return ``path``.

    Args:
        path: the script to write (its directory is created).
        python: the interpreter it runs; default this one.

    Returns:
        ``path``. The script keeps the other entries in their order (empty ones, which would
        mean the working directory, are left out); when :func:`zips_to_drop` finds nothing, it
        runs ``python`` with ``PYTHONPATH`` unchanged.

    Raises:
        OSError: ``path`` cannot be written.
    """
    drop = zips_to_drop()
    quoted = shlex.quote(python)
    script = _HEAD.format(python=quoted)
    if drop:
        script += _FILTER.format(patterns=" | ".join(shlex.quote(p) for p in drop))
    script += _EXEC.format(python=quoted)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)
    os.chmod(path, 0o755)
    return path
