"""Layering as code (docs/architecture.md §2): every module of gsample has a level, and its
imports only go to its own level or lower ones.

The levels follow a compiled call down the pipeline (``gs.compile(f)(A, seeds)``):

    capture -> ir -> passes -> runtime -> backend/{torch, cuda} -> kernels

with ``base``, ``formats`` and the cost tables under everything, and the product (the
loader, PyG's loader API, the harness, the CLI) over everything. The rules, checked on the
source of every module (every ``import`` statement, at the top of a file or inside a
function; ``if TYPE_CHECKING:`` imports count for the levels, not for circles, since they
never run):

* every module has a level in :data:`LEVELS`, and no module is loose at the top of
  ``gsample/`` (but ``__init__`` and ``__main__``);
* imports go to the same level or a lower one;
* ``passes`` and ``backend`` are siblings: neither imports the other; ``backend.torch``
  never imports ``backend.cuda``;
* the runtime imports no ``backend.torch.*`` / ``backend.cuda.*`` module (it reaches them
  through the hooks and registries of ``gsample.backend``) and nothing of ``gsample.matrix``
  (it returns formats; the compiler wraps them in ``Matrix``);
* the loader imports from ``compiler`` and ``runtime`` only names of their ``__all__``;
* no private name (``_x``) is imported from, or read off a module of, another room
  (``gsample.<room>``);
* no import circle between modules;
* at most :data:`MAX_FUNCTION_IMPORTS` gsample imports inside functions, and every import
  inside a function (of gsample or not) says why on the line before, as
  ``# import here: <the cycle it breaks, or the optional dependency>``.

``test_the_checker_bites`` plants a violation of each rule in a synthetic module and checks
that the rule reports it.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import itertools
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "gsample"
ROOT = PKG.parent

#: ``(level, modules, why)``: ``"gsample.x.*"`` is the package ``gsample.x`` and every module
#: under it, ``"gsample.x"`` that one module (or package ``__init__``) alone; the most specific
#: entry wins.
LEVELS = [
    (0, ("gsample.base.*",), "the random stream and argument checks every layer shares"),
    (1, ("gsample.formats.*",), "data layouts and placement: tensors and their shapes, no ops"),
    (2, ("gsample.ir.*",), "the op table and the graph that every later stage reads"),
    (
        3,
        ("gsample.cost", "gsample.cost.table", "gsample.cost.default"),
        "cost tables: data the passes' and backends' choices read",
    ),
    (
        4,
        ("gsample.passes.*", "gsample.backend.*"),
        "rewrites of the IR, and the ops' implementations: siblings over the IR",
    ),
    (5, ("gsample.runtime.*",), "lowering and running programs through the backends' hooks"),
    (6, ("gsample.matrix.*",), "gs.Matrix: the user's eager ops, formats run on the backends"),
    (
        7,
        (
            "gsample.capture.*",
            "gsample.datasets.*",
            "gsample.interop",
            "gsample.interop.pyg",
            "gsample.interop.pyg.data",
            "gsample.interop.pyg.hetero",
            "gsample.interop.pyg.negatives",
            "gsample.interop.pyg.negative_arguments",
            "gsample.interop.pyg.negative_draws",
            "gsample.interop.pyg.temporal",
            "gsample.interop.dgl",
        ),
        "front ends over Matrix: tracing, graphs to sample, samples as PyG / DGL objects",
    ),
    (
        8,
        (
            "gsample.compiler.*",
            "gsample.hetero.*",
            "gsample.distributed.*",
            "gsample.cost.calibrate",
        ),
        "whole samplers (compiled, heterogeneous, multi-GPU); calibration times compiled ones",
    ),
    (9, ("gsample.loader.*",), "the training loop's loader over compiled samplers"),
    (
        10,
        (
            "gsample.interop.pyg.arguments",
            "gsample.interop.pyg.loader",
            "gsample.interop.pyg.neighbor_loader",
            "gsample.interop.pyg.link",
            "gsample.interop.pyg.subgraph",
            "gsample.interop.pyg.hetero_loader",
            "gsample.interop.pyg.hetero_arguments",
            "gsample.interop.pyg.hetero_layout",
            "gsample.interop.pyg.stores",
            "gsample.interop.pyg.super_batch",
            "gsample.interop.pyg.hetero_super_batch",
            "gsample.interop.pyg.toy",
            "gsample.pyg",
        ),
        "PyG's loader API over gsample's loader",
    ),
    (
        11,
        ("gsample", "gsample.__main__", "gsample.bench.*"),
        "the front door (import gsample as gs), the CLI and the harness: over everything",
    ),
]

#: the most gsample imports inside functions the tree may hold (issue 33's target)
MAX_FUNCTION_IMPORTS = 15

WHY = "# import here:"


# ---------------------------------------------------------------------------------- the scan
@dataclasses.dataclass(frozen=True)
class Import:
    """One name (or module) one import statement brings in."""

    importer: str  # the importing module
    path: str  # its file, relative to the repository
    line: int
    target: str  # the module imported, or the one a name is imported from
    name: str | None  # the name imported from ``target`` (None: the module itself)
    internal: bool  # ``target`` is a gsample module
    in_function: bool
    type_checking: bool  # under ``if TYPE_CHECKING:`` (never runs)
    said_why: bool  # ``# import here:`` right above the statement (or its ``try:``)

    def where(self) -> str:
        what = self.target if self.name is None else f"{self.target}.{self.name}"
        return f"{self.path}:{self.line} {self.importer} imports {what}"


@dataclasses.dataclass(frozen=True)
class Access:
    """A private attribute read off an imported gsample module (``V._check``)."""

    importer: str
    path: str
    line: int
    target: str
    name: str

    def where(self) -> str:
        return f"{self.path}:{self.line} {self.importer} reads {self.target}.{self.name}"


def _module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _dotted(node: ast.expr) -> list | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


class Tree:
    """The imports of a set of modules: ``files`` maps a module to ``(path, source,
    is_package)``."""

    def __init__(self, files: dict):
        self.files = files
        self.modules = set(files)
        self.imports: list = []
        self.accesses: list = []
        self.all_of: dict = {}
        for module, (path, source, is_package) in files.items():
            self._scan(module, path, source, is_package)

    @classmethod
    def of_package(cls, extra: dict | None = None) -> Tree:
        files = {
            _module_name(p): (str(p.relative_to(ROOT)), p.read_text(), p.name == "__init__.py")
            for p in sorted(PKG.rglob("*.py"))
        }
        return cls({**files, **(extra or {})})

    # -------------------------------------------------------------------- parsing
    def _resolve(self, module: str, is_package: bool, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        package = module if is_package else module.rsplit(".", 1)[0]
        base = package.split(".")
        base = base[: len(base) - node.level + 1]
        return ".".join(base + ([node.module] if node.module else []))

    def _scan(self, module: str, path: str, source: str, is_package: bool) -> None:
        tree = ast.parse(source)
        lines = source.splitlines()
        aliases: dict = {}  # module-level name -> the gsample module it is bound to

        # the first import of each run of consecutive import statements: one reason above
        # the run covers it
        run_head: dict = {}
        for node in ast.walk(tree):
            for field in ("body", "orelse", "finalbody"):
                head = None
                block = getattr(node, field, None)
                for stmt in block if isinstance(block, list) else ():
                    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                        head = head or stmt
                        run_head[id(stmt)] = head
                    else:
                        head = None

        def said_why(stmt: ast.stmt, parent_try: ast.Try | None) -> bool:
            starts = [run_head.get(id(stmt), stmt).lineno]
            if parent_try is not None and any(stmt is s for s in parent_try.body):
                starts.append(parent_try.lineno)  # one reason above ``try:`` covers its body
            for start in starts:
                i = start - 2
                while i >= 0 and lines[i].strip().startswith("#"):
                    if lines[i].strip().startswith(WHY):
                        return True
                    i -= 1
            return False

        def add(stmt, target, name, in_function, type_checking, parent_try, internal):
            self.imports.append(
                Import(
                    module,
                    path,
                    stmt.lineno,
                    target,
                    name,
                    internal,
                    in_function,
                    type_checking,
                    said_why(stmt, parent_try) if in_function else False,
                )
            )

        def visit(node, in_function=False, type_checking=False, parent_try=None):
            if isinstance(node, ast.Import):
                for a in node.names:
                    internal = a.name == "gsample" or a.name.startswith("gsample.")
                    add(node, a.name, None, in_function, type_checking, parent_try, internal)
                return
            if isinstance(node, ast.ImportFrom):
                base = self._resolve(module, is_package, node)
                internal = base == "gsample" or base.startswith("gsample.")
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    if internal and sub in self.modules:  # "from gsample.x import module"
                        add(node, sub, None, in_function, type_checking, parent_try, True)
                    else:
                        add(node, base, a.name, in_function, type_checking, parent_try, internal)
                return
            if isinstance(node, ast.Attribute) and _private(node.attr):
                chain = _dotted(node.value)
                if chain and chain[0] in aliases:
                    target = ".".join([aliases[chain[0]], *chain[1:]])
                    if target in self.modules:
                        self.accesses.append(Access(module, path, node.lineno, target, node.attr))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function = True
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.body:
                    visit(child, in_function, True, None)
                for child in node.orelse:
                    visit(child, in_function, type_checking, None)
                return
            for child in ast.iter_child_nodes(node):
                visit(
                    child,
                    in_function,
                    type_checking,
                    node if isinstance(node, ast.Try) else None,
                )

        for stmt in tree.body:
            if isinstance(stmt, (ast.Assign, ast.AugAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                    try:
                        names = set(ast.literal_eval(stmt.value))
                    except ValueError:
                        names = set()
                    self.all_of[module] = self.all_of.get(module, set()) | names
        # the module aliases (``import gsample.x as m``) private reads go through, known
        # before the walk meets a read above its import
        for stmt in tree.body:
            if isinstance(stmt, ast.Import):
                for a in stmt.names:
                    if a.name.startswith("gsample."):
                        aliases[a.asname or "gsample"] = a.name if a.asname else "gsample"
            elif isinstance(stmt, ast.ImportFrom):
                base = self._resolve(module, is_package, stmt)
                for a in stmt.names:
                    if f"{base}.{a.name}" in self.modules:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
        visit(tree)

    # -------------------------------------------------------------------- queries
    def internal(self, *, runs: bool = False) -> list:
        """The gsample imports (``runs``: only those that run, not ``TYPE_CHECKING``'s)."""
        return [
            i
            for i in self.imports
            if i.internal and i.target != i.importer and not (runs and i.type_checking)
        ]


def level_of(module: str) -> int | None:
    """The level of ``module`` by :data:`LEVELS` (None: none given)."""
    best, found = -1, None
    for level, patterns, _ in LEVELS:
        for pattern in patterns:
            if pattern.endswith(".*"):
                package = pattern[:-2]
                hit = module == package or module.startswith(package + ".")
                rank = len(package)  # an exact entry of the same name ranks above
            else:
                hit, rank = module == pattern, len(pattern) + 1
            if hit and rank > best:
                best, found = rank, level
    return found


def room(module: str) -> str:
    """The top-level package (``gsample.<room>``) of ``module``; ``gsample`` for the root."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


# ---------------------------------------------------------------------------------- the rules
def unassigned(tree: Tree) -> list:
    return sorted(
        f"{tree.files[m][0]}: {m} has no level in LEVELS"
        for m in tree.modules
        if level_of(m) is None
    )


def loose(tree: Tree) -> list:
    return sorted(
        f"{tree.files[m][0]}: {m} is loose at the top of gsample/"
        for m in tree.modules
        if m.count(".") == 1 and not tree.files[m][2] and m != "gsample.__main__"
    )


def upward(tree: Tree) -> list:
    out = []
    for i in tree.internal():
        a, b = level_of(i.importer), level_of(i.target)
        if a is not None and b is not None and b > a:
            out.append(f"{i.where()} (level {a} -> {b})")
    return sorted(out)


def _crossing(tree: Tree, importers: str, targets: tuple) -> list:
    return sorted(
        i.where()
        for i in tree.internal()
        if under(i.importer, importers) and any(under(i.target, t) for t in targets)
    )


def siblings(tree: Tree) -> list:
    return _crossing(tree, "gsample.passes", ("gsample.backend",)) + _crossing(
        tree, "gsample.backend", ("gsample.passes",)
    )


def torch_imports_cuda(tree: Tree) -> list:
    return _crossing(tree, "gsample.backend.torch", ("gsample.backend.cuda",))


def runtime_leaks(tree: Tree) -> list:
    return _crossing(
        tree,
        "gsample.runtime",
        ("gsample.backend.torch", "gsample.backend.cuda", "gsample.matrix"),
    )


def loader_privates(tree: Tree) -> list:
    out = []
    for i in tree.internal():
        if not under(i.importer, "gsample.loader"):
            continue
        if not (under(i.target, "gsample.compiler") or under(i.target, "gsample.runtime")):
            continue
        public = tree.all_of.get(i.target, set())
        if i.name is None or i.name not in public:
            out.append(f"{i.where()} (not in {i.target}.__all__)")
    return sorted(out)


def private_names(tree: Tree) -> list:
    out = [
        i.where()
        for i in tree.internal()
        if i.name is not None and _private(i.name) and room(i.importer) != room(i.target)
    ]
    out += [
        a.where()
        for a in tree.accesses
        if room(a.importer) != room(a.target) and a.importer != a.target
    ]
    return sorted(out)


def cycles(tree: Tree) -> list:
    """Each import circle (a strongly connected component of the modules' imports that
    run), as one cycle through it with the file and line of each import."""
    edges: dict = {}
    for i in tree.internal(runs=True):
        if i.target in tree.modules:
            edges.setdefault(i.importer, {}).setdefault(i.target, f"{i.path}:{i.line}")
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    components = []

    def connect(v):  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(tree.modules):
        if v not in index:
            connect(v)
    out = []
    for component in components:
        start = min(component)
        # the shortest way back to ``start`` inside the component
        paths = {start: [start]}
        queue = [start]
        path = None
        while queue and path is None:
            v = queue.pop(0)
            for w in sorted(edges.get(v, ())):
                if w == start:
                    path = [*paths[v], start]
                    break
                if w in component and w not in paths:
                    paths[w] = [*paths[v], w]
                    queue.append(w)
        steps = start + "".join(f" -[{edges[a][b]}]-> {b}" for a, b in itertools.pairwise(path))
        out.append(f"circle of {len(component)} modules {sorted(component)}: {steps}")
    return sorted(out)


def _by_statement(imports) -> list:
    """One line per import statement (``path:line importer imports a, b``), in file order."""
    seen: dict = {}
    for i in imports:
        seen.setdefault((i.path, i.line), []).append(i)
    return [
        f"{path}:{line} {found[0].importer} imports "
        + ", ".join(i.target if i.name is None else f"{i.target}.{i.name}" for i in found)
        for (path, line), found in sorted(seen.items())
    ]


def function_imports(tree: Tree) -> list:
    """The import statements of gsample inside functions."""
    return _by_statement(i for i in tree.internal() if i.in_function)


def unexplained(tree: Tree) -> list:
    """Import statements inside functions (of gsample or not) without ``# import here:``."""
    return _by_statement(i for i in tree.imports if i.in_function and not i.said_why)


# ---------------------------------------------------------------------------------- the tests
TREE = Tree.of_package()


def _report(found: list, what: str) -> str:
    return f"{len(found)} {what}:\n  " + "\n  ".join(sorted(found, key=_file_order))


def _file_order(line: str) -> tuple:
    """``path:line ...`` sorted by path, then line number."""
    where = line.split(" ", 1)[0]
    path, _, number = where.partition(":")
    return (path, int(number) if number.isdigit() else 0, line)


def test_every_module_has_a_level():
    found = unassigned(TREE)
    assert not found, _report(found, "modules without a level (add them to LEVELS)")


def test_every_level_entry_names_a_module():
    stale = [
        p for _, patterns, _ in LEVELS for p in patterns if p.removesuffix(".*") not in TREE.modules
    ]
    assert not stale, _report(stale, "LEVELS entries naming no module")


def test_no_module_is_loose_at_the_top():
    found = loose(TREE)
    assert not found, _report(found, "modules loose at the top (give them a room)")


def test_imports_only_go_down_the_levels():
    found = upward(TREE)
    assert not found, _report(found, "imports of a higher level")


def test_passes_and_backend_are_siblings():
    found = siblings(TREE)
    assert not found, _report(found, "imports between passes and backend")


def test_the_torch_backend_never_imports_the_cuda_one():
    found = torch_imports_cuda(TREE)
    assert not found, _report(found, "imports of backend.cuda from backend.torch")


def test_the_runtime_reaches_backends_through_hooks_and_returns_formats():
    found = runtime_leaks(TREE)
    assert not found, _report(
        found, "runtime imports of backend.torch.* / backend.cuda.* / gsample.matrix"
    )


def test_the_loader_uses_only_the_public_api_of_compiler_and_runtime():
    found = loader_privates(TREE)
    assert not found, _report(found, "loader imports of names outside __all__")


def test_no_private_name_crosses_rooms():
    found = private_names(TREE)
    assert not found, _report(found, "private names taken from another room")


def test_no_import_circle():
    found = cycles(TREE)
    assert not found, _report(found, "import circles")


def test_few_function_level_imports():
    found = function_imports(TREE)
    assert len(found) <= MAX_FUNCTION_IMPORTS, _report(
        found, f"gsample imports inside functions (at most {MAX_FUNCTION_IMPORTS})"
    )


def test_every_function_level_import_says_why():
    found = unexplained(TREE)
    assert not found, _report(found, f"imports inside functions without '{WHY} <why>'")


@pytest.mark.parametrize(
    "module",
    [
        "gsample",
        "gsample.bench",
        "gsample.compiler",
        "gsample.datasets",
        "gsample.distributed",
        "gsample.hetero",
        "gsample.interop",
        "gsample.interop.pyg",
        "gsample.loader",
        "gsample.matrix",
        "gsample.pyg",
        "gsample.runtime",
    ],
)
def test_public_modules_declare_their_api(module):
    """A public module names its API in ``__all__``, and every name there exists."""
    assert module in TREE.all_of, f"{module} has no __all__"
    mod = importlib.import_module(module)
    missing = [name for name in mod.__all__ if not hasattr(mod, name)]
    assert not missing, f"{module}.__all__ names what it does not define: {missing}"


# ---------------------------------------------------------------------------------- the checker
PLANTED = {
    "gsample.base.planted": "from gsample.runtime import lower\n",
    "gsample.passes.planted": "from gsample.backend import get_backend\n",
    "gsample.backend.torch.planted": "import gsample.backend.cuda.split\n",
    "gsample.runtime.planted": (
        "from gsample.backend.cuda import split\nfrom gsample.matrix.sparse import Matrix\n"
    ),
    "gsample.loader.planted": "from gsample.runtime.program import launch as _launch\n",
    "gsample.hetero.planted": (
        "from gsample.distributed.circle_a import _hidden\n"
        "from gsample.base import random as R\n"
        "def f():\n    return R._secret\n"
    ),
    "gsample.distributed.circle_a": "from gsample.distributed.circle_b import y\n_hidden = 1\n",
    "gsample.distributed.circle_b": (
        "def f():\n    from gsample.distributed.circle_a import _hidden\n    return _hidden\n"
    ),
    "gsample.planted": "x = 1\n",
    "gsample.newroom.planted": "x = 1\n",
}


def _planted_tree() -> Tree:
    return Tree.of_package(
        {m: (m.replace(".", "/") + ".py", source, False) for m, source in PLANTED.items()}
    )


def test_the_checker_bites():
    """Every rule reports the violation planted for it in a synthetic module (and only the
    planted modules are new in what it reports)."""
    tree = _planted_tree()

    def new(found: list) -> list:
        return [f for f in found if "planted" in f or "circle_" in f]

    assert new(unassigned(tree)) == [
        "gsample/newroom/planted.py: gsample.newroom.planted has no level in LEVELS",
        "gsample/planted.py: gsample.planted has no level in LEVELS",
    ]
    assert any("gsample.planted is loose" in f for f in loose(tree))
    assert any(
        "gsample.base.planted imports gsample.runtime.lower (level 0 -> 5)" in f
        for f in upward(tree)
    )
    assert any(
        "gsample.passes.planted imports gsample.backend.get_backend" in f for f in siblings(tree)
    )
    assert any(
        "gsample.backend.torch.planted imports gsample.backend.cuda.split" in f
        for f in torch_imports_cuda(tree)
    )
    leaks = new(runtime_leaks(tree))
    assert any("imports gsample.backend.cuda.split" in f for f in leaks)
    assert any("imports gsample.matrix.sparse.Matrix" in f for f in leaks)
    assert new(loader_privates(tree)) == [
        "gsample/loader/planted.py:1 gsample.loader.planted imports "
        "gsample.runtime.program.launch (not in gsample.runtime.program.__all__)"
    ]
    privates = new(private_names(tree))
    assert any("hetero.planted imports gsample.distributed.circle_a._hidden" in f for f in privates)
    assert any("hetero.planted reads gsample.base.random._secret" in f for f in privates)
    # inside the room a private name is the room's business
    assert not any("circle_b imports" in f for f in privates)
    circle = new(cycles(tree))
    assert len(circle) == 1 and "gsample/distributed/circle_b.py:2" in circle[0], circle
    assert "circle of 2 modules" in circle[0]
    assert new(function_imports(tree)) == [
        "gsample/distributed/circle_b.py:2 gsample.distributed.circle_b imports "
        "gsample.distributed.circle_a._hidden"
    ]
    assert new(unexplained(tree)) == [
        "gsample/distributed/circle_b.py:2 gsample.distributed.circle_b imports "
        "gsample.distributed.circle_a._hidden"
    ]


def test_a_reason_and_type_checking_are_seen():
    """``# import here:`` above an import, above its ``try:`` or above the run of imports it
    starts explains it; an import under ``if TYPE_CHECKING:`` makes no circle."""
    tree = Tree.of_package(
        {
            "gsample.distributed.circle_a": (
                "x.py",
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from gsample.distributed.circle_b import y\n",
                False,
            ),
            "gsample.distributed.circle_b": (
                "y.py",
                "def f():\n"
                "    # import here: a cycle with circle_a\n"
                "    # (a second line of the reason)\n"
                "    from gsample.distributed.circle_a import x\n"
                "    try:\n        import cupy\n    except ImportError:\n        pass\n"
                "def g():\n"
                "    # import here: CuPy is optional\n"
                "    try:\n        import cupy\n    except ImportError:\n        pass\n"
                "def h():\n"
                "    # import here: examples/, on sys.path at run time\n"
                "    import deepwalk\n    import node2vec\n"
                "    x = 1\n    import ladies\n",
                False,
            ),
        }
    )
    assert not [c for c in cycles(tree) if "circle_" in c]
    assert [f for f in unexplained(tree) if f.startswith("y.py")] == [
        "y.py:6 gsample.distributed.circle_b imports cupy",
        "y.py:20 gsample.distributed.circle_b imports ladies",
    ]
