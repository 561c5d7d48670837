"""spark-submit to a Spark standalone cluster: rocketpipe shipped by ``--py-files``, installed, or packed.

The cluster (a master and one worker, from the pyspark install's ``spark-class``) and the
application's driver run an interpreter in which ``import rocketpipe`` fails: a venv made at test
time whose only packages are the main venv's site-packages, added as a plain path so that the
editable install's ``.pth`` is not processed. rocketpipe reaches the driver, the driver-side
planning processes, the streaming source process and the executors in ``--py-files`` only, once
as ``rocketpipe.zip`` and once as a pure-Python wheel (the sources of ``src/rocketpipe`` and
``src/pyspark_rocketmq``, zipped here); both runs share one cluster. The application reads a
topic of the embedded broker with a streaming ``Trigger.AvailableNow`` query into a Parquet file
sink and with a batch read; both must return exactly the messages produced.
The same cluster then runs the application installed (this venv's Python, rocketpipe installed)
and from a venv-pack style ``--archives`` environment: docs/spark-deployment.md's ways 1 and 2.
docs/spark-deployment.md describes what Spark does with ``--py-files``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import textwrap
import zipfile
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import pytest
from spark_cluster import ThreadedCluster
from spark_standalone import Standalone, spark_env, standalone_cluster

from rocketpipe.client import SyncAdmin, SyncProducer
from rocketpipe.protocol.message import Message
from waiting import wait_until_sync

pytestmark = pytest.mark.spark

pq = pytest.importorskip("pyarrow.parquet")

SRC = Path(__file__).resolve().parents[2] / "src"
TOPIC = "DeployTopic"
MESSAGES = 300

# The application spark-submit runs. Arguments: the name server, the topic, the output directory,
# the prefix of the topics its sink writes to ("<prefix>Batch" by df.write, "<prefix>Stream" by
# df.writeStream).
APP = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession

    ns, topic, out, copies = sys.argv[1:5]
    spark = SparkSession.builder.getOrCreate()  # named by spark-submit --name
    result = {}

    def load(stream=False):
        r = spark.readStream if stream else spark.read
        return r.format("rocketmq").option("nameServer", ns).option("topic", topic).load()

    # Before registration Spark's lookup of pyspark_* modules does not see --py-files.
    try:
        load()
        result["unregistered"] = "loaded"
    except Exception as e:
        result["unregistered"] = " ".join(str(e).splitlines()[:3])

    import rocketpipe
    import pyspark_rocketmq

    pyspark_rocketmq.register(spark)
    result["driver_rocketpipe"] = rocketpipe.__file__
    result["executor_rocketpipe"] = (
        spark.sparkContext.parallelize([0], 1).map(lambda _: __import__("rocketpipe").__file__).collect()[0]
    )

    cols = ["msg_id", "queue_id", "queue_offset", "body"]
    load().select(*cols).write.parquet(out + "/batch")
    query = (
        load(stream=True).select(*cols).writeStream.format("parquet")
        .option("path", out + "/stream").option("checkpointLocation", out + "/checkpoint")
        .trigger(availableNow=True).start()
    )
    query.awaitTermination()
    result["stream_exception"] = str(query.exception())

    # The sink, batch and streaming: copy the topic's bodies to two more topics, read them back.
    (load().select("body").write.format("rocketmq")
     .option("nameServer", ns).option("topic", copies + "Batch").mode("append").save())
    sink = (
        load(stream=True).select("body").writeStream.format("rocketmq")
        .option("nameServer", ns).option("topic", copies + "Stream")
        .option("checkpointLocation", out + "/sink-checkpoint").trigger(availableNow=True).start()
    )
    sink.awaitTermination()
    result["sink_exception"] = str(sink.exception())
    for kind in ("Batch", "Stream"):
        rows = (spark.read.format("rocketmq").option("nameServer", ns).option("topic", copies + kind).load()
                .select("body").collect())
        result["sink_" + kind] = sorted(bytes(r.body).decode() for r in rows)
    result["executors"] = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
    with open(out + "/result.json", "w") as f:
        json.dump(result, f)
    spark.stop()
    """
)


