"""CI has no GPU: compile every kernel source to PTX with nvcc so broken CUDA fails here."""
import pathlib
import shutil
import subprocess

import pytest

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "kernels"
SOURCES = sorted(KERNELS.glob("*.cu"))
nvcc = shutil.which("nvcc")


def test_there_are_kernel_sources():
    assert SOURCES, "kernels/*.cu"


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_kernel_compiles_to_ptx(source, tmp_path):
    out = tmp_path / (source.stem + ".ptx")
    done = subprocess.run([nvcc, "-ptx", "-arch=sm_90", "-std=c++17", f"-I{KERNELS}",
                           str(source), "-o", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ptx = out.read_text()
    assert ".entry" in ptx            # at least one kernel made it into the module


def test_cuda_backend_needs_a_gpu_graph(small_graph):
    import torch
    import gsample as gs
    f = gs.compile(lambda A, seeds: A[:, seeds].individual_sample(2), backend="cuda")
    with pytest.raises(ValueError, match="backend: the 'cuda' backend needs the graph on a GPU"):
        f(small_graph, torch.arange(4))
    with pytest.raises(ValueError, match="backend: unknown backend 'tpu'"):
        gs.compile(lambda A, seeds: A, backend="tpu")
