"""The folders show the pipeline, and imports only go down it (docs/architecture.md §2):

    capture (trace) -> ir -> passes -> runtime (lowering) -> backend/{torch, cuda} -> kernels

with the base layers ``formats``, ``random``, ``validate`` and the cost tables (``cost``)
under everything. Checked on
the source (every ``import``, module-level or inside a function): the IR imports no pass,
backend or runtime; passes import no backend or runtime code; backends import no pass,
runtime or user-facing module; the torch backend imports nothing of the CUDA one; the base
layers import nothing above them.
"""

import ast
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parents[1] / "gsample"
TOP = (
    "compiler",
    "matrix",
    "loader",
    "trace",
    "explain",
    "datasets",
    "convert",
    "calibrate",
    "__main__",
)


def _module(path: pathlib.Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(path: pathlib.Path) -> set:
    """Absolute names of the gsample modules ``path`` imports."""
    mod = _module(path)
    package = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("gsample")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.startswith("gsample"):
                out.add(name)
                out |= {f"{name}.{a.name}" for a in node.names}  # "from . import x"
    return out


MODULES = {_module(p): _imports(p) for p in PKG.rglob("*.py")}


def _under(name: str, layer: str) -> bool:
    return name == f"gsample.{layer}" or name.startswith(f"gsample.{layer}.")


def _violations(layer: str, forbidden: tuple) -> list:
    return sorted(
        f"{m} imports {i}"
        for m, imps in MODULES.items()
        if _under(m, layer)
        for i in imps
        for f in forbidden
        if _under(i, f)
    )


RULES = [
    ("ir", ("passes", "backend", "runtime", *TOP)),
    ("passes", ("backend", "runtime", *TOP)),
    ("backend", ("passes", "runtime", *TOP)),
    ("backend.torch", ("backend.cuda",)),
    ("runtime", ("compiler", "loader", "trace", "explain")),
    ("formats", ("ir", "passes", "backend", "runtime", *TOP)),
    ("random", ("ir", "passes", "backend", "runtime", "formats", *TOP)),
    ("validate", ("ir", "passes", "backend", "runtime", *TOP)),
]


@pytest.mark.parametrize("layer, forbidden", RULES, ids=[r[0] for r in RULES])
def test_imports_only_go_down_the_pipeline(layer, forbidden):
    assert _violations(layer, forbidden) == []


def test_the_checker_sees_imports():
    """The rules bite: these modules do import what the checker must find."""
    assert "gsample.backend.torch.batched" in MODULES["gsample.runtime.block_diagonal"]
    assert "gsample.ir" in MODULES["gsample.passes.cse"]
    assert any(_under(i, "backend") for i in MODULES["gsample.runtime.lower"])
    assert _violations("runtime", ("backend",)), "runtime does import the backends"
