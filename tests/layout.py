"""The shape of the code base: module-level import circles, file names, long functions.

    python -m tests.layout          # prints every import circle (strongly connected component) and long function

Imports are read from the source (no module is executed): those at module level count, imports inside
functions (deferred on purpose) and under ``if TYPE_CHECKING:`` do not. ``from kgraph import ops`` names the
module ``kgraph.ops``; ``from kgraph.ops import relu`` the module ``kgraph.ops`` too.
"""
from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("kgraph", "export", "serve")


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the packages, by dotted name."""
    return {module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))}


def _module_level(tree: ast.Module):
    """Import statements executed when the module is imported."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            test = ast.unparse(node.test)
            if "TYPE_CHECKING" not in test:
                stack.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend(node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body])


def imports(known: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports at module level (a package's __init__ included)."""
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = set()
        for node in _module_level(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in known else node.module)
        graph[name] = {t for t in targets if t in known and t != name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
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
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=len, reverse=True)


def long_functions(limit: int = 80) -> list[tuple[str, str, int]]:
    """(module, function, lines) of every function longer than LIMIT lines, its docstring not counted."""
    out = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if ast.get_docstring(node) is not None:
                    first = node.body[0]
                    length -= first.end_lineno - first.lineno + 1
                if length > limit:
                    out.append((name, node.name, length))
    return sorted(out, key=lambda item: -item[2])


def main() -> int:
    found = circles(imports(modules()))
    print(f"{len(found)} import circle(s) at module level")
    for component in found:
        print(f"- {len(component)} modules: {', '.join(component)}")
    functions = long_functions()
    print(f"{len(functions)} function(s) over 80 lines")
    for module, function, length in functions:
        print(f"- {module}.{function}: {length} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
