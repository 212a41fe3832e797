"""The package's layers point down, in the order ARCHITECTURE.md draws them; the core never imports
a front end; no cycle.

What these tests count, precisely:

* A **module** is each ``.py`` file under ``langchain_promptstrat/``, named by its dotted
  path; a package is its ``__init__.py``.
* An **import** is every ``import`` or ``from ... import`` statement that names a module of
  the package, wherever it stands: at the top, under ``if TYPE_CHECKING:``, in a ``try``, a
  class body or a function (a "lazy" import). ``from P import x`` imports the module
  ``P.x`` when that is a module, else ``P``; relative imports are resolved. A call
  ``importlib.import_module("langchain_promptstrat....")`` with a literal name counts too.
  A ``"langchain_promptstrat.module:Attribute"`` string (the registry's table of built-in
  strategies, each imported on first use, like an entry point) is a **string-loaded** import:
  it joins the cycles (a circle through a name is still a circle) but not the layer order,
  since the registry names the strategies it resolves.
* An import is **module-level** when it does not stand inside a function body: it runs (or,
  under ``TYPE_CHECKING``, is followed by the type checkers) when the module is imported.
* The **layers** are read from the fenced block under "## Layers" in ARCHITECTURE.md, top
  to bottom: a line starting at the margin opens a layer (its name is the text before the
  first run of two spaces), indented lines continue it, and the paths it names are the words
  ending in ``.py`` or ``/`` (``strategies/<name>.py`` is any module directly in
  ``strategies/``). A module is in the layer of the most specific path that matches it.
* The **front ends** are the top layer: the package's ``__init__`` (the public facade, which
  re-exports every layer lazily), ``adapters`` and the command line ``cli``. Everything
  else is the **core**, down to ``defaults``, the leaf of constants the core reads and the
  CLI shows (it imports nothing, which is checked here).

The rules: every module is in a layer and every path of the diagram names a module; no
import, at any place, points to a layer above its module's; no core module imports a front
end; the module-level imports form no cycle; and even counting every lazy and string-loaded
import there is no cycle, so no lazy import exists to dodge one (the ones left keep ``--help``
fast or an optional dependency optional) and no name does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

PACKAGE = "langchain_promptstrat"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / PACKAGE
ARCHITECTURE = PACKAGE_DIR.parent / "ARCHITECTURE.md"


class Import(NamedTuple):
    """One import statement of a package module: its target module, where it stands, and its
    line."""

    target: str
    module_level: bool
    line: int
    by_name: bool = False
    """Loaded from a ``"module:Attribute"`` string (never module-level)."""


def module_files(package_dir: Path = PACKAGE_DIR) -> dict[str, Path]:
    """Return every module of the package by dotted name (a package under its own name)."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = [PACKAGE, *path.relative_to(package_dir).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _owning_module(name: str, modules: Iterable[str]) -> str | None:
    """Return the package module ``name`` refers to: itself, or the nearest package above it."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


_LOADED_BY_NAME = re.compile(rf"({PACKAGE}(?:\.\w+)+):\w+")
"""A ``"module:Attribute"`` string naming something of the package to import on first use."""


def _walk(node: ast.AST, in_function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Yield every node below ``node`` with whether it stands inside a function body."""
    for child in ast.iter_child_nodes(node):
        yield child, in_function
        inner = in_function or isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        )
        yield from _walk(child, inner)


def imports_of(name: str, source: str, modules: Iterable[str]) -> list[Import]:
    """Return the package imports of module ``name`` (its ``source``), as defined in the module
    docstring."""
    modules = set(modules)
    is_package = name == PACKAGE or any(m.startswith(name + ".") for m in modules)
    found = []
    for node, in_function in _walk(ast.parse(source)):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the module's package, one level up per extra dot
                anchor = name if is_package else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    anchor = anchor.rpartition(".")[0]
                base = f"{anchor}.{base}" if base else anchor
            targets = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                for alias in node.names
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, (ast.Attribute, ast.Name))
            and (node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id)
            == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = _LOADED_BY_NAME.fullmatch(node.value)
            owner = _owning_module(named.group(1), modules) if named else None
            if owner is not None:
                found.append(Import(owner, False, node.lineno, by_name=True))
        for target in dict.fromkeys(targets):  # `from m import a, b` is one import of m
            if target == PACKAGE or target.startswith(PACKAGE + "."):
                owner = _owning_module(target, modules)
                if owner is not None:
                    found.append(Import(owner, not in_function, node.lineno))
    return found


