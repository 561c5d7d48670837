"""The demo's ``PYSPARK_PYTHON``: this interpreter, importing pyspark compiled rather than from ``pyspark.zip`` (L4, cli).

Spark starts its Python processes (the worker daemon, and one fresh process for each Python data
source lookup, read plan and streaming source) with ``$SPARK_HOME/python/lib/pyspark.zip`` and
the py4j zip at the front of ``PYTHONPATH``. With pyspark installed by pip, ``SPARK_HOME`` is the
installed package itself, so those zips hold the very code that site-packages holds, but Python
keeps no bytecode for a zip: each such process compiles pyspark again. Importing what a
data-source planner imports took 0.76–0.80 s from the zips against 0.22–0.24 s from
site-packages (2026-11-29, this 2-core machine).

:func:`install_launcher` writes a ``/bin/sh`` script that removes exactly those two entries from
``PYTHONPATH`` and runs this interpreter, in a directory private to the user under the temp
directory (a path without spaces: Spark's launch scripts expand it unquoted, and its data source
lookup fails on one); the demo gives it to Spark as both ``PYSPARK_PYTHON`` and
``PYSPARK_DRIVER_PYTHON``: for a data source Spark finds itself (``format("rocketmq")``,
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

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import re
import shlex
import stat
import sys
import tempfile
from pathlib import Path

__all__ = ["install_launcher", "launcher_path", "write_launcher", "zips_to_drop"]

log = logging.getLogger(__name__)


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
# Written by rocketpipe (rocketpipe/cli/spark_python.py): runs the interpreter below with the
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
        '' | {patterns}) ;;
        *) kept=${{kept:+$kept:}}$entry ;;
    esac
done
IFS=$old_ifs
if [ -n "$kept" ]; then export PYTHONPATH="$kept"; else unset PYTHONPATH; fi
"""

_EXEC = """\
exec {python} "$@"
"""

#: Characters a launcher path may hold: Spark's launch scripts expand the Python's path unquoted
#: (``bin/find-spark-home``), and its Python data source lookup finds nothing when that path
#: holds a space (seen with Spark 4.3).
_SAFE_PATH = re.compile(r"[A-Za-z0-9_./+-]+")


def launcher_path() -> Path:
    """Where this interpreter's launcher lives: ``<temp dir>/rocketpipe-<uid>/spark-python-<key>``,
    the key 16 hex digits of a SHA-256 of ``sys.executable``."""
    key = hashlib.sha256(sys.executable.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"rocketpipe-{os.getuid()}" / f"spark-python-{key}"


def _private_dir(directory: Path) -> bool:
    """Create ``directory`` (mode 0700) if needed; True when it is a real directory of this user
    that nobody else can write (so nobody else can replace the script this process runs)."""
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = directory.lstat()
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def write_launcher(path: Path) -> Path:
    """Write the launcher of this interpreter (``sys.executable``) to ``path`` (mode 0755,
    replaced atomically) and return ``path``.

    The script drops :func:`zips_to_drop` and empty entries (which would mean the working
    directory) from ``PYTHONPATH`` and keeps the others in their order; when there is nothing to
    drop it runs the interpreter with ``PYTHONPATH`` unchanged.

    Raises:
        OSError: ``path`` cannot be written.
    """
    drop = zips_to_drop()
    script = _HEAD
    if drop:
        script += _FILTER.format(patterns=" | ".join(shlex.quote(p) for p in drop))
    script += _EXEC.format(python=shlex.quote(sys.executable))
    path.parent.mkdir(parents=True, exist_ok=True)
    # not backup_file.write_atomic: a launcher is rewritten at every start, so it needs neither
    # an fsync nor a .bak copy, only a rename that a concurrent demo never sees half-written
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        partial.write_text(script)
        os.chmod(partial, 0o755)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return path


def install_launcher() -> str:
    """Write the launcher at :func:`launcher_path` and return its path, for ``PYSPARK_PYTHON`` and
    ``PYSPARK_DRIVER_PYTHON``.

    Returns ``sys.executable`` instead (and logs one line why) when that path holds characters
    Spark's launch scripts split at, when its directory is not private to this user, or when it
    cannot be written: Spark then runs as without the launcher, only slower to start.
    """
    path = launcher_path()
    why = None
    if not _SAFE_PATH.fullmatch(str(path)):
        why = f"its path {str(path)!r} holds characters Spark's launch scripts split at"
    else:
        try:
            if _private_dir(path.parent):
                return str(write_launcher(path))
            why = f"{path.parent} is not a directory private to this user"
        except OSError as exc:
            why = f"it cannot be written ({exc})"
    log.warning("Spark's Python runs without the pyspark-compiled launcher: %s", why)
    return sys.executable
