"""The package that installs: a built wheel carries every CUDA source of ``kernels/``, an
installed copy's CUDA backend finds them, ``python -m gsample --version``, the ``pyg`` extra."""

import email.parser
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

import gsample

ROOT = pathlib.Path(__file__).resolve().parents[1]
SOURCES = sorted(p.name for p in (ROOT / "kernels").iterdir() if p.suffix in (".cu", ".cuh"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the source tree (the build writes ``build/`` beside it)."""
    tree = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    shutil.copytree(ROOT / "gsample", tree / "gsample", ignore=ignore)
    shutil.copytree(ROOT / "kernels", tree / "kernels", ignore=ignore)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            ".",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
        ],
        cwd=tree,
        check=True,
        timeout=120,
    )
    (path,) = out.glob("gsample-*.whl")
    return path


@pytest.mark.slow
def test_wheel_lists_every_kernel_source(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert SOURCES and {n for n in SOURCES if n.endswith(".cu")}
    for name in SOURCES:
        assert f"gsample/_kernels/{name}" in names, name
    assert "gsample/interop/pyg/data.py" in names and "gsample/pyg/__init__.py" in names


@pytest.mark.slow
def test_installed_copy_resolves_every_kernel(wheel, tmp_path):
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(target),
            str(wheel),
        ],
        check=True,
        timeout=120,
    )
    probe = (
        "import pathlib, sys, gsample\n"
        "from gsample.backend.cuda import module as m\n"
        "print(pathlib.Path(gsample.__file__).resolve().parent)\n"
        "print(m.KERNELS.resolve())\n"
        "for name in sys.argv[1:]:\n"
        "    if name.endswith('.cu'):\n"
        "        text = m.full_source(name[:-3])\n"
        "        assert text.endswith((m.KERNELS / name).read_text()), name\n"
        "    assert (m.KERNELS / name).is_file(), name\n"
        "print('ok', len(sys.argv) - 1)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(target)}
    run = subprocess.run(
        [sys.executable, "-c", probe, *SOURCES],
        cwd=tmp_path,
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    package, kernels, ok = run.stdout.split("\n")[:3]
    assert pathlib.Path(package) == (target / "gsample").resolve()  # the installed copy
    assert pathlib.Path(kernels) == (target / "gsample" / "_kernels").resolve()
    assert ok == f"ok {len(SOURCES)}"


@pytest.mark.slow
def test_wheel_metadata_version_and_pyg_extra(wheel):
    with zipfile.ZipFile(wheel) as z:
        (meta,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        msg = email.parser.Parser().parsestr(z.read(meta).decode())
    assert msg["Version"] == gsample.__version__
    pyg = [r for r in msg.get_all("Requires-Dist") if 'extra == "pyg"' in r]
    # to_pyg, to_sampler_output and gsample.pyg import torch_geometric only (no pyg-lib)
    assert [r.split(";")[0].strip() for r in pyg] == ["torch_geometric"]


def test_source_tree_kernels_are_found():
    from gsample.backend.cuda import module

    assert module.KERNELS.resolve() == (ROOT / "kernels").resolve()


def test_version_flag():
    run = subprocess.run(
        [sys.executable, "-m", "gsample", "--version"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert run.returncode == 0 and run.stdout.strip() == f"gsample {gsample.__version__}"


def test_pyg_modules_need_only_torch_geometric():
    """What the pyg extra must pull: every third-party module the PyG conversions import."""
    import ast

    third_party = set()
    for path in (
        ROOT / "gsample" / "interop" / "pyg" / "data.py",
        ROOT / "gsample" / "interop" / "pyg" / "loader.py",
    ):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                third_party |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                third_party.add(node.module.split(".")[0])
    assert third_party - set(sys.stdlib_module_names) - {"gsample"} == {"torch", "torch_geometric"}
