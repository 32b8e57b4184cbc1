"""Every ``launch(family, kernel, threads, *args)`` of the CUDA backend's host code passes as
many arguments as the kernel in ``kernels/<family>.cu`` takes (host only: no GPU needed).

``cuLaunchKernel`` takes a kernel's arguments as an array of pointers with no count: one
argument too few makes the kernel read its last parameter from whatever lies past the array,
an id bound or a flag pointer among them. A list expanded into a launch (``*ptrs``: the
generated kernels' operands) counts as its fixed length, ``MAX_OPERANDS`` (the host code
pads it to that).
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


def launches() -> list:
    """``(file, line, family, kernel, positional arguments or None)`` of every launch call
    with literal names (None: a starred argument not in :data:`STARRED`)."""
    out = []
    for path in HOST.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
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
            count = 0
            for a in node.args[3:]:
                if not isinstance(a, ast.Starred):
                    count += 1
                elif isinstance(a.value, ast.Name) and a.value.id in STARRED:
                    count += STARRED[a.value.id]
                else:
                    count = None
                    break
            out.append((path.name, node.lineno, family.value, kernel.value, count))
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
