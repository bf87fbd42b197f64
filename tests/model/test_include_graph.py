"""Parts meet in one direction: the module graph of each C folder (a module
is a .c file with its .h; an edge is an #include of another module's header)
and of the tools' Python package has no cycle, and the QEMU NIC and uncore
know each other only through the port interface."""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

C_FOLDERS = ["hardware/qemu/accio", "libaccio/src", "libaccio/verbs"]


def module(name):
    return os.path.splitext(os.path.basename(name))[0]


def c_graph(folder):
    """{module: {modules whose header it includes}} of one folder."""
    d = os.path.join(ROOT, folder)
    files = [f for f in os.listdir(d) if f.endswith((".c", ".h"))]
    mods = {module(f) for f in files}
    graph = {m: set() for m in mods}
    for f in files:
        for inc in re.findall(r'(?m)^\s*#\s*include\s+"([^"]+)"', open(os.path.join(d, f)).read()):
            m = module(inc)
            if m in mods and m != module(f):
                graph[module(f)].add(m)
    return graph


def py_graph(package):
    """{module: {modules of the package it imports}} of a Python package."""
    d = os.path.join(ROOT, package)
    name = os.path.basename(package)
    mods = {module(f) for f in os.listdir(d) if f.endswith(".py")}
    graph = {m: set() for m in mods}
    for m in mods:
        tree = ast.parse(open(os.path.join(d, m + ".py")).read())
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:
                    targets.append(node.module.split(".")[0])
                elif node.level == 1:
                    targets += [a.name for a in node.names]
                elif node.module and node.module.startswith(name + "."):
                    targets.append(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                targets += [a.name.split(".")[1] for a in node.names
                            if a.name.startswith(name + ".")]
            graph[m] |= {t for t in targets if t in mods and t != m}
    graph.pop("__init__", None)
    for deps in graph.values():
        deps.discard("__init__")
    return graph


def cycle(graph):
    """One cycle of the graph as a list of nodes, or None."""
    state = {}

    def visit(n, path):
        state[n] = 1
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return path[path.index(m):] + [m]
            if not state.get(m):
                found = visit(m, path + [m])
                if found:
                    return found
        state[n] = 2
        return None

    for n in sorted(graph):
        if not state.get(n):
            found = visit(n, [n])
            if found:
                return found
    return None


def test_a_cycle_is_found():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


@pytest.mark.parametrize("folder", C_FOLDERS)
def test_c_modules_include_each_other_one_way(folder):
    graph = c_graph(folder)
    assert len(graph) > 1
    found = cycle(graph)
    assert not found, f"{folder}: modules include each other: " + " -> ".join(found)


def test_the_tools_package_imports_one_way():
    graph = py_graph("tools/accio")
    assert {"cli", "config", "qemu", "qmp"} <= set(graph)
    assert graph["cli"], "the command line uses the package"
    found = cycle(graph)
    assert not found, "tools/accio imports in a circle: " + " -> ".join(found)
    assert not graph["config"], "the machine's configuration imports nothing of the package"


def test_the_qemu_nic_and_uncore_meet_only_at_the_port():
    graph = c_graph("hardware/qemu/accio")
    assert "accio_uncore_dev" not in graph["accio_nic"]
    assert "accio_nic" not in graph["accio_uncore_dev"]
    assert "accio_port" in graph["accio_nic"] and "accio_port" in graph["accio_uncore_dev"]
    assert not graph["accio_port"] - {"accio_contract"}, "the port knows neither device"
