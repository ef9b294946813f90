"""One-way layers: no module imports a higher layer, and no two packages import each other.

Every import of every module of the package is read with ``ast``: at module level and inside functions,
classes, ``try`` and ``if TYPE_CHECKING:`` blocks alike (a deferred or type-only import is still a
dependency: none is exempt), ``import fingerprint_indexer.x``, ``from fingerprint_indexer.x import y``,
relative imports, and ``importlib.import_module`` of a constant name or of an f-string whose start names
the module. Each top-level module or package of ``fingerprint_indexer`` has one rank in :data:`LAYERS`;
an import may go to the same rank or a lower one, never a higher one. Imports within a rank must not form
a cycle between packages. docs/architecture.md describes the order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "fingerprint_indexer"
ROOT = Path(__file__).resolve().parents[1]

#: Top-level module or package of fingerprint_indexer -> layer rank, low to high. ``__init__`` is the
#: package's own ``__init__.py``. A new top-level module must be given a rank here.
LAYERS: dict[str, int] = {
    # generic helpers and shared input types
    "__init__": 0,
    "errors": 0,
    "collector": 0,
    "env": 1,
    "calibration": 1,
    "documents": 1,
    "io": 1,
    # the fingerprint and what compares fingerprints
    "text": 2,
    "fingerprint": 3,  # winnowing (copy marks) included
    "verification": 4,
    # the shared record and match types every store and the engine speak
    "records": 5,
    # the Elasticsearch adapter: server dialects, connection, errors, document fields, mapping, scans
    "es": 6,
    # where records and fingerprints are kept and found
    "index": 7,
    "store": 7,
    # what reads stores
    "copies": 8,
    "cluster": 8,
    "engine": 9,
    # jobs
    "elastic": 10,
    "pipeline": 10,
    # front ends
    "sidecar": 11,
    "cli": 11,
    "scrapy": 11,
}


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` (a module) imports ``target`` (a module) at ``path``:``line``."""

    source: str
    target: str
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source} imports {self.target}"


def modules(root: Path, package: str) -> dict[str, Path]:
    """Dotted name -> file of every module of ``package`` under ``root``."""
    out = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def top(module: str) -> str:
    """The top-level module or package ``module`` belongs to (``__init__`` for the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _dynamic_name(node: ast.expr, here: str) -> str | None:
    """The module a constant or f-string argument of ``import_module`` names, as far as it is known."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        if isinstance(first, ast.FormattedValue) and isinstance(first.value, ast.Name) \
                and first.value.id == "__name__":
            return here
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            return first.value.rsplit(".", 1)[0]  # the part before the formatted name
    return None


def imports(root: Path, package: str) -> Iterator[Edge]:
    """Every import of a module of ``package`` by a module of ``package``."""
    known = modules(root, package)
    for module, path in known.items():
        is_package = path.name == "__init__.py"
        here_pkg = module if is_package else module.rpartition(".")[0]
        rel = path.relative_to(root).as_posix()
        found: list[Edge] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = here_pkg.split(".")
                    base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                # ``from a import b`` imports module ``a.b`` when there is one, else a name of ``a``
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            elif isinstance(node, ast.Call) and node.args and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name) and node.func.id in ("import_module", "__import__"))):
                name = _dynamic_name(node.args[0], module)
                targets = [name] if name else []
            found += [Edge(module, target, rel, node.lineno) for target in targets
                      if target == package or target.startswith(package + ".")]
        yield from sorted(set(found), key=lambda e: (e.line, e.target))


def unranked(edges: list[Edge], known: dict[str, Path], layers: dict[str, int]) -> list[str]:
    """Top-level modules with no rank in ``layers``."""
    tops = {top(m) for m in known} | {top(e.target) for e in edges}
    return sorted(t for t in tops if t not in layers)


