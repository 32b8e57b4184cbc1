"""Helpers shared by the test modules: ``from helpers import example, same, ...``.

``tests/`` is on ``sys.path`` while pytest runs: in pytest's default ``prepend`` import
mode, importing ``tests/conftest.py`` (not in a package) puts its folder there, so every
test module, ``tests/passes/`` included, imports this file as ``helpers``.
"""

import functools
import importlib.util
import itertools
import multiprocessing
import pathlib
import shutil
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch

import gsample as gs
from gsample.formats.csc import CSC
from gsample.ir import format_lines

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"


# ----------------------------------------------------------------------------- kernels as C++
#: CUDA's names as plain C++, for the tests that compile a kernel source for the CPU: one
#: "thread" (block 0, thread 0 of a 1 x 1 grid) runs every grid-stride loop; atomics act on
#: plain memory
CUDA_AS_CPP = r"""
#include <cmath>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __launch_bounds__(...)
struct gs_dim3 { long long x; };
static gs_dim3 blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
template <typename T>
static inline T atomicCAS(T* p, T c, T v) { T o = *p; if (o == c) *p = v; return o; }
template <typename T>
static inline T atomicMin(T* p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <typename T> static inline T atomicAdd(T* p, T v) { T o = *p; *p = o + v; return o; }
static inline int atomicExch(int* p, int v) { int o = *p; *p = v; return o; }
"""
#: CUDA's names as C++ for a kernel whose threads work together (``__syncthreads``,
#: ``__shared__``, a warp's shuffles, ballots and matches): each CUDA thread a ``std::thread``
#: (link with ``-pthread``), so a barrier waits for real threads and an atomic races real
#: threads; a block's threads run at once and the blocks one after another, so ``__shared__``
#: can be one static copy. A warp's collective is an exchange through its 32 slots between
#: two barriers of its lanes: every lane must reach it, as a converged warp does on the GPU,
#: and lanes that diverge around one (or around ``__syncthreads``) hang, which the test's
#: watchdog ends. Each lane also leaves its mask there, so the collective can see the rule
#: CUDA leaves undefined when broken: a lane in its own mask, the lanes it names passing the
#: same mask, a shuffle reading a lane of it. A call breaking it is counted in
#: ``gs_bad_masks`` for the test to assert on (groups from ``__match_any_sync`` are disjoint
#: partial masks, which the rule allows). ``gs_launch(grid, block, kernel)`` runs ``kernel()``
#: (a lambda that calls the kernel) as that launch. Not a model of the GPU's memory order,
#: and a collective here is also a barrier of its lanes: a ``__syncwarp`` missing next to one
#: cannot show.
CUDA_THREADS_AS_CPP = r"""
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <pthread.h>
#include <thread>
#include <vector>
#define __device__
#define __forceinline__ inline
#define __global__
#define __restrict__
#define __launch_bounds__(...)
#define __shared__ static
// unsigned as CUDA's: an index computed in 32 bits wraps as it would on the GPU
struct gs_dim3 { unsigned x; };
static thread_local gs_dim3 threadIdx = {0}, blockIdx = {0};
static gs_dim3 blockDim = {1}, gridDim = {1};
using std::isinf;
using std::isnan;
template <typename T> static inline T min(T a, T b) { return b < a ? b : a; }
template <typename T> static inline T max(T a, T b) { return a < b ? b : a; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline long long __double_as_longlong(double x) {
    long long y;
    memcpy(&y, &x, 8);
    return y;
}
static inline double __longlong_as_double(long long x) {
    double y;
    memcpy(&y, &x, 8);
    return y;
}
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(unsigned x) { return x ? __builtin_clz(x) : 32; }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
#define GS_SC __ATOMIC_SEQ_CST
template <typename T> static inline T atomicAdd(T* p, T v) {
    return __atomic_fetch_add(p, v, GS_SC);
}
template <typename T> static inline T atomicOr(T* p, T v) { return __atomic_fetch_or(p, v, GS_SC); }
template <typename T> static inline T atomicCAS(T* p, T c, T v) {
    __atomic_compare_exchange_n(p, &c, v, false, GS_SC, GS_SC);
    return c;
}
template <typename T> static inline T atomicMin(T* p, T v) {
    T o = __atomic_load_n(p, GS_SC);
    while (v < o && !__atomic_compare_exchange_n(p, &o, v, false, GS_SC, GS_SC)) {}
    return o;
}
template <typename T> static inline T atomicMax(T* p, T v) {
    T o = __atomic_load_n(p, GS_SC);
    while (o < v && !__atomic_compare_exchange_n(p, &o, v, false, GS_SC, GS_SC)) {}
    return o;
}

struct gs_warp_t { pthread_barrier_t bar; unsigned long long slot[32]; unsigned mask[32]; };
static pthread_barrier_t gs_block_bar;
static std::vector<gs_warp_t> gs_warps;
static unsigned long long gs_bad_masks = 0;
static inline void __syncthreads() { pthread_barrier_wait(&gs_block_bar); }
template <typename T> static inline unsigned long long gs_bits(T v) {
    static_assert(sizeof(T) <= 8, "a slot holds 8 bytes");
    unsigned long long s = 0;
    memcpy(&s, &v, sizeof(T));
    return s;
}
template <typename T> static inline T gs_from(unsigned long long s) {
    T v;
    memcpy(&v, &s, sizeof(T));
    return v;
}
// One collective: every lane's value and mask, then out(slots) while they are still there
// (lane `src`, when a shuffle reads one, must be in the mask).
template <typename F>
static inline void gs_collective(unsigned mask, unsigned long long v, int src, F out) {
    gs_warp_t& w = gs_warps[threadIdx.x >> 5];
    const int lane = threadIdx.x & 31;
    w.slot[lane] = v;
    w.mask[lane] = mask;
    pthread_barrier_wait(&w.bar);
    bool bad = !((mask >> lane) & 1u) || (src >= 0 && src < 32 && !((mask >> src) & 1u));
    for (int l = 0; l < 32; ++l) bad |= ((mask >> l) & 1u) && w.mask[l] != mask;
    if (bad) __atomic_fetch_add(&gs_bad_masks, 1ULL, GS_SC);
    out(w.slot);
    pthread_barrier_wait(&w.bar);
}
static inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
    gs_collective(mask, 0, -1, [](const unsigned long long*) {});
}
// lane `src`'s value (src outside the warp: the lane's own, as __shfl_up/down_sync give)
template <typename T> static inline T gs_shuffle(unsigned mask, T v, int src) {
    T got = v;
    gs_collective(mask, gs_bits(v), src, [&](const unsigned long long* s) {
        if (src >= 0 && src < 32) got = gs_from<T>(s[src]);
    });
    return got;
}
template <typename T> static inline T __shfl_sync(unsigned m, T v, int src) {
    return gs_shuffle(m, v, src & 31);
}
template <typename T> static inline T __shfl_up_sync(unsigned m, T v, unsigned d) {
    return gs_shuffle(m, v, (int)(threadIdx.x & 31) - (int)d);
}
template <typename T> static inline T __shfl_down_sync(unsigned m, T v, unsigned d) {
    return gs_shuffle(m, v, (int)(threadIdx.x & 31) + (int)d);
}
// the lanes of the mask whose slot is nonzero (any_equal: equals this lane's)
static inline unsigned gs_lanes(unsigned mask, unsigned long long v, bool any_equal) {
    unsigned got = 0;
    gs_collective(mask, v, -1, [&](const unsigned long long* s) {
        for (int l = 0; l < 32; ++l)
            if (any_equal ? s[l] == v : s[l] != 0) got |= 1u << l;
    });
    return got & mask;
}
static inline unsigned __ballot_sync(unsigned m, int p) { return gs_lanes(m, p != 0, false); }
static inline bool __all_sync(unsigned m, int p) { return __ballot_sync(m, p) == m; }
template <typename T> static inline unsigned __match_any_sync(unsigned m, T v) {
    return gs_lanes(m, gs_bits(v), true);
}

// kernel() over `grid` blocks of `block` threads, a block at a time, the last block first
// where `reversed` (as on a GPU, where blocks start in any order); the warps' barriers
// count 32 lanes, so a block must be whole warps (the kernels' launches are)
template <typename F>
static void gs_launch(long long grid, long long block, F kernel, bool reversed = false) {
    if (grid < 1 || block < 32 || block > 1024 || block % 32) {
        fprintf(stderr, "gs_launch: grid %lld, block %lld\n", grid, block);
        abort();
    }
    gridDim.x = grid;
    blockDim.x = block;
    gs_warps = std::vector<gs_warp_t>(block / 32);
    for (auto& w : gs_warps) pthread_barrier_init(&w.bar, nullptr, 32);
    pthread_barrier_init(&gs_block_bar, nullptr, block);
    for (long long i = 0; i < grid; ++i) {
        const long long b = reversed ? grid - 1 - i : i;
        std::vector<std::thread> threads;
        for (long long t = 0; t < block; ++t)
            threads.emplace_back([=] {
                blockIdx.x = b;
                threadIdx.x = t;
                kernel();
            });
        for (auto& th : threads) th.join();
    }
    pthread_barrier_destroy(&gs_block_bar);
    for (auto& w : gs_warps) pthread_barrier_destroy(&w.bar);
}
"""
#: The kernels-as-C++ programs' side of :func:`run_int64_program`: ``read_vec()``, the next
#: int64 array on stdin (its length, then its entries; an empty one past the input's end or
#: on a short read, which the program's own checks of its arrays' sizes then catch), and
#: ``write_vec(v)``, an array to stdout the same way, each entry converted to ``long long``;
#: ``copy<T>(v)``, ``v`` as an exact-size ``std::vector<T>`` (AddressSanitizer bounds it).
#: Include it after the kernel sources: ``vec`` is its array type, and a common local name.
INT64_IO_CPP = r"""
#include <cstdio>
#include <vector>
typedef std::vector<long long> vec;
static vec read_vec() {                 // one array: its length, then its entries
    long long n = 0;
    if (fread(&n, 8, 1, stdin) != 1) return vec();
    vec v(n);
    if (n && fread(v.data(), 8, n, stdin) != (size_t)n) return vec();
    return v;
}
template <typename T> static void write_vec(const std::vector<T>& v) {
    long long n = v.size();
    fwrite(&n, 8, 1, stdout);
    for (const T& x : v) { long long y = (long long)x; fwrite(&y, 8, 1, stdout); }
}
// an array as its own exact-size allocation of T: AddressSanitizer's redzones bound it
template <typename T> static std::vector<T> copy(const vec& v) {
    return std::vector<T>(v.begin(), v.end());
}
"""
KERNELS = pathlib.Path(__file__).resolve().parents[1] / "kernels"
#: the C++ compiler the kernels-as-C++ tests build with (None: those tests skip)
CXX = shutil.which("g++") or shutil.which("c++")