def all_imports(package_dir: Path = PACKAGE_DIR) -> dict[str, list[Import]]:
    """Return the package imports of every module of the package."""
    modules = module_files(package_dir)
    return {
        name: imports_of(name, path.read_text(encoding="utf-8"), modules)
        for name, path in modules.items()
    }


class Layer(NamedTuple):
    """One layer of the diagram: its name and the paths it names (relative to the package)."""

    name: str
    paths: tuple[str, ...]


_PATH = re.compile(r"(?<![\w/.<>])([\w<>]+(?:/[\w<>]+)*(?:\.py|/))(?![\w/])")


def parse_layers(markdown: str) -> list[Layer]:
    """Return the layers of the fenced block under ``## Layers`` in ``markdown``, top first."""
    section = markdown.split("\n## Layers", 1)[1]
    block = section.split("```", 2)[1].split("\n", 1)[1]
    layers: list[Layer] = []
    for line in block.splitlines():
        if not line.strip() or set(line.strip()) <= {"│"}:
            continue
        rest = line
        if not line[0].isspace():
            name = re.split(r"\s{2,}", line, maxsplit=1)[0]
            layers.append(Layer(name, ()))
            rest = line[len(name) :]
        layers[-1] = Layer(layers[-1].name, layers[-1].paths + tuple(_PATH.findall(rest)))
    return layers


def _match_length(path: str, file: str) -> int:
    """Return how specific diagram ``path`` is for package file ``file`` (a relative ``.py`` path),
    0 if it does not match."""
    if path.endswith("/"):
        return len(path) if file.startswith(path) else 0
    if "<name>" in path:
        folder = path.rpartition("/")[0] + "/"
        return len(folder) if file.startswith(folder) and "/" not in file[len(folder) :] else 0
    return len(path) + 1 if file == path else 0  # an exact file beats any folder holding it


def layer_of_file(layers: list[Layer], file: str) -> int | None:
    """Return the index (0 = top) of the layer whose most specific path matches ``file``, or
    None."""
    best, best_length = None, 0
    for index, layer in enumerate(layers):
        for path in layer.paths:
            length = _match_length(path, file)
            if length > best_length:
                best, best_length = index, length
    return best


LAYERS = parse_layers(ARCHITECTURE.read_text(encoding="utf-8"))


MODULES = module_files()


def layer_of_module(module: str, layers: list[Layer] = LAYERS) -> int | None:
    """Return the layer index of package module ``module`` (dotted), or None when the diagram places
    it nowhere.

    A module that does not exist (in the tests of the checks themselves) is placed by the
    file it would be: ``P.adapters.runnable`` as ``adapters/runnable.py``.
    """
    path = MODULES.get(module)
    relative = (
        module[len(PACKAGE) + 1 :].replace(".", "/") + ".py" if module != PACKAGE else "__init__.py"
    )
    return layer_of_file(layers, path.relative_to(PACKAGE_DIR).as_posix() if path else relative)


def is_front_end(module: str) -> bool:
    """Return whether ``module`` is a front end (the top layer: facade, adapters, CLI); every other
    module is core."""
    return layer_of_module(module) == 0