def build_archive(dest: Path) -> Path:
    """The ``rocketpipe`` and ``pyspark_rocketmq`` packages of ``src`` in a zip, as a pure-Python wheel holds them.

    A ``dest`` ending in ``.whl`` also gets the wheel's ``.dist-info`` (METADATA, WHEEL, RECORD).
    """
    files = [
        f for pkg in ("rocketpipe", "pyspark_rocketmq") for f in sorted((SRC / pkg).rglob("*"))
        if f.is_file() and "__pycache__" not in f.parts
    ]  # fmt: skip
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        names = []
        for f in files:
            names.append(f.relative_to(SRC).as_posix())
            z.write(f, names[-1])
        if dest.suffix == ".whl":
            info = "rocketpipe-0.1.0.dist-info"
            z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: rocketpipe\nVersion: 0.1.0\n")
            z.writestr(
                f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
            )
            z.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in [*names, f"{info}/METADATA", f"{info}/WHEEL"]))
    return dest


def python_without_rocketpipe(dest: Path) -> Path:
    """A venv whose site-packages reach this interpreter's (pyspark, pyarrow…) but not rocketpipe.

    The main venv's site-packages goes in by a ``.pth`` line, i.e. as a plain ``sys.path`` entry:
    Python processes ``.pth`` files of site directories only, so the editable install's
    ``__editable__.rocketpipe-*.pth`` (which adds ``src``) is not read.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True, timeout=60)
    python = dest / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (Path(site) / "main-venv.pth").write_text("\n".join(paths) + "\n")
    return python


#: Distributions Spark provides itself on every Python worker's path (``pyspark.zip``, py4j).
_SPARK_PROVIDED: Final = frozenset({"pyspark", "py4j"})


def _requirement_closure() -> list[metadata.Distribution]:
    """The installed distributions ``rocketpipe[spark]`` needs, without :data:`_SPARK_PROVIDED`."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: dict[str, metadata.Distribution] = {}
    todo = [(r, "spark") for r in metadata.requires("rocketpipe") or []]
    while todo:
        raw, extra = todo.pop()
        req = Requirement(raw)
        name = canonicalize_name(req.name)
        if name in seen or name in _SPARK_PROVIDED:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        dist = metadata.distribution(req.name)
        seen[name] = dist
        todo += [(r, "") for r in dist.requires or []]
    return list(seen.values())


