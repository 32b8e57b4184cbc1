"""CI has no GPU: compile every kernel source to PTX with nvcc so broken CUDA fails here."""

import pathlib
import re
import shutil
import subprocess

import pytest

from gsample.backend.cuda.module import OPTIONS

KERNELS = pathlib.Path(__file__).resolve().parents[2] / "kernels"
SOURCES = sorted(KERNELS.glob("*.cu"))
nvcc = shutil.which("nvcc")


def test_there_are_kernel_sources():
    assert SOURCES, "kernels/*.cu"


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_kernel_compiles_to_ptx(source, tmp_path):
    out = tmp_path / (source.stem + ".ptx")
    done = subprocess.run(
        [nvcc, "-ptx", "-arch=sm_90", *OPTIONS, str(source), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    ptx = out.read_text()
    assert ".entry" in ptx  # at least one kernel made it into the module
    assert ".ftz.f32" not in ptx  # IEEE: float32 subnormals kept, as in PyTorch's kernels


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
def test_the_walk_compiles_with_the_gpu_cache(tmp_path):
    """``gs_random_walk``'s GPU-cache code (``GS_WALK_CACHE`` 1: a UVA graph with a cache),
    which the default compile leaves out (the generated fused walks: below)."""
    out = tmp_path / "walk.ptx"
    done = subprocess.run(
        [nvcc, "-ptx", "-arch=sm_90", *OPTIONS, "-DGS_WALK_CACHE=1", str(KERNELS / "walk.cu")]
        + ["-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert "atom.global.add.u64" in out.read_text()  # the counters


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
def test_the_walk_compiles_step_major(tmp_path):
    """``gs_random_walk`` writing its walks step-major (``GS_WALK_TIME_MAJOR`` 1: many
    walkers, ``gsample.backend.cuda.walk.TIME_MAJOR_MIN``), which the default compile does
    not; the host transposes them with ``transpose.cu`` (compiled above)."""
    for extra in ([], ["-DGS_WALK_MIN_BLOCKS=24"]):  # and with its registers capped
        out = tmp_path / "walk.ptx"
        done = subprocess.run(
            [nvcc, "-ptx", "-arch=sm_90", *OPTIONS, "-DGS_WALK_TIME_MAJOR=1", *extra]
            + [str(KERNELS / "walk.cu"), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        ptx = out.read_text()
        assert ".entry gs_random_walk(" in ptx
        assert (".minnctapersm 24" in ptx) == bool(extra)


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("cached", [False, True], ids=["graph", "gpu-cache"])
@pytest.mark.parametrize("source", ["nodewise.cu", "walk.cu"])
def test_the_int32_rows_of_a_uva_graph_compile(source, cached, tmp_path):
    """``GS_ROW=int``: node-wise sampling and the walks reading a UVA graph's int32 rows
    (``gsample.formats.placement.narrow_rows``) beside its int64 ``indptr``, and its GPU
    cache's int32 rows (walks: compiled with the cache's code, ``GS_WALK_CACHE=1``): 4-byte
    loads where the default compile makes 8-byte ones."""
    ptx = {}
    flags = ["-DGS_WALK_CACHE=1"] if cached else []
    for row in ("int", "long long"):
        out = tmp_path / f"{source}.{row.replace(' ', '_')}.ptx"
        done = subprocess.run(
            [nvcc, "-ptx", "-arch=sm_90", *OPTIONS, *flags, f"-DGS_ROW={row}"]
            + [str(KERNELS / source), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        ptx[row] = out.read_text()
    narrow = re.compile(r"ld\.global(\.nc)?\.[us]32")
    assert len(narrow.findall(ptx["int"])) > len(narrow.findall(ptx["long long"]))


def test_cuda_backend_needs_a_gpu_graph(small_graph):
    import torch

    import gsample as gs

    f = gs.compile(lambda A, seeds: A[:, seeds].individual_sample(2), backend="cuda")
    with pytest.raises(ValueError, match="backend: the 'cuda' backend needs the graph on a GPU"):
        f(small_graph, torch.arange(4))
    with pytest.raises(ValueError, match="backend: unknown backend 'tpu'"):
        gs.compile(lambda A, seeds: A, backend="tpu")
    with pytest.raises(ValueError, match="backend: the 'cuda' backend needs the graph on a GPU"):
        gs.DataLoader(small_graph, f, torch.arange(8), batch_size=4, super_batch=2)


def test_use_backend_cuda_runs_a_cpu_graph_on_torch(small_graph):
    """Under gs.use_backend("cuda"), samplers compiled without backend= run a CPU graph with
    the torch code, as eager ops do: the same samples, compiled, eager and in a loader."""
    import torch

    import gsample as gs

    def layer(A, seeds):
        return A[:, seeds].individual_sample(3).edges()[2]

    seeds = torch.arange(40)
    gs.manual_seed(5)
    want = layer(small_graph, seeds)
    plain = [
        b.out
        for b in gs.DataLoader(
            small_graph, layer, seeds, batch_size=20, shuffle=False, seed=1, super_batch=2
        )
    ]
    with gs.use_backend("cuda"):
        gs.manual_seed(5)
        assert torch.equal(gs.compile(layer)(small_graph, seeds), want)
        got = [
            b.out
            for b in gs.DataLoader(
                small_graph,
                gs.compile(layer),
                seeds,
                batch_size=20,
                shuffle=False,
                seed=1,
                super_batch=2,
            )
        ]
    assert len(got) == len(plain) == 2
    assert all(torch.equal(a, b) for a, b in zip(got, plain))


# generated fused edge maps (gsample/backend/cuda/codegen.py): every op, both sides,
# per-edge / per-column / per-row operands, special and general pow exponents, scalars
# that need exact literals (1e-300 is 0 in float32), inf and NaN
GENERATED = {
    "scalars": (
        ("add", None, False, 2, None),
        ("sub", None, True, -1.5, None),
        ("mul", None, False, 1e-300, None),
        ("div", None, False, 0.5, None),
        ("div", None, True, -1.5, None),
        ("neg", None, False, None, None),
        ("add", None, False, float("inf"), None),
        ("mul", None, True, float("nan"), None),
    ),
    "pow": (
        ("pow", None, False, 2, None),
        ("pow", None, False, 0.5, None),
        ("pow", None, False, -1, None),
        ("pow", None, False, 3, None),
        ("pow", None, False, -2, None),
        ("pow", None, False, -1.5, None),
        ("pow", None, False, 1e-300, None),
        ("pow", None, True, 2, None),
        ("pow", None, False, 0, None),
        ("pow", None, False, 1, None),
    ),
    "operands": (
        ("mul", "0", False, None, None),
        ("sub", "0", True, None, None),
        ("div", "1", False, None, 0),
        ("add", "1", True, None, 0),
        ("sub", "2", False, None, 1),
        ("div", "2", True, None, 1),
        ("pow", "0", False, None, None),
        ("pow", "3", True, None, None),
    ),
    "eight_operands": tuple(
        ("add", str(i), i % 2 == 1, None, (None, 0, 1)[i % 3]) for i in range(8)
    ),
}


def _generated_ptx(source: str, family: str, code: str, tmp_path) -> str:
    """The PTX of a generated kernel source (nvcc with our options; ``code``, the generated
    part, shown when it fails)."""
    src = tmp_path / f"{family}_generated.cu"
    src.write_text(source)
    out = tmp_path / f"{family}_generated.ptx"
    done = subprocess.run(
        [nvcc, "-ptx", "-arch=sm_90", *OPTIONS, str(src), "-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr + "\n" + code
    return out.read_text()


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("has_values", [True, False], ids=["values", "ones"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_edge_map_compiles_to_ptx(name, dtype, has_values, tmp_path):
    import torch

    from gsample.backend.cuda import codegen

    kernel = codegen.generate(GENERATED[name], getattr(torch, dtype), has_values)
    ptx = _generated_ptx(codegen.source(kernel), "edge_map", kernel.expr, tmp_path)
    assert ".entry gs_edge_map" in ptx
    # no contraction of the separately rounded steps (powf's own libdevice code aside)
    if not any(op == "pow" for op, *_ in GENERATED[name]):
        assert "fma." not in ptx


def test_modules_compile_with_our_options_only(monkeypatch, tmp_path):
    """cp.RawModule appends -ftz=true to the options (it flushed float32 subnormals on an
    H200), so modules compile through NVRTC with exactly ``OPTIONS``, then load the binary;
    the binary is kept on disk and reused. CuPy is replaced by a stand-in (CI has none)."""
    import sys
    import types

    import torch

    from gsample.backend.cuda import module

    calls, loaded = [], []

    def fake_nvrtc(source, options=(), arch=None, **kwargs):
        calls.append((source, options, arch))
        return b"binary", {}

    class FakeModule:
        def load(self, binary):
            loaded.append(binary)

    class Device:  # ``with cp.cuda.Device(i):``
        def __init__(self, index=0):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    compiler = types.SimpleNamespace(compile_using_nvrtc=fake_nvrtc)
    function = types.SimpleNamespace(Module=FakeModule)
    cuda = types.ModuleType("cupy.cuda")
    cuda.compiler, cuda.function, cuda.Device = compiler, function, Device
    cuda.nvrtc = types.SimpleNamespace(getVersion=lambda: (13, 0))
    cupy = types.ModuleType("cupy")
    cupy.cuda = cuda  # no RawModule: using it would fail
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setenv("GSAMPLE_CACHE", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    module.module.cache_clear()
    try:
        module.module("sampling", params=(("TEST_KEY", 1),))
        module.module.cache_clear()
        module.module("sampling", params=(("TEST_KEY", 1),))  # from the disk cache
    finally:
        module.module.cache_clear()
    assert len(calls) == 1 and loaded == [b"binary", b"binary"]
    source, options, arch = calls[0]
    assert options == module.OPTIONS and "--ftz=false" in options and arch == "90"
    assert not any("ftz=true" in o for o in options)
    assert "#define GS_TEST_KEY 1" in source
    assert len(list((tmp_path / "kernels").glob("sampling-*.bin"))) == 1


# generated fused walks (gsample/backend/cuda/walk_codegen.py): Metropolis-Hastings (gathers
# of float32 degrees, int64 and float64 arithmetic, a division by a Python number, where),
# and a two-phase step (stop / restart / jump walks, clamps, comparisons, and / or, casts)
def _fused_walk_kernels():
    import torch
    from helpers import example

    import gsample as gs
    from gsample.backend.cuda import walk_codegen
    from gsample.ir import Op

    def phased(A, cur, prev, t):
        nxt = A.random_walk(cur, 1 + t, stop_prob=0.1, restart_prob=0.2 * t, jump_prob=0.1)[:, -1]
        deg = (A**0).sum(axis=0).double()
        far = (deg[nxt.clamp(min=0)] / (deg[cur] + 1.0)).float().clamp(max=3.0) > 1.5
        return torch.where(far | (nxt == prev), -cur - 1, nxt).clamp(min=-1)

    A = gs.datasets.rmat(300, 2400, seed=2)
    mh = example("metropolis_hastings")
    fns = {
        "metropolis_hastings": lambda A, seeds: mh.metropolis_hastings(A, seeds, 6),
        "phased": lambda A, seeds: gs.walk(phased, A, seeds, 7, period=2),
    }
    out = {}
    for name, fn in fns.items():
        program = gs.compile(fn).program(A, torch.arange(5))
        node = next(n for n in program.nodes if n.op is Op.FUSED_WALK)
        operands = {k: v for k, v in node.inputs.items() if k.isdigit()}
        values = {
            k: torch.zeros(300, dtype=torch.float64 if name == "phased" else torch.float32)
            for k in operands
        }
        out[name] = walk_codegen.generate(node.attrs["first"], node.attrs["phases"], values)
    return out


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("row", ["int64", "int32"])
@pytest.mark.parametrize("cached", [False, True], ids=["graph", "gpu-cache"])
@pytest.mark.parametrize("name", ["metropolis_hastings", "phased"])
def test_generated_fused_walk_compiles_to_ptx(name, cached, row, tmp_path):
    from gsample.backend.cuda.module import full_source

    kernel = _fused_walk_kernels()[name]
    # as gsample/backend/cuda/fused_walk.py compiles it for a UVA graph with a GPU cache,
    # and for its int32 rows (host and cache: GS_ROW=int)
    params = (
        kernel.key["params"]
        + ((("WALK_CACHE", 1),) if cached else ())
        + ((("ROW", "int"),) if row == "int32" else ())
    )
    source = full_source("fused_walk", params=params)
    ptx = _generated_ptx(source, "fused_walk", kernel.step, tmp_path)
    assert ".entry gs_fused_walk" in ptx
    assert ("atom.global.add.u64" in ptx) == cached  # the cache's counters
    assert "fma." not in ptx  # every float step rounded on its own, as torch's


def _resource_usage(source, tmp_path, *flags, arch="sm_90") -> tuple:
    """``source`` compiled to a cubin for ``arch`` with the host's options and ``flags``:
    ptxas' log and a function of a kernel's name giving its two lines (spills; registers and
    shared memory)."""
    out = tmp_path / (source.stem + ".cubin")
    done = subprocess.run(
        [nvcc, "-cubin", f"-arch={arch}", *OPTIONS, *flags, "--resource-usage", str(source)]
        + ["-o", str(out)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    log = done.stdout + done.stderr

    def usage(name: str) -> list:
        return log[log.index(f"Function properties for {name}\n") :].splitlines()[1:3]

    return log, usage


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("idx", ["long long", "int"])
def test_the_kept_edge_pass_fits_a_full_sm_without_spilling(idx, tmp_path):
    """``gs_kept_edges`` stages its tile's kept edges in shared memory for blocks of
    ``GS_KEPT_THREADS`` (the host's ``_THREADS``: a larger block would overrun the staging,
    and its launch bounds refuse one) and caps its registers for ``GS_KEPT_MIN_BLOCKS`` blocks
    an SM: ptxas must keep them without spilling, for int64 and int32 graph indices, and the
    blocks' registers and shared memory must fit an sm_90 SM together."""
    from gsample.backend.cuda import layerwise

    text = (KERNELS / "layerwise.cu").read_text()
    tiles = (KERNELS / "frontier_tiles.cuh").read_text()
    assert re.search(rf"#define GS_KEPT_THREADS {layerwise._THREADS}\b", text)
    assert re.search(rf"#define GS_ITEMS {layerwise._ITEMS}\b", tiles)
    blocks = int(re.search(r"#define GS_KEPT_MIN_BLOCKS (\d+)", text)[1])
    _, usage_of = _resource_usage(KERNELS / "layerwise.cu", tmp_path, f"-DGS_IDX={idx}")
    # (a grid of layerwise._GRID blocks is one wave only at 8 blocks an SM) the warp mask
    # passes take their own cap: GS_WARPS_MIN_BLOCKS blocks an SM, the host's _WARP_BLOCKS
    # (its grid is one wave of them)
    warp_blocks = int(re.search(r"#define GS_WARPS_MIN_BLOCKS (\d+)", text)[1])
    assert warp_blocks == layerwise._WARP_BLOCKS
    for name, cap in (
        ("gs_kept_edges", blocks),
        ("gs_kept_mask_warps", warp_blocks),
        ("gs_kept_masked_warps", warp_blocks),
    ):
        usage = usage_of(name)
        assert "0 bytes spill stores, 0 bytes spill loads" in usage[0], (name, usage)
        registers, smem = map(
            int, re.search(r"Used (\d+) registers.* (\d+) bytes smem", usage[1]).groups()
        )
        assert registers * layerwise._THREADS * cap <= 64 * 1024  # an SM's registers
        assert (smem + 1024) * cap <= 228 * 1024  # its shared memory (1 KB a block)


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("arch", ["sm_80", "sm_86"])
def test_the_kept_edge_pass_caps_its_registers_only_on_sm_90(arch, tmp_path):
    """Where an SM holds fewer of ``gs_kept_edges``' blocks (sm_80: its shared memory, 6;
    sm_86: its 1536 threads), the sm_90 cap of 8 blocks an SM is not applied: ptxas keeps the
    kernel without spilling and has no bound to ignore."""
    log, usage_of = _resource_usage(KERNELS / "layerwise.cu", tmp_path, arch=arch)
    assert "minnctapersm will be ignored" not in log
    for name in (
        "gs_kept_edges",
        "gs_kept_mask_warps",
        "gs_kept_masked_warps",
    ):
        usage = usage_of(name)[0]
        assert "0 bytes spill stores, 0 bytes spill loads" in usage, (name, usage)


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("row", ["long long", "int"])
@pytest.mark.parametrize("walks", ["node2vec", "node2vec-before", "node2vec-8-ways", "first-order"])
def test_the_walks_compile_for_each_edge_test_without_spilling(walks, row, tmp_path):
    """``gs_random_walk`` and ``gs_random_walk_step`` as the host compiles them
    (``gsample.backend.cuda.walk._node2vec_params``: node2vec's edge test by its switches,
    the settings before them, 8 ways, and first-order walks without node2vec's code), step
    major and not, with int64 and a UVA graph's int32 rows: no register spilled."""
    from gsample.backend.cuda import walk

    if walks == "first-order":
        params = walk._node2vec_params(False)
    else:
        ways = {"node2vec": walk.SEARCH_WAYS, "node2vec-before": 2, "node2vec-8-ways": 8}[walks]
        before = walks == "node2vec-before"
        params = (
            ("WALK_LAZY", int(not before)),
            ("WALK_WAYS", ways),
            ("WALK_PREFETCH", int(not before)),
            ("WALK_KEEP", int(not before)),
        )
        if walks == "node2vec":
            assert params == walk._node2vec_params(True)
    defines = [f"-DGS_{k}={v}" for k, v in params] + [f"-DGS_ROW={row}"]
    for major in ("0", "1"):
        flags = (*defines, f"-DGS_WALK_TIME_MAJOR={major}")
        _, usage_of = _resource_usage(KERNELS / "walk.cu", tmp_path, *flags)
        for name in ("gs_random_walk", "gs_random_walk_step"):
            usage = usage_of(name)[0]
            assert "0 bytes spill stores, 0 bytes spill loads" in usage, (name, usage)


@pytest.mark.skipif(nvcc is None, reason="nvcc not installed")
@pytest.mark.parametrize("idx", ["long long", "int"])
@pytest.mark.parametrize("dtype", ["float", "double"])
def test_the_row_sum_passes_with_totals_fit_five_blocks_an_sm_without_spilling(
    dtype, idx, tmp_path
):
    """``gs_rowsum_chunk_counts_total`` / ``_fill_total`` (``layerwise.FUSE_TOTALS``) cap
    their registers for ``GS_SUM_MIN_BLOCKS`` blocks of ``GS_SUM_THREADS`` (the host's
    ``_THREADS``) an sm_90 SM: ptxas keeps them without spilling, for float and double values
    and int64 and int32 graph indices."""
    from gsample.backend.cuda import layerwise

    text = (KERNELS / "rowsum.cu").read_text()
    assert re.search(rf"#define GS_SUM_THREADS {layerwise._THREADS}\b", text)
    blocks = int(re.search(r"#define GS_SUM_MIN_BLOCKS (\d+)", text)[1])
    flags = (f"-DGS_IDX={idx}", f"-DGS_DTYPE0={dtype}")
    _, usage_of = _resource_usage(KERNELS / "rowsum.cu", tmp_path, *flags)
    for name in ("gs_rowsum_chunk_counts_total", "gs_rowsum_chunk_fill_total"):
        usage = usage_of(name)
        assert "0 bytes spill stores, 0 bytes spill loads" in usage[0], (name, usage)
        registers = int(re.search(r"Used (\d+) registers", usage[1])[1])
        assert registers * layerwise._THREADS * blocks <= 64 * 1024  # an SM's registers