def upward(edges: list[Edge], layers: dict[str, int]) -> list[str]:
    """Imports of a higher layer, as ``file:line: ...`` lines."""
    out = []
    for e in edges:
        src, dst = top(e.source), top(e.target)
        if src in layers and dst in layers and layers[dst] > layers[src]:
            out.append(f"{e} ({src} is layer {layers[src]}, {dst} layer {layers[dst]})")
    return out


def cycles(edges: list[Edge]) -> list[list[str]]:
    """Import cycles between top-level packages: for each set of packages that import each other
    (a strongly connected component of more than one), every import within it, as ``file:line: ...``."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        src, dst = top(e.source), top(e.target)
        graph.setdefault(src, set())
        graph.setdefault(dst, set())
        if src != dst:
            graph[src].add(dst)
    # Tarjan's algorithm, iterative
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    comp.add(member)
                    if member == node:
                        break
                if len(comp) > 1:
                    components.append(comp)
    out = []
    for comp in components:
        pairs: dict[tuple[str, str], list[Edge]] = {}
        for e in edges:
            src, dst = top(e.source), top(e.target)
            if src != dst and src in comp and dst in comp:
                pairs.setdefault((src, dst), []).append(e)
        out.append([f"cycle between {', '.join(sorted(comp))}:"]
                   + [f"{src} -> {dst}: " + ", ".join(f"{e.path}:{e.line}" for e in found)
                      for (src, dst), found in sorted(pairs.items())])
    return out


@pytest.fixture(scope="module")
def edges() -> list[Edge]:
    return list(imports(ROOT, PACKAGE))


def test_every_top_level_module_has_a_layer(edges: list[Edge]) -> None:
    missing = unranked(edges, modules(ROOT, PACKAGE), LAYERS)
    assert not missing, f"give these a rank in LAYERS (tests/test_layers.py): {missing}"


def test_no_module_imports_a_higher_layer(edges: list[Edge]) -> None:
    found = upward(edges, LAYERS)
    assert not found, "imports of a higher layer:\n" + "\n".join(found)


def test_no_import_cycle_between_packages(edges: list[Edge]) -> None:
    found = cycles(edges)
    assert not found, "\n".join("\n  ".join(c) for c in found)


# ------------------------------------------------------------------ the checker itself


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "pkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_checker_sees_every_form_of_import(tmp_path: Path) -> None:
    root = _tree(tmp_path, {
        "__init__.py": "",
        "low/__init__.py": "",
        "low/a.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg.high import h\n"       # type-only
            "def f():\n    import pkg.high.h\n"                      # deferred
            "def g():\n    from ..high import h\n"                   # relative, deferred
            "import importlib\nimportlib.import_module('pkg.high.h')\n"
            "from pkg import high\n"                                 # a package by name
            "from . import b\n"                                      # within its package
        ),
        "low/b.py": "",
        "high/__init__.py": "",
        "high/h.py": "from pkg.low.a import f\n",
    })
    found = list(imports(root, "pkg"))
    assert {(e.path, e.line, e.target) for e in found} == {
        ("pkg/low/a.py", 3, "pkg.high.h"),
        ("pkg/low/a.py", 5, "pkg.high.h"),
        ("pkg/low/a.py", 7, "pkg.high.h"),
        ("pkg/low/a.py", 9, "pkg.high.h"),
        ("pkg/low/a.py", 10, "pkg.high"),
        ("pkg/low/a.py", 11, "pkg.low.b"),
        ("pkg/high/h.py", 1, "pkg.low.a"),
    }
    layers = {"__init__": 0, "low": 1, "high": 2}
    assert [line.split(":")[1] for line in upward(found, layers)] == ["3", "5", "7", "9", "10"]
    (cycle,) = cycles(found)
    assert cycle[0] == "cycle between high, low:"
    assert cycle[1:] == ["high -> low: pkg/high/h.py:1",
                         "low -> high: pkg/low/a.py:3, pkg/low/a.py:5, pkg/low/a.py:7, pkg/low/a.py:9, "
                         "pkg/low/a.py:10"]
    assert unranked(found, modules(root, "pkg"), {"__init__": 0, "low": 1}) == ["high"]
