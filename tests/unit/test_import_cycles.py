"""No import cycles between rocketpipe's modules (issue 10).

The graph is grimp's (the one import-linter checks the layers with): every ``import`` of a
rocketpipe module by another, imports under ``if TYPE_CHECKING:`` included — a cycle there still
means two modules that cannot be read or changed apart. A failure names one shortest cycle per
group of mutually importing modules, each step with its file line.

The composition roots are the usual offenders: ``broker/broker.py`` builds the processors and the
POP package, which see it only as :class:`rocketpipe.broker.context.BrokerContext`; a
:class:`~rocketpipe.transport.connection.Connection` hands requests to a
:class:`~rocketpipe.transport.dispatch.Dispatcher` and never imports the router.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

import grimp
import pytest

#: The packages whose modules must form no cycle even while work elsewhere is in progress.
SERVER_PACKAGES = ("rocketpipe.broker", "rocketpipe.transport", "rocketpipe.namesrv")
#: The broker's composition root and the only modules of its package allowed to import it.
BROKER_ROOT = "rocketpipe.broker.broker"
BROKER_ROOT_IMPORTERS = {"rocketpipe.broker", "rocketpipe.broker.__main__"}


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("rocketpipe", include_external_packages=False, cache_dir=None)


def _strongly_connected(graph: grimp.ImportGraph) -> list[list[str]]:
    """Groups of two or more modules that import each other, directly or not (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []
    work: list[tuple[str, list[str]]] = []  # the DFS path: (module, imports not yet visited)

    def enter(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        work.append((module, sorted(graph.find_modules_directly_imported_by(module))))

    for root in sorted(graph.modules):
        if root in index:
            continue
        enter(root)
        while work:
            module, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    enter(nxt)
                elif nxt in on_stack:
                    low[module] = min(low[module], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                group: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def _shortest_cycle(graph: grimp.ImportGraph, group: Iterable[str]) -> list[str]:
    """A shortest cycle through the group: ``[m, ..., m]``."""
    members = set(group)
    best: list[str] = []
    for module in sorted(members):
        for imported in sorted(graph.find_modules_directly_imported_by(module) & members):
            back = graph.find_shortest_chain(importer=imported, imported=module)
            if back is not None and (not best or len(back) + 1 < len(best)):
                best = [module, *back]
    return best


def _describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    steps = []
    for importer, imported in itertools.pairwise(cycle):
        details = graph.get_import_details(importer=importer, imported=imported)
        where = f"line {details[0]['line_number']}: {details[0]['line_contents']}" if details else "?"
        steps.append(f"  {importer} -> {imported}  ({where})")
    return "\n".join(steps)


def _report(graph: grimp.ImportGraph, groups: list[list[str]]) -> str:
    return "\n".join(
        f"import cycle among {len(group)} modules ({', '.join(group)}); e.g.:\n{_describe(graph, _shortest_cycle(graph, group))}"
        for group in groups
    )


def _in(module: str, packages: Iterable[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_finds_a_planted_cycle() -> None:
    g = grimp.ImportGraph()
    for m in ("p", "p.a", "p.b", "p.c", "p.d"):
        g.add_module(m)
    g.add_import(importer="p.a", imported="p.b", line_number=3, line_contents="from . import b")
    g.add_import(importer="p.b", imported="p.c", line_number=4, line_contents="from . import c")
    g.add_import(importer="p.c", imported="p.a", line_number=5, line_contents="from . import a")
    g.add_import(importer="p.d", imported="p.a", line_number=6, line_contents="from . import a")
    groups = _strongly_connected(g)
    assert groups == [["p.a", "p.b", "p.c"]]
    assert _shortest_cycle(g, groups[0]) == ["p.a", "p.b", "p.c", "p.a"]
    assert "p.c -> p.a  (line 5: from . import a)" in _report(g, groups)


def test_no_import_cycle_in_broker_transport_namesrv(graph: grimp.ImportGraph) -> None:
    groups = [group for group in _strongly_connected(graph) if any(_in(m, SERVER_PACKAGES) for m in group)]
    assert not groups, _report(graph, groups)


def test_no_import_cycle_in_rocketpipe(graph: grimp.ImportGraph) -> None:
    groups = _strongly_connected(graph)
    assert not groups, _report(graph, groups)


def test_only_the_composition_root_imports_broker_py(graph: grimp.ImportGraph) -> None:
    """Nothing in ``rocketpipe.broker`` but its ``__init__``/``__main__`` imports ``broker.py``."""
    importers = {m for m in graph.find_modules_that_directly_import(BROKER_ROOT) if _in(m, ["rocketpipe.broker"])}
    offenders = sorted(importers - BROKER_ROOT_IMPORTERS)
    assert not offenders, "\n".join(
        _describe(graph, [m, BROKER_ROOT]) + " — use rocketpipe.broker.context.BrokerContext" for m in offenders
    )