def upward_imports(imports: dict[str, list[Import]], layer_of: dict[str, int | None]) -> list[str]:
    """Return every import of ``imports`` that points to a layer above its module's, as ``module ->
    target (line)``."""
    found = []
    for module, targets in imports.items():
        for i in targets:
            if i.by_name:
                continue
            here, there = layer_of.get(module), layer_of.get(i.target)
            if here is not None and there is not None and there < here:
                found.append(f"{module} -> {i.target} (line {i.line})")
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """Return one cycle of ``graph`` as a path that ends where it starts, or None when it has
    none."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)) is not None:
            return cycle
    return None


def graph_of(imports: dict[str, list[Import]], *, module_level_only: bool) -> dict[str, set[str]]:
    """Return module -> the modules it imports (module-level imports only, or every import)."""
    return {
        module: {
            i.target
            for i in found
            if i.target != module and (i.module_level or not module_level_only)
        }
        for module, found in imports.items()
    }


IMPORTS = all_imports()


# --------------------------------------------------------------------------- the rules


def test_every_module_is_in_one_layer_of_the_diagram():
    """ARCHITECTURE.md's layer diagram places every module of the package: a new module must be
    drawn before it lands."""
    assert [m for m in MODULES if layer_of_module(m) is None] == []


def test_every_path_of_the_diagram_names_a_module_or_package():
    """A path drawn in the layer diagram exists, so the diagram cannot drift from the tree
    unnoticed."""
    files = [p.relative_to(PACKAGE_DIR).as_posix() for p in module_files().values()]
    assert [
        path
        for layer in LAYERS
        for path in layer.paths
        if not any(_match_length(path, f) for f in files)
    ] == []


def test_no_import_points_to_a_layer_above():
    """Every import, lazy and type-checking ones included, goes to the module's own layer or one
    below, as drawn."""
    layer_of = {module: layer_of_module(module) for module in MODULES}
    assert upward_imports(IMPORTS, layer_of) == []


def test_no_core_module_imports_a_front_end():
    """No core module imports the facade, an adapter or the CLI, not even lazily or for type
    checking."""
    upward = [
        f"{module} -> {i.target} (line {i.line})"
        for module, found in IMPORTS.items()
        if not is_front_end(module)
        for i in found
        if is_front_end(i.target)
    ]
    assert upward == []


def test_module_level_imports_form_no_cycle():
    """Following the imports each module runs (or type-checks) when loaded never leads back to
    it."""
    assert find_cycle(graph_of(IMPORTS, module_level_only=True)) is None


def test_no_lazy_import_dodges_a_cycle():
    """Even counting every import inside a function and every module loaded by name there is no
    cycle: a lazy import or a ``"module:Class"`` string is never a cycle's workaround."""
    assert find_cycle(graph_of(IMPORTS, module_level_only=False)) is None


def test_the_core_imports_its_own_modules_at_the_top():
    """A core module imports every module of the package at module level: lazy imports are for the
    CLI's start-up and optional packages only."""
    lazy = [
        f"{module} -> {i.target} (line {i.line})"
        for module, found in IMPORTS.items()
        if not is_front_end(module) and module != PACKAGE
        for i in found
        if not i.module_level and not i.by_name
    ]
    assert lazy == []


def test_defaults_imports_nothing_of_the_package():
    """defaults, the constants the core reads and the CLI's help shows, is a leaf: it imports no
    module of the package."""
    assert IMPORTS[f"{PACKAGE}.defaults"] == []


def test_every_module_opens_with_a_docstring():
    """Each module opens with a docstring saying what it holds (and what it must not do)."""
    missing = [
        name
        for name, path in module_files().items()
        if ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) is None
    ]
    assert missing == []


def test_no_public_function_takes_a_private_keyword():
    """A public function or method never takes a ``_name`` parameter: a private switch (a memo, a
    comparison flag) on a public signature lets callers depend on the implementation, and lets a
    strategy call itself with it."""
    found = []
    for name, path in module_files().items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        public_classes = [
            c for c in tree.body if isinstance(c, ast.ClassDef) and not c.name.startswith("_")
        ]
        for node in [*tree.body, *(item for c in public_classes for item in c.body)]:
            if isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)
            ) and not node.name.startswith("_"):
                args = node.args
                every = [
                    *args.posonlyargs,
                    *args.args,
                    *args.kwonlyargs,
                    *filter(None, (args.vararg, args.kwarg)),
                ]
                found += [f"{name}.{node.name}({a.arg})" for a in every if a.arg.startswith("_")]
    assert found == []


# --------------------------------------------------------------------------- strategies/: a module
# per strategy


def strategy_modules() -> tuple[list[str], list[str]]:
    """Return the modules directly in ``strategies/`` and the modules of its subpackages
    (``__init__`` files aside)."""
    strategies_dir = PACKAGE_DIR / "strategies"
    direct, nested = [], []
    for name, path in module_files().items():
        if path.name == "__init__.py" or strategies_dir not in path.parents:
            continue
        (direct if path.parent == strategies_dir else nested).append(name)
    return direct, nested


def strategies_defined_in(module_name: str) -> list[str]:
    """Return the public, concrete ``PromptStrategy`` subclasses ``module_name`` defines (not those
    it imports)."""
    import importlib
    import inspect

    from langchain_promptstrat.strategy import PromptStrategy

    module = importlib.import_module(module_name)
    return sorted(
        name
        for name, obj in vars(module).items()
        if inspect.isclass(obj)
        and issubclass(obj, PromptStrategy)
        and obj.__module__ == module_name
        and not name.startswith("_")
        and not inspect.isabstract(obj)
    )


