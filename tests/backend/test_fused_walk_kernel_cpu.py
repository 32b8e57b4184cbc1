"""The generated fused-walk kernel (``kernels/fused_walk.cu`` + ``walk_codegen``) on the CPU:
its source compiled as C++ (CUDA's names as plain C++, one thread for every walker) walks
as the torch backend's fused walk does, step for step: the keys of each step's ordinals, the
walkers' positions, a super-batch's keys and encoding, the inlined walks and the body's
arithmetic. CI has no GPU; ``test_cuda_fused_walk.py`` is the GPU comparison. (On the CPU,
torch divides a tensor by a Python number exactly where its CUDA kernel, and so the generated
code, multiplies by the reciprocal; the walks here are long enough to cross no such tie.)"""

import ctypes
from dataclasses import replace

import pytest
import torch
from helpers import CXX, build_cpp, example

import gsample as gs
from gsample.backend.cuda import walk_codegen
from gsample.backend.torch import fused_walk as reference
from gsample.base.random import KeyRange, key_prefix, signed
from gsample.formats import cache as C
from gsample.ir import Op

SHIM = r"""
#include <cmath>
using std::isnan;
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
struct gs_dim3 { long long x; };
static gs_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fsqrt_rn(float a) { return std::sqrt(a); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __dsqrt_rn(double a) { return std::sqrt(a); }
static inline double __ll2double_rn(long long a) { return (double)a; }
static inline float __ll2float_rn(long long a) { return (float)a; }
static inline float __double2float_rn(double a) { return (float)a; }
template <typename T>
static inline T atomicCAS(T* p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
template <typename T>
static inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
static inline int atomicExch(int* p, int v) { int o = *p; *p = v; return o; }
template <typename T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
// one thread runs every walker: a warp of one lane, whose missing lanes add nothing to its sums
template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
#define GS_WALK_CACHE 1
"""


def build(tmp, kernel, head=""):
    src = walk_codegen.source(kernel)
    lib = tmp / "libfw.so"
    done = build_cpp(head + SHIM + src, lib, "-shared", "-fPIC")
    assert done.returncode == 0, done.stderr[-3000:]
    return ctypes.CDLL(str(lib))


def run_kernel(
    lib, A, seeds, length, keys, direct, n, operands, names, copies=1, cache=None, rows=None
):
    """The kernel's walks and its two flags (a step's id out of range, a seed out of
    range): ``(out, [failed_step, failed_seed])``. ``cache``: ``(slot, crows, counters)``, a
    GPU cache's arrays; ``rows``: the rows read in place of the graph's (int32 for a kernel
    compiled ``GS_ROW=int``)."""
    W = seeds.numel()
    out = torch.empty((W, length + 1), dtype=torch.int64)
    failed = torch.zeros(2, dtype=torch.int32)
    ops = [operands[k].contiguous() for k in names]
    P = ctypes.c_void_p
    ptrs = [P(o.data_ptr()) for o in ops] + [P(0)] * (8 - len(ops))
    lens = [ctypes.c_longlong(o.numel()) for o in ops] + [ctypes.c_longlong(0)] * (8 - len(ops))
    c = A.csc
    slot, crows, counters = cache or (None, None, None)
    lib.gs_fused_walk(
        P(c.indptr.data_ptr()),
        P((c.rows if rows is None else rows).data_ptr()),
        P(seeds.data_ptr()),
        ctypes.c_longlong(W),
        ctypes.c_longlong(length),
        ctypes.c_longlong(A.num_nodes),
        P(keys.data_ptr()),
        ctypes.c_int(direct),
        ctypes.c_longlong(n),
        ctypes.c_longlong(A.num_nodes * copies),
        *ptrs,
        *lens,
        P(out.data_ptr()),
        P(failed.data_ptr()),
        P(0 if slot is None else slot.data_ptr()),
        P(0 if crows is None else crows.data_ptr()),
        ctypes.c_longlong(0 if crows is None else crows.numel()),
        P(0 if counters is None else counters.data_ptr()),
    )
    return out, failed.tolist()


@pytest.fixture(scope="module")
def mh_walk(tmp_path_factory):
    if CXX is None:
        pytest.skip("no C++ compiler")
    mh = example("metropolis_hastings")
    A = gs.datasets.rmat(3000, 30000, seed=6)
    node = next(
        n
        for n in gs.compile(mh.metropolis_hastings).program(A, torch.arange(4), length=30).nodes
        if n.op is Op.FUSED_WALK
    )
    deg = (A**0).sum(axis=0)
    kernel = walk_codegen.generate(node.attrs["first"], node.attrs["phases"], {"0": deg})
    return A, node, {"0": deg}, build(tmp_path_factory.mktemp("fw"), kernel), kernel


def test_generated_kernel_walks_as_the_torch_code(mh_walk):
    A, node, operands, lib, kernel = mh_walk
    seeds = torch.randint(0, A.num_nodes, (2000,), generator=torch.Generator().manual_seed(2))
    key = KeyRange.of(seed=11, ordinal=3, count=node.attrs["num_ordinals"], batch=5)
    want = reference.fused_walk(
        A.csc, seeds, node.attrs["first"], node.attrs["phases"], 30, key, **operands
    )
    keys = torch.tensor([signed(k) for k in key.keys], dtype=torch.int64)
    got, failed = run_kernel(lib, A, seeds, 30, keys, 1, 0, operands, kernel.operands)
    assert failed == [0, 0] and int((want[:, -1] < 0).sum()) > 0
    assert torch.equal(got, want)


