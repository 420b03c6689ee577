"""The house rules (issue 31): no function over 60 statements, no file over 600 lines, no import circle.

A statement is an ``ast.stmt`` in a function's body, counted recursively (an ``if`` and every statement inside it);
a nested function or class counts as one statement there and is measured on its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_STATEMENTS = 60
MAX_LINES = 600
SOURCES = ("mdpviz", "tests", "scripts", "app_pages", "app.py")


def python_files() -> Iterator[Path]:
    """Every Python file of the project (the library, its tests, scripts and pages)."""
    for name in SOURCES:
        path = ROOT / name
        yield from ([path] if path.is_file() else sorted(path.rglob("*.py")))


def statements(body: list[ast.stmt]) -> int:
    """Statements in ``body``, recursively; a nested def or class counts once."""
    n = 0
    for s in body:
        n += 1
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            n += statements(getattr(s, field, []))
        for handler in getattr(s, "handlers", []):
            n += statements(handler.body)
        for case in getattr(s, "cases", []):
            n += statements(case.body)
    return n


def test_no_function_has_more_than_60_statements() -> None:
    long = []
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = statements(node.body)
                if n > MAX_STATEMENTS:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {n} statements")
    assert not long, "\n".join(long)


def test_no_file_has_more_than_600_lines() -> None:
    big = [f"{p.relative_to(ROOT)}: {n} lines" for p in python_files()
           if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES]
    assert not big, "\n".join(big)


def local_imports(node: ast.AST, inside: bool = False) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports nested inside a function (at any depth), each once."""
    for child in ast.iter_child_nodes(node):
        if inside and isinstance(child, (ast.Import, ast.ImportFrom)):
            yield child
        yield from local_imports(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))


def test_imports_inside_functions_say_why() -> None:
    """An import inside a function (an optional or heavy dependency, a name a test monkeypatches, ...) gives its
    reason in a ``# local:`` comment on its line or the line above; every other import is at the top of its module."""
    silent = []
    for path in sorted((ROOT / "mdpviz").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in local_imports(ast.parse(text)):
            said = lines[node.lineno - 1] + (lines[node.lineno - 2] if node.lineno > 1 else "")
            if "# local:" not in said:
                module = ("." * node.level + (node.module or "") if isinstance(node, ast.ImportFrom)
                          else ", ".join(alias.name for alias in node.names))
                silent.append(f"{path.relative_to(ROOT)}:{node.lineno} {module}")
    assert not silent, "\n".join(silent)


def module_imports() -> dict[str, set[str]]:
    """For each module of the library, the library modules it imports (at the top or inside a function)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "mdpviz").rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        package = name if is_package else name.rpartition(".")[0]
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:  # `from . import x` imports the module x
                    targets.add(f"{target}.{alias.name}")
                targets.add(target)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = targets
    return {m: {t for t in ts if t in graph and t != m} for m, ts in graph.items()}


def test_no_module_imports_itself_through_others() -> None:
    """No circle of imports between modules (a module importing its own package's ``__init__`` is not counted: that
    is the package's face handing names on)."""
    graph = module_imports()
    circles = []
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        """Depth-first search; records each circle found."""
        state[module] = 1
        for target in sorted(graph[module]):
            if module.startswith(target + "."):  # a module importing its own package's face
                continue
            if state.get(target) == 1:
                circles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in state:
                visit(target, [*path, target])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert not circles, "\n".join(circles)