def packed_environment(dest: Path) -> Path:
    """A venv-pack style archive (``dest/env.tar``) of a venv holding rocketpipe and its Spark
    dependencies: every file of each distribution of :func:`_requirement_closure` copied from this
    venv by its RECORD, and ``src/rocketpipe`` + ``src/pyspark_rocketmq`` as a wheel installs them.

    As with venv-pack, the interpreter is not packed: ``bin/python`` links to the base Python,
    present at the same path on every node (here: one machine). The archive is a ``.tar.gz``, as
    venv-pack's: Spark 4.3 unpacks that with Hadoop's ``FileUtil.unTar`` (the system's ``tar``),
    but a plain ``.tar`` with its own ``Utils.unTarUsingJava``, which drops the files'
    permissions (``bin/python`` is then not executable) and refuses the absolute symlink.
    """
    env_dir = dest / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True, timeout=60)
    site = Path(
        subprocess.run(
            [str(env_dir / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
    )
    for dist in _requirement_closure():
        for f in dist.files or []:
            if ".." in f.parts or "__pycache__" in f.parts:
                continue  # console scripts live outside site-packages
            target = site / f
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(dist.locate_file(f), target)  # type: ignore[arg-type]
    for pkg in ("rocketpipe", "pyspark_rocketmq"):
        shutil.copytree(SRC / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    archive = dest / "env.tar.gz"
    with tarfile.open(archive, "w:gz", compresslevel=1) as tar:  # entries named from the root, as venv-pack's
        for child in sorted(env_dir.iterdir()):
            tar.add(child, arcname=child.name)
    return archive


def _imports(python: Path, env: dict[str, str], module: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), "-c", f"import {module}"], env=env, capture_output=True, text=True, timeout=60, cwd="/"
    )


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tc = ThreadedCluster(tmp_path_factory.mktemp("deploy-broker"))
    tc.start()
    try:
        assert tc.cluster is not None
        yield tc.cluster.namesrv_addr
    finally:
        tc.close()


@pytest.fixture(scope="module")
def sent(broker: str) -> dict[str, bytes]:
    """msg id -> body of the messages produced to :data:`TOPIC`."""
    admin = SyncAdmin(namesrv_addr=broker)
    try:
        admin.create_topic(TOPIC, 4)
    finally:
        admin.close()
    producer = SyncProducer("deploy-producer", namesrv_addr=broker)
    producer.start()
    try:
        out = {}
        for i in range(MESSAGES):
            body = b"deploy-%d" % i
            out[producer.send(Message.build(TOPIC, body, tags="t")).msg_id] = body
    finally:
        producer.close()
    assert len(out) == MESSAGES
    return out


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The interpreter of the cluster and the driver: pyspark and pyarrow, no rocketpipe (checked)."""
    python = python_without_rocketpipe(tmp_path_factory.mktemp("deploy-venv") / "venv")
    env = spark_env(tmp_path_factory.mktemp("deploy-env"), str(python))
    assert _imports(python, env, "pyspark, pyarrow, pandas, orjson").returncode == 0
    for module in ("rocketpipe", "pyspark_rocketmq"):
        r = _imports(python, env, module)
        assert r.returncode != 0 and f"No module named '{module}'" in r.stderr, r.stderr
    return python


@pytest.fixture(scope="module")
def packed_env(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:func:`packed_environment`'s archive; its Python imports rocketpipe without this venv."""
    archive = packed_environment(tmp_path_factory.mktemp("deploy-packed"))
    return archive


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, python: Path) -> Iterator[Standalone]:
    with standalone_cluster(tmp_path_factory.mktemp("deploy-spark"), python=str(python), cores=2, memory="1g") as sc:
        yield sc


def _rows(path: Path) -> dict[str, bytes]:
    table = pq.read_table(path)
    ids, bodies = table.column("msg_id").to_pylist(), table.column("body").to_pylist()
    assert len(set(ids)) == len(ids), f"{path.name}: duplicate msg ids"
    return dict(zip(ids, bodies, strict=True))


def _submit(
    sc: Standalone,
    tmp_path: Path,
    name: str,
    pyfile: Path | None,
    ns: str,
    out: Path,
    *,
    copies: str,
    ship: Sequence[str] = (),
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """spark-submit :data:`APP` from ``tmp_path`` with ``--py-files pyfile`` (when given) and the
    ``ship`` arguments (``--archives ...``); the sink writes to ``<copies>Batch`` / ``<copies>Stream``."""
    app = tmp_path / "app.py"
    app.write_text(APP)
    c1 = "-XX:TieredStopAtLevel=1"  # C1 only: a short application never pays back C2's compile time
    conf = {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "2",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": c1,
        "spark.executor.extraJavaOptions": c1,
        "spark.sql.streaming.stopTimeout": "10s",
    }
    args = ["--name", name, "--driver-memory", "768m", "--executor-memory", "768m", *ship]
    if pyfile is not None:
        args += ["--py-files", str(pyfile)]
    args += ["--total-executor-cores", "2", "--executor-cores", "2"]
    for k, v in conf.items():
        args += ["--conf", f"{k}={v}"]
    admin = SyncAdmin(namesrv_addr=ns)
    try:
        for kind in ("Batch", "Stream"):
            admin.create_topic(copies + kind, 2)
    finally:
        admin.close()
    return sc.submit(
        [*args, str(app), ns, TOPIC, str(out), copies], log=tmp_path / "submit.log", timeout=150, env=env, cwd=tmp_path
    )


def _check_run(
    sc: Standalone, name: str, out: Path, done: subprocess.CompletedProcess[str], sent: dict[str, bytes]
) -> dict[str, Any]:
    """The application finished on the cluster and read and wrote exactly :data:`TOPIC`'s messages; its result."""
    result_file = out / "result.json"
    assert done.returncode == 0 and result_file.exists(), (
        f"spark-submit exited with {done.returncode}:\n{done.stdout[-8000:]}\n{sc.logs()}"
    )

    # It ran on the cluster: the master lists it as completed (once it has seen the driver go).
    def completed() -> list[str]:
        return [a["state"] for a in sc.state()["completedapps"] if a["name"] == name]

    wait_until_sync(lambda: bool(completed()), timeout=30, interval=0.2, what=f"{name} among completed apps")
    assert completed() == ["FINISHED"], sc.state()

    result: dict[str, Any] = json.loads(result_file.read_text())
    assert result["executors"] == 1, result
    assert result["stream_exception"] == "None", result
    assert _rows(out / "batch") == sent
    assert _rows(out / "stream") == sent
    # What the sink wrote, read back: every body once per sink.
    assert result["sink_exception"] == "None", result
    bodies = sorted(b.decode() for b in sent.values())
    assert result["sink_Batch"] == bodies
    assert result["sink_Stream"] == bodies
    return result


@pytest.mark.parametrize("archive", ["rocketpipe.zip", "rocketpipe-0.1.0-py3-none-any.whl"])
def test_spark_submit_py_files_on_a_standalone_cluster(
    tmp_path: Path, archive: str, cluster: Standalone, broker: str, sent: dict[str, bytes]
) -> None:
    pyfile = build_archive(tmp_path / archive)
    name = f"rocketpipe-deploy-{pyfile.suffix[1:]}"
    out = tmp_path / "out"
    out.mkdir()
    done = _submit(cluster, tmp_path, name, pyfile, broker, out, copies="Copy" + pyfile.suffix[1:])
    result = _check_run(cluster, name, out, done, sent)
    assert "DATA_SOURCE_NOT_FOUND" in result["unregistered"], result
    # The driver and the executor imported rocketpipe from the shipped archive.
    assert archive in result["driver_rocketpipe"], result
    assert archive in result["executor_rocketpipe"], result


@pytest.mark.parametrize("way", ["installed", "archives"])
def test_spark_submit_installed_or_packed_on_a_standalone_cluster(
    tmp_path: Path, way: str, cluster: Standalone, broker: str, sent: dict[str, bytes], packed_env: Path
) -> None:
    """docs/spark-deployment.md's ways 1 and 2 on the same cluster, whose own Python has no rocketpipe:
    the application's processes run a Python that has it, named by the submitting environment.

    * ``installed``: ``PYSPARK_PYTHON`` = ``PYSPARK_DRIVER_PYTHON`` = this venv's interpreter
      (rocketpipe installed; the same path on every node, here one machine);
    * ``archives``: a venv-pack style archive (:func:`packed_environment`) shipped with
      ``--archives env.tar.gz#environment``, ``PYSPARK_PYTHON=./environment/bin/python``, no
      ``PYSPARK_DRIVER_PYTHON``, and the driver's copy unpacked by hand in its working directory.

    Either way ``format("rocketmq")`` loads before any registration.
    """
    env = dict(cluster.env)
    ship: list[str] = []
    if way == "installed":
        env["PYSPARK_PYTHON"] = env["PYSPARK_DRIVER_PYTHON"] = sys.executable
    else:
        with tarfile.open(packed_env) as tar:
            tar.extractall(tmp_path / "environment", filter="tar")
        env["PYSPARK_PYTHON"] = "./environment/bin/python"
        env.pop("PYSPARK_DRIVER_PYTHON", None)
        ship = ["--archives", f"{packed_env}#environment"]
    name = f"rocketpipe-deploy-{way}"
    out = tmp_path / "out"
    out.mkdir()
    done = _submit(cluster, tmp_path, name, None, broker, out, copies="Copy" + way, ship=ship, env=env)
    result = _check_run(cluster, name, out, done, sent)
    assert result["unregistered"] == "loaded", result
    if way == "installed":
        assert result["driver_rocketpipe"].startswith(str(SRC)), result
        assert result["executor_rocketpipe"].startswith(str(SRC)), result
    else:
        assert result["driver_rocketpipe"].startswith(str(tmp_path / "environment")), result
        # the executor's copy: unpacked by Spark in the executor's working directory
        executor_copy = result["executor_rocketpipe"]
        assert "/environment/lib/" in executor_copy and str(cluster.work_dir) in executor_copy, result