def test_each_module_directly_in_strategies_is_a_strategy():
    """A module directly in ``strategies/`` defines a strategy: shared machinery never poses as
    one."""
    direct, _ = strategy_modules()
    assert f"{PACKAGE}.strategies.epoch" in direct and f"{PACKAGE}.strategies.ladder" in direct
    assert [m for m in direct if not strategies_defined_in(m)] == []


def test_the_subpackages_of_strategies_define_no_strategy():
    """The machinery subpackage (``epoch_machinery``) holds what strategies share and defines
    none."""
    _, nested = strategy_modules()
    assert f"{PACKAGE}.strategies.epoch_machinery.frozen_region" in nested
    assert {m: strategies_defined_in(m) for m in nested if strategies_defined_in(m)} == {}


def test_every_built_in_strategy_lives_directly_in_strategies():
    """The registry's built-in table points at modules directly in ``strategies/``, never into a
    machinery subpackage."""
    from langchain_promptstrat.registry import BUILTIN_STRATEGIES

    direct, _ = strategy_modules()
    assert [
        target for target in BUILTIN_STRATEGIES.values() if target.partition(":")[0] not in direct
    ] == []


# --------------------------------------------------------------------------- the checks can fail


def test_the_layers_are_the_documented_ones():
    """The diagram reads as drawn: the facade, adapters, pickup and CLI on top, the registry below
    the strategies that resolve names in it."""
    names = [layer.name for layer in LAYERS]
    assert names == ["front ends", "measuring", "strategies", "base", "inbox", "foundations"]
    expected = {
        "": "front ends",
        "adapters.langgraph": "front ends",
        "cli.entry": "front ends",
        "pickup": "front ends",
        "simulate.output": "measuring",
        "registry": "base",
        "strategies": "strategies",
        "strategies.ladder": "strategies",
        "strategies.epoch_machinery.frozen_region": "strategies",
        "strategy": "base",
        "inbox.delivery": "inbox",
        "messages.pairs": "foundations",
        "defaults": "foundations",
        "testing.scripted_model": "foundations",
    }
    placed = {name: layer_of_module(f"{PACKAGE}.{name}".rstrip(".")) for name in expected}
    assert {name: names[i] if i is not None else None for name, i in placed.items()} == expected


def test_an_import_that_points_up_is_caught():
    """A strategy importing the simulation (which replays strategies) is reported; one importing the
    registry below it is not."""
    layer_of = {
        f"{PACKAGE}.{m}": layer_of_module(f"{PACKAGE}.{m}")
        for m in ("strategies.ladder", "simulate", "registry")
    }
    imports = {
        f"{PACKAGE}.strategies.ladder": [
            Import(f"{PACKAGE}.simulate", True, 59),
            Import(f"{PACKAGE}.registry", True, 60),
        ],
    }
    assert upward_imports(imports, layer_of) == [
        f"{PACKAGE}.strategies.ladder -> {PACKAGE}.simulate (line 59)"
    ]


def test_the_diagram_reader_takes_paths_continuations_and_the_most_specific_match():
    """parse_layers reads layer names, indented continuation lines and path words; the longest
    matching path wins."""
    markdown = (
        "# x\n\n## Layers\n\n```\ntop   cli/ (a note) · __init__.py\n         │\n"
        "mid   strategies/<name>.py\n      strategies/machinery/ · not a path\nlow   "
        "messages/\n```\n"
    )
    layers = parse_layers(markdown)
    assert layers == [
        Layer("top", ("cli/", "__init__.py")),
        Layer("mid", ("strategies/<name>.py", "strategies/machinery/")),
        Layer("low", ("messages/",)),
    ]
    assert [
        layer_of_file(layers, f)
        for f in ("cli/entry.py", "strategies/a.py", "strategies/machinery/b.py", "x.py")
    ] == [0, 1, 1, None]
    assert (
        layer_of_file(layers, "__init__.py") == 0
        and layer_of_file(layers, "messages/__init__.py") == 2
    )


def test_the_import_reader_sees_lazy_type_checking_relative_and_dynamic_imports():
    """An adapter imported in a function, under TYPE_CHECKING, relatively or by import_module is
    found, with its place."""
    modules = {
        f"{PACKAGE}.strategies.x",
        f"{PACKAGE}.strategies",
        f"{PACKAGE}.adapters",
        f"{PACKAGE}.adapters.langgraph",
        PACKAGE,
    }
    source = (
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "if TYPE_CHECKING:\n"
        "    from langchain_promptstrat.adapters.langgraph import GraphHook\n"
        "def hook():\n"
        "    from ..adapters import langgraph\n"
        "    return importlib.import_module('langchain_promptstrat.adapters.langgraph')\n"
        "class A:\n"
        "    import langchain_promptstrat.adapters\n"
    )
    found = sorted(imports_of(f"{PACKAGE}.strategies.x", source, modules), key=lambda i: i.line)
    assert found == [
        Import(f"{PACKAGE}.adapters.langgraph", True, 4),
        Import(f"{PACKAGE}.adapters.langgraph", False, 6),
        Import(f"{PACKAGE}.adapters.langgraph", False, 7),
        Import(f"{PACKAGE}.adapters", True, 9),
    ]


