"""Every ``launch(family, kernel, threads, *args)`` of the CUDA backend's host code passes as
many arguments as the kernel in ``kernels/<family>.cu`` takes (host only: no GPU needed).

``cuLaunchKernel`` takes a kernel's arguments as an array of pointers with no count: one
argument too few makes the kernel read its last parameter from whatever lies past the array,
an id bound or a flag pointer among them. A list expanded into a launch (``*ptrs``: the
generated kernels' operands) counts as its fixed length, ``MAX_OPERANDS`` (the host code
pads it to that); a name its function binds once to a tuple written out (the arguments two
launches share) counts as that tuple's entries. A launch bound with ``functools.partial``
(``gs_sample_uniform``'s two phases) counts the partial's arguments and each call's.
"""

import ast
import pathlib
import re

import pytest

from gsample.backend.cuda import codegen, walk_codegen

ROOT = pathlib.Path(__file__).resolve().parents[2]
HOST = ROOT / "gsample" / "backend" / "cuda"
KERNELS = ROOT / "kernels"

_SIGNATURE = re.compile(
    # (launch bounds written out, or a GS_ macro that expands to them)
    r'extern\s+"C"\s+__global__\s+void\s+(?:(?:__launch_bounds__\([^)]*\)|GS_[A-Z0-9_]+)\s*)?'
    r"(\w+)\s*\(([^{]*?)\)\s*\{",
    re.S,
)


def kernel_params() -> dict:
    """``(family, kernel) -> number of parameters`` of every kernel source."""
    out = {}
    for path in KERNELS.glob("*.cu"):
        for name, params in _SIGNATURE.findall(path.read_text()):
            text = re.sub(r"//[^\n]*", "", params).strip()
            out[path.stem, name] = 0 if not text or text == "void" else text.count(",") + 1
    return out


#: lists the host code expands into a launch, and their (padded) lengths
STARRED = {"ptrs": codegen.MAX_OPERANDS, "lens": walk_codegen.MAX_OPERANDS}


def _tuples(func) -> dict:
    """The names ``func`` binds once, to a tuple written out: ``name -> ast.Tuple``."""
    bound = {}
    for node in ast.walk(func):
        targets = node.targets if isinstance(node, ast.Assign) else []
        targets += [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if isinstance(t, ast.Name):
                tup = node.value if isinstance(node, ast.Assign) else None
                bound[t.id] = None if t.id in bound or not isinstance(tup, ast.Tuple) else tup
    return {name: tup for name, tup in bound.items() if tup is not None}


def _count(args, tuples: dict) -> int | None:
    """How many arguments ``args`` pass (None: a list of unknown length expanded)."""
    count = 0
    for a in args:
        if not isinstance(a, ast.Starred):
            count += 1
        elif isinstance(a.value, ast.Name) and a.value.id in STARRED:
            count += STARRED[a.value.id]
        elif isinstance(a.value, ast.Name) and a.value.id in tuples:
            inner = _count(tuples[a.value.id].elts, tuples)
            if inner is None:
                return None
            count += inner
        else:
            return None
    return count


def launches() -> list:
    """``(file, line, family, kernel, positional arguments or None)`` of every launch call
    with literal names (None: a starred argument not in :data:`STARRED` nor a tuple its
    function writes out)."""
    out = []
    for path in HOST.glob("*.py"):
        tree = ast.parse(path.read_text())
        funcs = [f for f in ast.walk(tree) if isinstance(f, ast.FunctionDef)]
        # each launch with its innermost function's tuples (ast.walk: outer ones first)
        scope = {}
        for func in funcs:
            tuples = _tuples(func)
            for node in ast.walk(func):
                scope[node] = tuples
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "launch"
                and len(node.args) >= 3
            ):
                continue
            family, kernel = node.args[0], node.args[1]
            if not (isinstance(family, ast.Constant) and isinstance(kernel, ast.Constant)):
                continue
            count = _count(node.args[3:], scope.get(node, {}))
            out.append((path.name, node.lineno, family.value, kernel.value, count))
        for func in funcs:
            out += _partial_launches(path.name, func, scope)
    return out


def _partial_launches(where: str, func, scope: dict) -> list:
    """The launches ``func`` makes through ``name = functools.partial(launch, family,
    kernel, threads, *args)`` and calls ``name(*rest)``: one row per call, its arguments the
    partial's and the call's."""
    out = []
    for node in ast.walk(func):
        value = node.value if isinstance(node, ast.Assign) else None
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, (ast.Attribute, ast.Name))
            and getattr(value.func, "attr", getattr(value.func, "id", None)) == "partial"
            and value.args
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id == "launch"
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            continue
        family, kernel = value.args[1], value.args[2]
        if not (isinstance(family, ast.Constant) and isinstance(kernel, ast.Constant)):
            continue
        name = node.targets[0].id
        calls = [
            c
            for c in ast.walk(func)
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
        ]
        assert calls, f"{where}:{node.lineno}: {name} is never called"
        for c in calls:
            count = _count([*value.args[4:], *c.args], scope.get(c, {}))
            out.append((where, c.lineno, family.value, kernel.value, count))
    return out


PARAMS = kernel_params()
LAUNCHES = launches()


def test_the_sources_and_launches_are_found():
    assert len(PARAMS) > 40 and len(LAUNCHES) > 40
    assert PARAMS["walk", "gs_random_walk"] >= 20


@pytest.mark.parametrize(
    "where, line, family, kernel, count",
    LAUNCHES,
    ids=[f"{w}:{ln}:{k}" for w, ln, _, k, _ in LAUNCHES],
)
def test_launch_passes_every_parameter(where, line, family, kernel, count):
    assert (family, kernel) in PARAMS, f"{where}:{line}: no kernel {kernel} in {family}.cu"
    assert count is not None, f"{where}:{line}: a list of unknown length expanded (STARRED)"
    assert count == PARAMS[family, kernel], (
        f"{where}:{line}: {kernel} takes {PARAMS[family, kernel]} arguments, given {count}"
    )
