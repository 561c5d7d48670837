"""Interop fixtures: real Apache RocketMQ clusters, the Java scenario project, broker targets.

* ``apache_5`` / ``apache_4`` (session): an Apache name server + broker JVM pair
  (:mod:`rocketpipe.testing.apache`), one per version per session, stopped at the end;
* ``target`` (function, parametrized ``embedded`` / ``apache-5`` / ``apache-4``): where a
  client-facing test sends — rocketpipe's own ``local_cluster`` or one of the Apache clusters;
* ``java_client`` (session, parametrized ``java-5`` / ``java-4``): the Maven project in
  ``tests/interop/java`` built once per official client version; ``await java_client.run(...)``
  runs one scenario class and returns its JSON result.

If Maven Central (or Java) is unavailable the tests *fail* with Maven's error: the interop
suite is the proof of wire compatibility, a silent skip would hide that it did not run.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_support import JAVA_CLIENT_VERSIONS, TIMINGS, JavaClient, Target, build_java_project

from rocketpipe.testing.apache import (
    APACHE_VERSIONS,
    FAST_DELAY_LEVELS,
    ApacheCluster,
    ApacheUnavailableError,
    apache_cluster,
    prepare_home,
)
from rocketpipe.testing.cluster import local_cluster


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "interop: needs java + mvn + Maven Central; runs real Apache RocketMQ JVMs (tests/interop)"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = str(Path(__file__).parent)
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(pytest.mark.interop)


def _start(label: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    version = APACHE_VERSIONS[label]
    try:
        with apache_cluster(version, tmp_path_factory.mktemp(label)) as c:
            TIMINGS[f"{label} start-up"] = c.startup_seconds
            yield c
    except ApacheUnavailableError as exc:
        pytest.fail(f"Apache RocketMQ {version} ({label}) unavailable: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def apache_5(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    yield from _start("apache-5", tmp_path_factory)


@pytest.fixture(scope="session")
def apache_4(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApacheCluster]:
    yield from _start("apache-4", tmp_path_factory)


@pytest.fixture(params=["embedded", "apache-5", "apache-4"])
async def target(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Target]:
    kind = request.param
    if kind == "embedded":
        async with local_cluster(
            tmp_path / "store",
            message_delay_level=FAST_DELAY_LEVELS,
            enable_property_filter=True,
            recall_message_enable=True,  # as the Apache 5.x test brokers
        ) as c:
            yield Target(kind, c.namesrv_addr, c.broker_addr, c.broker.config.broker_name)
        return
    ac: ApacheCluster = request.getfixturevalue(kind.replace("-", "_"))
    yield Target(kind, ac.namesrv_addr, ac.broker_addr, ac.broker_name, ac)


@pytest.fixture(scope="session", params=list(JAVA_CLIENT_VERSIONS))
def java_client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaClient]:
    label = request.param
    version = JAVA_CLIENT_VERSIONS[label]
    home = tmp_path_factory.mktemp(label)
    prepare_home(home)
    t0 = time.monotonic()
    try:
        cp = build_java_project(version, home)
    except ApacheUnavailableError as exc:
        pytest.fail(f"official Java client {version} unavailable: {exc}", pytrace=False)
    TIMINGS[f"{label} build"] = time.monotonic() - t0
    client = JavaClient(label, version, cp, home)
    yield client
    client.stop()


# ------------------------------------------------------------------------------ conformance matrix

_OUTCOMES: dict[str, str] = {}
_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "tests/interop/" not in report.nodeid.replace("\\", "/") and not report.nodeid.startswith("test_interop_"):
        return
    outcome = "failed" if report.failed else report.outcome
    if _RANK[outcome] >= _RANK.get(_OUTCOMES.get(report.nodeid, "passed"), 0):
        _OUTCOMES[report.nodeid] = outcome


def _cell(nodeid: str) -> tuple[str, str, str] | None:
    """(table, feature, direction) of one test id, e.g. ('mqadmin', 'cluster_list', 'mqadmin 5.3.3 → rocketpipe')."""
    module, _, rest = nodeid.partition("::")
    name, _, params = rest.partition("[")
    params = params.rstrip("]")
    module = module.rsplit("/", 1)[-1]
    if module.startswith("test_interop_client"):
        return (
            "rocketpipe client → broker",
            name.removeprefix("test_"),
            f"→ {params} ({APACHE_VERSIONS.get(params, 'rocketpipe')})",
        )
    if module.startswith("test_interop_java"):
        client = next((c for c in JAVA_CLIENT_VERSIONS if params.startswith(c)), params)
        target = params[len(client) :].lstrip("-")  # e.g. "java-5-apache-5": the control broker
        suffix = (
            f" {target} ({APACHE_VERSIONS[target]})" if target in APACHE_VERSIONS else f" {target}" if target else ""
        )
        return (
            "official Java client → rocketpipe",
            name.removeprefix("test_java_"),
            f"Java {JAVA_CLIENT_VERSIONS.get(client, client)} →{suffix}",
        )
    if module == "test_interop_system_topics.py":  # one rocketpipe client, rocketpipe's broker vs Apache's
        control = params or "apache-5"
        return (
            "rocketpipe broker = Apache broker (same client, results compared)",
            name.removeprefix("test_"),
            f"rocketpipe = {control} ({APACHE_VERSIONS.get(control, '?')})",
        )
    if module == "test_interop_grpc.py":  # official 5.x SDKs over gRPC; params: the endpoint (→ its cluster)
        sdk, _, feature = name.removeprefix("test_").partition("_")  # test_python_… / test_java_…
        return (
            "official RocketMQ 5 SDK (gRPC) → endpoint",
            feature,
            f"{sdk} → {params.replace('-apache-5', ' → apache-5')}",
        )
    if module == "test_interop_mqadmin.py":
        label, _, srv = params.rpartition("-")
        ver = JAVA_CLIENT_VERSIONS.get(label, label)
        if srv == "apache":
            srv = f"apache {APACHE_VERSIONS['apache-5' if ver.startswith('5') else 'apache-4']}"
        return "mqadmin → server", name.removeprefix("test_mqadmin_"), f"{ver} → {srv}"
    return None


def conformance_matrix() -> str:
    """The feature × direction table of this session's interop outcomes."""
    tables: dict[str, dict[str, dict[str, str]]] = {}
    for nodeid, outcome in _OUTCOMES.items():
        cell = _cell(nodeid)
        if cell is None:
            continue
        table, feature, direction = cell
        tables.setdefault(table, {}).setdefault(feature, {})[direction] = {
            "passed": "pass",
            "failed": "FAIL",
            "skipped": "skip",
        }[outcome]
    lines: list[str] = []
    for table, rows in tables.items():
        directions = sorted({d for r in rows.values() for d in r})
        width = max(len(f) for f in rows) + 2
        lines.append(f"[{table}]")
        lines.append(" " * width + " | ".join(f"{d:^20}" for d in directions))
        for feature, cells in rows.items():
            lines.append(f"{feature:<{width}}" + " | ".join(f"{cells.get(d, '-'):^20}" for d in directions))
        lines.append("")
    return "\n".join(lines)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("interop timings (s)")
        for k, v in TIMINGS.items():
            terminalreporter.write_line(f"{k:60s} {v:6.1f}")
    matrix = conformance_matrix()
    if matrix:
        terminalreporter.section("interop conformance matrix (feature × direction)")
        for line in matrix.splitlines():
            terminalreporter.write_line(line)
        out = os.environ.get("ROCKETPIPE_INTEROP_MATRIX")
        if out:
            Path(out).write_text(matrix)