def test_generated_kernel_super_batch(mh_walk):
    """Device keys (prefix, first mini-batch) and encoded seeds of 3 mini-batches: each
    batch's walks are its own (torch code with BatchKeys), encoded."""
    A, node, operands, lib, kernel = mh_walk
    n, count, copies = A.num_nodes, node.attrs["num_ordinals"], 3
    gen = torch.Generator().manual_seed(3)
    seeds = torch.cat(
        [torch.randint(0, n, (m,), generator=gen) + b * n for b, m in enumerate((400, 0, 250))]
    )
    key = KeyRange.of(seed=4, ordinal=0, count=count, batch=7, batches=(copies, n))
    want = reference.fused_walk(
        A.csc, seeds, node.attrs["first"], node.attrs["phases"], 30, key, **operands
    )
    rows = torch.tensor([[signed(key_prefix(4, i)), 7] for i in range(count)], dtype=torch.int64)
    got, failed = run_kernel(
        lib, A, seeds, 30, rows, 0, n, operands, kernel.operands, copies=copies
    )
    assert failed == [0, 0] and torch.equal(got, want)
    assert torch.equal(got[:, 0], seeds)


def test_ids_out_of_range_set_the_flag(mh_walk):
    A, node, operands, lib, kernel = mh_walk
    keys = torch.zeros(node.attrs["num_ordinals"], dtype=torch.int64)
    got, failed = run_kernel(
        lib, A, torch.tensor([A.num_nodes + 5]), 30, keys, 1, 0, operands, kernel.operands
    )
    assert failed == [0, 1] and bool((got == -1).all())  # a bad seed walks nowhere


def test_the_inlined_walks_read_cached_columns_from_the_cache(mh_walk):
    """A GPU cache of altered rows (about a third of the edges): the walks are the torch
    code's on the graph whose cached columns hold them, and the counters add the inlined
    walks' row reads (one per move: the step's walk of one step never stops) and the hits."""
    A, node, operands, lib, kernel = mh_walk
    c = A.csc
    deg = c.indptr.diff()
    cols = C.choose_columns(c.indptr, 8 * int(deg.sum()) // 3, 8)
    index, ptr = gs.formats.gather_segments(c.indptr, cols)
    slot = torch.full((A.num_nodes,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    crows = (c.rows[index] + 1) % A.num_nodes
    altered = c.rows.clone()
    altered[index] = crows
    seeds = torch.randint(0, A.num_nodes, (2000,), generator=torch.Generator().manual_seed(2))
    key = KeyRange.of(seed=11, ordinal=3, count=node.attrs["num_ordinals"], batch=5)
    first, phases = node.attrs["first"], node.attrs["phases"]
    want = reference.fused_walk(replace(c, rows=altered), seeds, first, phases, 30, key, **operands)
    assert not torch.equal(want, reference.fused_walk(c, seeds, first, phases, 30, key, **operands))
    keys = torch.tensor([signed(k) for k in key.keys], dtype=torch.int64)
    counters = torch.zeros(2, dtype=torch.int64)
    got, failed = run_kernel(
        lib, A, seeds, 30, keys, 1, 0, operands, kernel.operands, cache=(slot, crows, counters)
    )
    assert failed == [0, 0] and torch.equal(got, want)
    reads, hits = counters.tolist()
    assert 0 < hits < reads


def test_int32_rows_and_an_int32_cache_walk_alike(mh_walk, tmp_path):
    """Compiled for int32 rows (``GS_ROW=int``, as ``fused_walk.py`` compiles it for a UVA
    graph of int32 host rows and cache), the generated kernel reads both as int32: the torch
    code's walks, with or without a cache of a third of the edges (altered, to show its
    reads)."""
    A, node, operands, _, kernel = mh_walk
    lib = build(tmp_path, kernel, head="#define GS_ROW int\n")
    c = A.csc
    cols = C.choose_columns(c.indptr, 8 * int(c.indptr.diff().sum()) // 3, 8)
    index, ptr = gs.formats.gather_segments(c.indptr, cols)
    slot = torch.full((A.num_nodes,), -1, dtype=torch.int64)
    slot[cols] = ptr[:-1]
    crows = (c.rows[index] + 1) % A.num_nodes
    altered = c.rows.clone()
    altered[index] = crows
    seeds = torch.randint(0, A.num_nodes, (2000,), generator=torch.Generator().manual_seed(2))
    key = KeyRange.of(seed=11, ordinal=3, count=node.attrs["num_ordinals"], batch=5)
    first, phases = node.attrs["first"], node.attrs["phases"]
    keys = torch.tensor([signed(k) for k in key.keys], dtype=torch.int64)
    for graph, cache in (
        (c, None),
        (replace(c, rows=altered), (slot, crows.int(), torch.zeros(2, dtype=torch.int64))),
    ):
        want = reference.fused_walk(graph, seeds, first, phases, 30, key, **operands)
        got, failed = run_kernel(
            lib, A, seeds, 30, keys, 1, 0, operands, kernel.operands, cache=cache, rows=c.rows.int()
        )
        assert failed == [0, 0] and torch.equal(got, want)