def build_cpp(source: str, out: pathlib.Path, *options: str) -> subprocess.CompletedProcess:
    """Compile ``source`` (which includes kernel sources from ``kernels/``) to ``out`` (a
    program, or a library with ``-shared -fPIC``) with the kernels' float rules: no
    contraction, since the kernels round each product before they compare it. Returns the
    finished compiler run (its ``returncode`` and ``stderr`` for the caller to assert on)."""
    src = out.with_suffix(".cpp")
    src.write_text(source)
    return subprocess.run(
        [
            CXX,
            "-O1",
            "-std=c++17",
            "-ffp-contract=off",
            f"-I{KERNELS}",
            *options,
            str(src),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=False,
    )


#: C++ after :data:`INT64_IO_CPP` and a kernel file that defines ``gs_t`` (a float type):
#: reals travel as float64 bits in int64 vectors, read with ``reals`` and written with
#: ``write_reals``
FLOAT_IO_CPP = r"""
static std::vector<gs_t> reals(const vec& bits) {
    std::vector<gs_t> out(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) {
        double d;
        memcpy(&d, &bits[i], 8);
        out[i] = (gs_t)d;
    }
    return out;
}

static void write_reals(const std::vector<gs_t>& v) {
    vec bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
        const double d = (double)v[i];
        memcpy(&bits[i], &d, 8);
    }
    write_vec(bits);
}
"""


def build_float_kernels(tmp_path_factory, stem: str, program: str, ctype: str) -> pathlib.Path:
    """Build ``program`` (kernels as C++ after :data:`CUDA_THREADS_AS_CPP`, for the float type
    ``ctype``: ``GS_DTYPE0``) under AddressSanitizer (:func:`build_asan`) in a fresh folder of
    ``tmp_path_factory``; the executable's path. Skips where there is no C++ compiler."""
    exe = tmp_path_factory.mktemp(f"{stem}_{ctype}") / stem
    src = CUDA_THREADS_AS_CPP + f"#define GS_DTYPE0 {ctype}\n" + program
    return build_asan(src, exe, "-pthread", "-Wno-unknown-pragmas", required=False)


def build_asan(source: str, out: pathlib.Path, *options: str, required: bool = True):
    """Build the program ``out`` from ``source`` (:func:`build_cpp`, with ``options``) under
    AddressSanitizer: every exact-size array it allocates then bounds the kernels' reads and
    writes, a read or write past one ending the program with a report. Returns ``out``.

    Skips the calling test where there is no C++ compiler. Where the compiler has no
    AddressSanitizer runtime (the build fails naming the sanitizer): with ``required`` (the
    test is about memory safety) skips the test; without, builds the program unsanitized (the
    test's results are checked all the same)."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    done = build_cpp(source, out, *options, "-g", "-fsanitize=address", "-fno-omit-frame-pointer")
    if done.returncode and "sanitize" in done.stderr:
        if required:
            pytest.skip(f"no AddressSanitizer runtime: {done.stderr[-300:]}")
        done = build_cpp(source, out, *options)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def run_int64_program(exe, *arrays, timeout: float = 600) -> list:
    """Run the program ``exe`` (built with :data:`INT64_IO_CPP`) on int64 ``arrays``; the
    int64 arrays it writes back, in order (writable NumPy arrays).

    Each array (anything ``np.asarray`` takes as int64: a list, a NumPy array, a CPU tensor)
    goes to its stdin as its length, then its entries, all little-endian int64; its stdout
    must be whole arrays the same way. The program runs with AddressSanitizer's options for
    these tests (no leak report; a report ends it with a failing status) and must exit 0
    within ``timeout`` seconds: a sanitizer's report, a fault, an error status or a hang
    fails the calling test (the message: the end of its stderr)."""
    data = b"".join(
        struct.pack("<q", a.size) + a.tobytes()
        for a in (np.asarray(x, dtype="<i8") for x in arrays)
    )
    done = subprocess.run(
        [str(exe)],
        input=data,
        capture_output=True,
        check=False,
        timeout=timeout,
        env={"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=0"},
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    out, at, stdout = [], 0, done.stdout
    while at < len(stdout):
        (n,) = struct.unpack_from("<q", stdout, at)
        assert 0 <= n <= (len(stdout) - at - 8) // 8, f"array {len(out)}: {n} entries, cut short"
        out.append(np.frombuffer(stdout, "<i8", n, at + 8).copy())
        at += 8 + 8 * n
    return out


# ----------------------------------------------------------------------------- examples
@functools.cache
def example(name):
    """Import ``examples/<name>.py`` by path (the folder is not a package).

    ``examples/`` goes on ``sys.path`` first, as when the example runs as a script, so that
    its ``from common import ...`` finds ``examples/common.py``.
    """
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    path = EXAMPLES / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"gsample_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_workloads(A):
    """name -> (function, graph, keyword arguments): the catalogue's layer-wise and
    node-wise samplers, as the compile and pass tests call them."""
    N = A.num_nodes
    return {
        "graphsage": (example("graphsage").graphsage, A, {}),
        "graphsage-3": (example("graphsage").graphsage, A, {"fanouts": (15, 10, 5)}),
        "ladies": (example("ladies").ladies, example("ladies").normalize(A), {}),
        "ladies-small": (
            example("ladies").ladies,
            example("ladies").normalize(A),
            {"layers": (64, 64)},
        ),
        "fastgcn": (example("fastgcn").fastgcn, A, {"layers": (300, 300)}),
        "fastgcn-degree": (
            example("fastgcn").fastgcn,
            A,
            {"layers": (300, 300), "degree": A.sum(axis=1)},
        ),
        "shadow": (example("shadow").shadow, A, {}),
        "pass_sampler": (
            example("pass_sampler").pass_sampler,
            A,
            example("pass_sampler").random_inputs(N, num_features=8, hidden=16),
        ),
    }


def host_syncs(fn) -> list:
    """The host synchronisations ``fn()`` makes on the GPU: what PyTorch's sync debug mode
    warns of (a stream's or the device's wait, a blocking copy), and each wait for a CUDA
    event (``torch.cuda.Event.synchronize``: a replayed graph's read-back), which that mode
    does not see."""
    import warnings
    from unittest import mock

    torch.cuda.synchronize()
    waits = []
    original = torch.cuda.Event.synchronize

    def counted(event):
        waits.append("torch.cuda.Event.synchronize")
        return original(event)

    torch.cuda.set_sync_debug_mode("warn")
    try:
        with (
            warnings.catch_warnings(record=True) as caught,
            mock.patch.object(torch.cuda.Event, "synchronize", counted),
        ):
            warnings.simplefilter("always")
            fn()
    finally:
        torch.cuda.set_sync_debug_mode(0)
    return [str(w.message) for w in caught if "synchroniz" in str(w.message)] + waits


def hop_sample(seed: int, *, copies=None, n=40, C=30, k=6, row_space=False, grouped=True):
    """A random hop's sample for ``first_reached``: ``(A, slot, batches)``. Few nodes, so
    pairs repeat; columns grouped by (batch, slot) as the disjoint program's frontiers
    (``grouped``) or not; ``copies``: a super-batch of that many mini-batches (ids
    ``b * n + v``); ``row_space``: local rows into ``row_ids``."""
    g = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, k + 1, (C,), generator=g)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
    E = int(indptr[-1])
    nb = copies or 1
    batch = torch.sort(torch.randint(0, nb, (C,), generator=g)).values
    slot = torch.randint(0, 5, (C,), generator=g)
    if grouped:
        slot = torch.sort(slot + batch * 5).values - batch * 5
    else:
        slot = slot[torch.randperm(C, generator=g)]
    cols = batch * n + torch.randint(0, n, (C,), generator=g)
    ecol = torch.repeat_interleave(torch.arange(C), deg)
    rows = batch[ecol] * n + torch.randint(0, n, (E,), generator=g)
    row_ids = None
    if row_space:
        row_ids, rows = torch.unique(rows, return_inverse=True)
    A = CSC(num_nodes=nb * n, indptr=indptr, rows=rows, row_ids=row_ids, col_ids=cols, eids=None)
    return A, slot, (None if copies is None else (copies, n))


def random_batch(g, n, cols, edges_per_col, row_space, values=False, eids=False):
    """A random mini-batch CSC over ``n`` nodes with ``cols`` columns (repeats allowed), each
    of 0 to ``edges_per_col`` edges, drawn from the generator ``g``; ``row_space``: rows
    local to a random set of row ids; ``values`` / ``eids``: random edge values and ids
    (drawn last, so the structure is the same either way)."""
    col_ids = torch.randint(0, n, (cols,), generator=g)
    counts = torch.randint(0, edges_per_col + 1, (cols,), generator=g)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    E = int(indptr[-1])
    if row_space:
        R = int(torch.randint(1, n, (1,), generator=g))
        row_ids = torch.randperm(n, generator=g)[:R]
        rows = torch.randint(0, R, (E,), generator=g)
    else:
        row_ids, rows = None, torch.randint(0, n, (E,), generator=g)
    return CSC(
        num_nodes=n,
        indptr=indptr,
        rows=rows,
        row_ids=row_ids,
        col_ids=col_ids,
        values=torch.rand(E, generator=g) if values else None,
        eids=torch.randint(0, 10 * n, (E,), generator=g) if eids else None,
    )


def random_seeds(n=64, seed=1, num_nodes=2000):
    """The first ``n`` of a fixed permutation of ``num_nodes`` node ids (``seed`` picks it)."""
    return torch.randperm(num_nodes, generator=torch.Generator().manual_seed(seed))[:n]


def dense_ladies(A, seeds, layers=(150, 150)):
    """A user's own LADIES: ``p / p.sum()``, a dense torch sum (the catalogue's normalises by
    the exact ``(sub ** 2).sum()``)."""
    blocks = []
    for k in layers:
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1)
        s = sub.collective_sample(k, node_probs=p / p.sum().clamp(min=1e-30))
        s = s.div(p[s.row_ids], axis=1)
        blocks.append(s.div(s.sum(axis=0), axis=0))
        seeds = s.all_nodes()
    return blocks


def ladies_layer(A, seeds, k=100):
    """One LADIES layer: rows drawn by their squared column-slice weights."""
    sub = A[:, seeds]
    p = (sub**2).sum(axis=1)
    return sub.collective_sample(k, node_probs=p / p.sum())


def graphsage(A, seeds, fanouts=(25, 10), replace=False):
    """GraphSAGE-style sampling: ``k`` in-neighbours per frontier node, layer after layer."""
    blocks = []
    for k in fanouts:
        s = A[:, seeds].individual_sample(k, replace=replace)
        blocks.append(s)
        seeds = s.all_nodes()
    return blocks


# ----------------------------------------------------------------------------- comparing
_STORAGE = ("indptr", "rows", "row_ids", "col_ids", "values", "eids")


def _tensor_difference(a, b):
    if not isinstance(b, torch.Tensor):
        return f"a tensor vs {type(b).__name__}"
    if (a.dtype, a.shape, a.device) != (b.dtype, b.shape, b.device):
        return (
            f"{a.dtype} {tuple(a.shape)} on {a.device} vs {b.dtype} {tuple(b.shape)} on {b.device}"
        )
    if a.is_floating_point() or a.is_complex():  # NaN equals NaN, nothing else
        nan = a.isnan()
        if not torch.equal(nan, b.isnan()):
            return "NaN at different places"
        if not torch.equal(a[~nan], b[~nan]):
            return "values differ"
    elif not torch.equal(a, b):
        return "values differ"
    return None


def difference(a, b, where="out"):
    """Where and how ``a`` and ``b`` first differ, or ``None`` when they are identical.

    Identical means: matrices with the same shape, edges (rows, columns, edge ids), row and
    column ids and values, stored alike (every storage field equal, ``None`` where the other
    is ``None``); tensors of the same dtype, shape, device and values (NaN equal to NaN);
    lists, tuples and dicts of the same type and length holding identical items; anything
    else ``==``.
    """
    if isinstance(a, gs.Matrix):
        if not isinstance(b, gs.Matrix):
            return f"{where}: a matrix vs {type(b).__name__}"
        if a.shape != b.shape:
            return f"{where}: shapes {a.shape} vs {b.shape}"
        views = list(zip(("rows", "cols", "edge ids"), a.edges(), b.edges()))
        views += [
            (what, getattr(a, what), getattr(b, what)) for what in ("row_ids", "col_ids", "values")
        ]
        for what, x, y in views:
            d = _tensor_difference(x, y)
            if d:
                return f"{where}: {what}: {d}"
        if a.csc.num_nodes != b.csc.num_nodes:
            return f"{where}: num_nodes {a.csc.num_nodes} vs {b.csc.num_nodes}"
        for field in _STORAGE:
            x, y = getattr(a.csc, field), getattr(b.csc, field)
            if x is None or y is None:
                if x is not y:
                    return f"{where}: storage {field}: one is None, the other a tensor"
                continue
            d = _tensor_difference(x, y)
            if d:
                return f"{where}: storage {field}: {d}"
        return None
    if isinstance(a, torch.Tensor):
        d = _tensor_difference(a, b)
        return d and f"{where}: {d}"
    if isinstance(a, (list, tuple, dict)):
        if type(a) is not type(b):
            return f"{where}: {type(a).__name__} vs {type(b).__name__}"
        if len(a) != len(b):
            return f"{where}: lengths {len(a)} vs {len(b)}"
        if isinstance(a, dict) and a.keys() != b.keys():
            return f"{where}: keys {list(a)} vs {list(b)}"
        for k in a if isinstance(a, dict) else range(len(a)):
            d = difference(a[k], b[k], f"{where}[{k!r}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} vs {b!r}"


def same(a, b):
    """``a`` and ``b`` hold identical samples (see :func:`difference`)."""
    return difference(a, b) is None


def assert_same(a, b, where="out"):
    """Assert ``same(a, b)``, the message saying where they first differ."""
    d = difference(a, b, where)
    assert d is None, d


def assert_same_csc(a, b, where="out"):
    """Assert two CSC storages identical: every field (``None`` where the other is ``None``,
    same dtype, shape and device) and ``num_nodes`` (see :func:`difference`)."""
    assert_same(gs.Matrix(a), gs.Matrix(b), where)


# ----------------------------------------------------------------------------- compiling
def programs(fn, *args, passes=None, **kwargs):
    """``(traced IR, IR after passes)`` of ``fn`` on these arguments, both verified."""
    before = gs.compile(fn, passes=[]).program(*args, **kwargs).verify()
    after = gs.compile(fn, passes=passes).program(*args, **kwargs).verify()
    return before, after


def check_compiled_equals_eager(fn, *args, passes=None, calls=2, seed=0, distinct=False, **kwargs):
    """Compile ``fn`` with ``passes`` (``None``: the default pipeline) and check it samples
    as eager: ``calls`` compiled calls after ``gs.manual_seed(seed)`` return exactly what
    ``calls`` eager calls return after the same seed. With ``distinct``, consecutive calls
    must also differ (the random stream advanced between them). Returns the compiled sampler.
    """
    gs.manual_seed(seed)
    eager = [fn(*args, **kwargs) for _ in range(calls)]
    compiled = gs.compile(fn, passes=passes)
    gs.manual_seed(seed)
    got = [compiled(*args, **kwargs) for _ in range(calls)]
    for i, (e, c) in enumerate(zip(eager, got)):
        d = difference(c, e, f"call {i}")
        assert d is None, d + "\n" + format_lines(compiled.program(*args, **kwargs))
    if distinct:
        assert all(not same(x, y) for x, y in itertools.pairwise(got)), (
            "the stream did not advance between the calls"
        )
    return compiled


def weighted_sampler(A, seeds, v, fanouts=(5, 5)):
    """Probabilities from edge-map chains (the pipeline fuses them: FUSED_EDGE_MAP_REDUCE)."""
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        probs = ((sub**2) * 3 + 0.1).div(v[sub.col_ids], axis=0)
        bias = (sub.add(v[sub.row_ids], axis=1) ** 2).sum(axis=1)
        s = sub.individual_sample(k, probs=probs)
        blocks.append(s)
        blocks.append(s.collective_sample(k, node_probs=bias[s.row_ids]))
        seeds = s.all_nodes()
    return blocks


def run_seeded(fn, *args, seed=0, **kwargs):
    """``fn(*args, **kwargs)`` after ``gs.manual_seed(seed)``."""
    gs.manual_seed(seed)
    return fn(*args, **kwargs)


def loader_outputs(A, sampler, seeds, batch_size, **options):
    """The outputs of one ``gs.DataLoader`` epoch, in order (unshuffled, a fixed epoch seed)."""
    return [
        b.out
        for b in gs.DataLoader(A, sampler, seeds, batch_size, shuffle=False, seed=7, **options)
    ]


def check_super_batched(A, fn, seeds, batch_size, n):
    """``gs.compile(fn)`` through a loader super-batched ``n`` draws, mini-batch by mini-batch,
    what the eager function draws one mini-batch at a time (:func:`loader_outputs`)."""
    ref = loader_outputs(A, fn, seeds, batch_size)
    loader = gs.DataLoader(
        A, gs.compile(fn), seeds, batch_size, shuffle=False, seed=7, super_batch=n
    )
    assert loader.super_batch_size == n
    got = [b.out for b in loader]
    assert len(got) == len(ref) == -(-len(seeds) // batch_size)
    for i, (g, r) in enumerate(zip(got, ref)):
        assert_same(g, r, f"super_batch={n}, batch {i}")


def ops(graph):
    """The ops of an IR graph's nodes, in order."""
    return [n.op for n in graph.nodes]


def cached(graph):
    """An IR graph's CACHED nodes (values pre-computed once per graph)."""
    from gsample.ir import Op

    return [n for n in graph.nodes if n.op is Op.CACHED]


def spawn_ranks(worker, out, world=2) -> list:
    """Run ``worker(rank, world, init_method, out)`` in ``world`` gloo processes
    (``torch.multiprocessing.spawn``) and load what each rank saved to ``out/rank<r>.pt``."""
    import torch.multiprocessing as mp

    mp.spawn(worker, args=(world, gs.distributed.local_init_method(), str(out)), nprocs=world)
    return [torch.load(pathlib.Path(out) / f"rank{r}.pt", weights_only=False) for r in range(world)]


def assert_stream_after_loader(graph, plain, sampler, seeds, batch, super_batch):
    """After an epoch of ``sampler`` super-batched, the caller's random stream is where an
    epoch of ``plain`` one mini-batch at a time leaves it (the next draw is the same)."""
    gs.manual_seed(9)
    list(gs.DataLoader(graph, plain, seeds, batch))
    after = graph[:, seeds].individual_sample(2)
    gs.manual_seed(9)
    list(gs.DataLoader(graph, sampler, seeds, batch, super_batch=super_batch))
    assert_same(graph[:, seeds].individual_sample(2), after)


def assert_same_batches(a: list, b: list) -> None:
    """Batch for batch (PyG ``Data`` batches): the same type and keys, every tensor equal
    (values, dtype, device), every other value (``batch_size``, ``num_sampled_nodes``, ...)
    equal."""
    assert len(a) == len(b)
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        assert type(x) is type(y)
        keys = sorted(x.keys())  # (iterating a Data yields its (key, value) pairs)
        assert keys == sorted(y.keys()), i
        for key in keys:
            u, v = x[key], y[key]
            if isinstance(u, torch.Tensor):
                assert u.dtype == v.dtype and u.device == v.device, (i, key)
                assert torch.equal(u, v), (i, key)
            else:
                assert u == v, (i, key)


def super_batch_runs(loader) -> list:
    """The sizes of the super-batched runs of a PyG loader (``loader.dataset.super``),
    recorded from now on, one entry per run."""
    sizes, run = [], loader.dataset.super.run

    def record(parts, epoch_seed, first):
        sizes.append(len(parts))
        return run(parts, epoch_seed, first)

    loader.dataset.super.run = record
    return sizes


def loader_batches(loader, epochs: int = 1) -> list:
    """Every batch of ``epochs`` epochs of ``loader``."""
    return [b for _ in range(epochs) for b in loader]


def in_forked_child(target, *args, timeout: float = 60):
    """What ``target(*args, conn)`` sends on ``conn``, run in a forked child process (the
    native CPU code's fork safety: a child of a parent that ran OpenMP teams must not
    hang); fails if the child does not answer within ``timeout`` seconds."""
    parent, child = multiprocessing.get_context("fork").Pipe()
    proc = multiprocessing.get_context("fork").Process(target=target, args=(*args, child))
    proc.start()
    try:
        assert parent.poll(timeout), "the forked child hung"
        return parent.recv()
    finally:
        proc.join(5)
        if proc.is_alive():
            proc.kill()
