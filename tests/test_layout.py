"""The package's architecture, checked: the README's layout table matches the tree, and no module of teachllm
imports another that imports it back (directly or around a loop), at the top of a file or inside a function.

Every import of a teachllm module is read from the source (the `ast` module), not run: a function-level import
that dodges a cycle at import time is still a cycle in the design, so it counts.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "teachllm"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def resolve(name: str) -> str | None:
    """The teachllm module a dotted name refers to (a name inside a module counts as the module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(module: str) -> set[str]:
    """The teachllm modules `module` imports anywhere in its source. `from . import x` and `from .. import x`
    are edges to the module x, not to the package around it."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {resolve(a.name) for a in node.names if a.name.startswith("teachllm")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
            elif node.module and node.module.startswith("teachllm"):
                target = node.module
            else:
                continue
            for alias in node.names:
                found.add(resolve(f"{target}.{alias.name}") if f"{target}.{alias.name}" in MODULES else resolve(target))
    return {m for m in found if m and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def cycles() -> list[list[str]]:
    """Each import cycle once, as the list of modules around it (Tarjan's strongly connected components)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in GRAPH:
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_imports_it_should():
    assert "teachllm.inputs" in GRAPH["teachllm.sampling"]  # from . import inputs
    assert "teachllm.params" in GRAPH["teachllm.inputs"]  # from .params import SamplingParams
    assert "teachllm.fastpath.kernels" in GRAPH["teachllm.lm"]  # from .fastpath import fused, kernels
    assert "teachllm.checkpoints.convert" in GRAPH["teachllm.fastpath.native"]  # inside a function


def test_no_import_cycles():
    assert cycles() == []


def test_a_planted_cycle_is_found(monkeypatch):
    monkeypatch.setitem(GRAPH, "teachllm.params", GRAPH["teachllm.params"] | {"teachllm.sampling"})
    assert ["teachllm.inputs", "teachllm.params", "teachllm.sampling"] in cycles()


def test_the_reading_path_imports_nothing_from_the_subpackages_but_the_fast_path_and_the_checkpoints():
    """The top level is the lesson and its edge: it may switch on the fast path and read checkpoints (lm.py,
    tl.load), never the course's tooling or the benchmarks."""
    top = [m for m, path in MODULES.items() if path.parent == PACKAGE]  # teachllm/*.py, the package itself too
    for m in top:
        bad = {d for d in GRAPH[m] if d.startswith(("teachllm.course", "teachllm.bench"))}
        assert not bad, f"{m} imports {bad}"


LAYOUT = ROOT / "README.md"


def layout_paths() -> list[str]:
    text = LAYOUT.read_text(encoding="utf-8")
    table = text[text.index("## Layout"):text.index("## How it is checked")]
    paths = []
    for row in re.findall(r"^\| (.+?) \|", table, flags=re.M):
        named = re.findall(r"`([^`]+)`", row)
        folder = ""
        for name in named:
            if "/" in name:
                folder = name.rsplit("/", 1)[0] + "/" if not name.endswith("/") else name
                paths.append(name)
            elif name.endswith((".py", ".c", ".h", ".sh")):
                paths.append(folder + name)
    return paths


def test_every_path_in_the_layout_table_exists():
    paths = layout_paths()
    assert len(paths) > 20
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"README's layout table names paths that do not exist: {missing}"


def test_every_module_and_subpackage_of_teachllm_is_in_the_layout_table():
    paths = set(layout_paths())
    top = [p for p in PACKAGE.iterdir() if (p.suffix == ".py" and p.name != "__init__.py")
           or (p.is_dir() and (p / "__init__.py").is_file())]
    unnamed = [p.name for p in top if
               f"teachllm/{p.name}" + ("/" if p.is_dir() else "") not in paths]
    assert not unnamed, f"teachllm/ holds {unnamed}, which the README's layout table does not name"


@pytest.mark.parametrize("package", sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()))
def test_each_subpackage_says_what_it_is_for(package):
    doc = ast.get_docstring(ast.parse((PACKAGE / package / "__init__.py").read_text(encoding="utf-8")))
    assert doc and len(doc.split()) >= 12, f"teachllm/{package}/__init__.py has no docstring saying what it is for"