@pytest.mark.parametrize(
    ("graph", "cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"d"}}, ["d", "d"]),
    ],
)
def test_the_cycle_finder_finds_a_cycle_exactly_when_there_is_one(graph, cycle):
    """find_cycle returns a closed path through the graph when it has a cycle and None when it has
    none."""
    assert find_cycle(graph) == cycle


def test_the_old_circle_through_the_runnable_module_would_be_caught():
    """The five-file circle the issue measured (a strategy -> adapters.runnable ->
    adapters.langgraph -> registry -> strategy) fails both rules."""
    imports = {
        f"{PACKAGE}.strategies.inbox": [Import(f"{PACKAGE}.adapters.runnable", True, 1)],
        f"{PACKAGE}.adapters.runnable": [Import(f"{PACKAGE}.adapters.langgraph", False, 2)],
        f"{PACKAGE}.adapters.langgraph": [Import(f"{PACKAGE}.registry", True, 3)],
        f"{PACKAGE}.registry": [Import(f"{PACKAGE}.strategies.inbox", True, 4)],
    }
    assert [
        m
        for m, found in imports.items()
        if not is_front_end(m) and any(is_front_end(i.target) for i in found)
    ]
    assert find_cycle(graph_of(imports, module_level_only=False)) is not None
    assert (
        find_cycle(graph_of(imports, module_level_only=True)) is None
    )  # it hid behind a lazy import


def test_a_module_named_by_a_string_is_an_edge_of_the_cycles():
    """A ``"module:Class"`` string is read as an import of that module: the circle the registry
    closed through its table of built-ins (registry -> "tool_results:ToolResults" -> the ladder,
    which resolved rung names through the registry) is found."""
    modules = [f"{PACKAGE}.registry", f"{PACKAGE}.strategies.tool_results"]
    source = f'TABLE = {{"tool_results": "{PACKAGE}.strategies.tool_results:ToolResults"}}\n'
    (edge,) = imports_of(f"{PACKAGE}.registry", source, modules)
    assert edge == Import(f"{PACKAGE}.strategies.tool_results", False, 1, by_name=True)
    imports = {
        f"{PACKAGE}.registry": [edge],
        f"{PACKAGE}.strategies.tool_results": [Import(f"{PACKAGE}.strategies.ladder", True, 2)],
        f"{PACKAGE}.strategies.ladder": [Import(f"{PACKAGE}.registry", True, 3)],
    }
    assert find_cycle(graph_of(imports, module_level_only=False)) is not None


# --------------------------------------------------------------------------- the facade: each
# public name once


def test_the_facade_lists_each_public_name_once_and_each_resolves_to_its_module():
    """__init__'s TYPE_CHECKING block names each public name once, as ``name as name`` (exported for
    mypy and pyright), from the module its run-time table ``_PUBLIC`` gives: the checkers and
    ``__getattr__`` see the same names; ``__all__`` is exactly those names, and each is the object
    its module defines."""
    import importlib

    import langchain_promptstrat

    block = next(
        node
        for node in ast.parse((PACKAGE_DIR / "__init__.py").read_text(encoding="utf-8")).body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )
    imported = [
        (node.module, alias)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    names = [alias.name for _, alias in imported]
    assert len(names) == len(set(names)) and all(
        alias.asname == alias.name for _, alias in imported
    )
    assert {alias.name: module for module, alias in imported} == langchain_promptstrat._MODULE_OF
    assert langchain_promptstrat.__all__ == sorted(names) and len(names) >= 49
    for module, alias in imported:
        assert getattr(langchain_promptstrat, alias.name) is getattr(
            importlib.import_module(str(module)), alias.name
        )
    assert set(names) <= set(dir(langchain_promptstrat))
    with pytest.raises(AttributeError, match="has no attribute 'ShortenToolz'"):
        langchain_promptstrat.ShortenToolz  # noqa: B018
