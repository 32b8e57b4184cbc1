"""Random walks on CPU tensors in native code, from ``kernels/walk.cu`` compiled as C++.

The torch code of :mod:`.walk` is the semantic reference; on the CPU it pays some twenty-five
tensor operations per step (the 64-bit hash alone is eleven), which for mini-batches of a
thousand walkers is mostly per-operation overhead. Here the CUDA kernel's source is compiled
as C++ (CUDA's names defined as plain C++: ``SHIM``) with a CPU driver (``DRIVER``) that runs
the kernel's loop body, step for step, with the kernel's device functions for every draw, so
the walks are the kernel's, which are the reference's, bit for bit. The driver keeps a few
walkers in flight per thread (their memory loads overlap, where one walker at a time waits
on each load) over ``torch.get_num_threads()`` threads; the kernel itself is there too (``kernel=``,
:data:`KERNEL`), and ``tests/backend/test_walk_native.py`` compares both with the torch code
(``tests/backend/test_walk_kernel_cpu.py`` compares the kernel source alone).

It is built once, at first use, with the system's C++ compiler (``$CXX``, else ``g++`` /
``c++``), ``-O3 -ffp-contract=off`` (no contraction: products are rounded before they are
compared, as in torch) and OpenMP where the compiler has it, and kept on disk
(``$GSAMPLE_CACHE/cpu``, default ``~/.cache/gsample/cpu``) under a hash of the sources, the
options and the compiler. Without a compiler, with ``GSAMPLE_NATIVE_CPU=0``, or when the build
fails (a warning, once), :func:`available` is False and the walks run in torch.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import pathlib
import shutil
import subprocess
import tempfile
import threading
import warnings

import torch

from gsample.backend.registry import kernels_dir
from gsample.base.random import GOLDEN, M1, M2, MASK64, combine, signed

#: CUDA's names as plain C++, shared by the native CPU drivers (each adds what its kernel
#: source needs, then includes it)
CUDA_AS_CPP = r"""
#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif
#define __device__
#define __forceinline__ inline __attribute__((always_inline))
#define __global__
#define __restrict__ __restrict
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
// (hash.cuh's hash table uses these)
template <typename T> static inline T atomicCAS(T* p, T c, T v) {
    __atomic_compare_exchange_n(p, &c, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED); return c; }
template <typename T> static inline T atomicMin(T* p, T v) {
    T o = __atomic_load_n(p, __ATOMIC_RELAXED);
    while (v < o && !__atomic_compare_exchange_n(p, &o, v, true, __ATOMIC_RELAXED,
                                                 __ATOMIC_RELAXED)) {}
    return o; }
"""
# CUDA's names as plain C++ (as tests/backend/test_walk_kernel_cpu.py compiles the kernel), then
# kernels/walk.cu itself: its device functions (the hash, the draws, the edge test) and its
# kernel, which a CPU thread runs as block ``i`` of a grid of ``T`` one-thread blocks (the
# coordinates are thread-local; the atomics are real ones).
SHIM = (
    CUDA_AS_CPP
    + r"""
struct gs_dim3 { long long x; };
static thread_local gs_dim3 blockIdx = {0}, gridDim = {1};
static const gs_dim3 threadIdx = {0}, blockDim = {1};
static inline int atomicExch(int* p, int v) { return __atomic_exchange_n(p, v, __ATOMIC_RELAXED); }
// the GPU cache's counters (host walks pass none): a one-thread block's warp has no other lane
template <typename T> static inline T atomicAdd(T* p, T v) {
    return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
template <typename T> static inline T __shfl_down_sync(unsigned, T, int) { return T(0); }
#include "walk.cu"
"""
)

# The CPU driver. One walker at a time, as a kernel thread runs, leaves a CPU core waiting on
# each step's dependent loads (indptr[cur], then rows[e]) and its division, walker after
# walker; here each thread keeps `group` walkers in flight and advances them a step in turn,
# so their loads overlap instead of waiting one after another. A walker's step is the
# kernel's loop body, statement for statement, with the kernel's device functions for every
# draw: the same draws and comparisons, so the same walks (a walker's row depends on its own
# draws only; threads take blocks of walkers from a shared counter, in any order). Two
# differences of form: a walker keeps combine(k, pos), the first half of each of its words,
# and node2vec's edge test searches without data-dependent branches (the same answer), only
# where the coin falls between 1 and 1/q (as the kernel's lazy search).
#: an id's range test and a bitmap's test-and-set, shared by the native relabelling passes
#: (``relabel_native``, ``reached_native``); needs ``gs_i64`` / ``gs_u64``
BITS = r"""
static inline bool in_range(gs_i64 v, gs_i64 n) { return (gs_u64)v < (gs_u64)n; }

// set bit v of bits; false when it was set already
static inline bool test_set(gs_u64* bits, gs_i64 v) {
    gs_u64& w = bits[v >> 6];
    const gs_u64 m = 1ull << (v & 63);
    if (w & m) return false;
    w |= m;
    return true;
}
"""

#: ``parallel(threads, openmp, body)``, shared by the native CPU drivers: ``body(i, T)`` on
#: ``T`` threads, an OpenMP team with ``openmp`` (the runtime torch's operators use, so its
#: idle threads are the ones that run), else ``std::thread``s (a forked child: libgomp's pool
#: does not survive a fork)
PARALLEL = r"""
template <typename F> static void parallel(int threads, int openmp, F body) {
    if (threads <= 1) { body(0, 1); return; }
#ifdef _OPENMP
    if (openmp) {
#pragma omp parallel num_threads(threads)
        body(omp_get_thread_num(), omp_get_num_threads());
        return;
    }
#endif
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (int i = 1; i < threads; ++i) pool.emplace_back(body, i, threads);
    body(0, threads);
    for (auto& t : pool) t.join();
}
"""

DRIVER = (
    r"""
#define GS_CPU_GROUP_MAX 32
#define GS_CPU_BLOCK 64

namespace gs_cpu {

struct Walk {                    // the kernel's arguments
    const gs_i64* indptr; const gs_i64* rows; const gs_i64* sorted_rows; const gs_i64* alias;
    const gs_i64* seeds; gs_i64 W, L, N; gs_u64 key0; const gs_u64* key; gs_i64 n;
    int node2vec; double inv_p, inv_q, amax, c1, c2, c3; gs_i64* out; int* failed;
};

struct Walker {                  // the kernel's locals of one walker (h: combine(k, pos), the
    gs_u64 h;                    // first half of each of its words gs_word(k, pos, draw))
    gs_i64 root, shift, cur, prev, t; gs_i64* o;
};

// gs_word(k, pos, draw) = gs_combine(gs_combine(k, pos), draw), its first half kept
static inline gs_u64 word(const Walker& s, gs_i64 draw) { return gs_combine(s.h, draw); }

// gs_has_row's answer (whether x is among the sorted rows [lo, hi)), without branches on
// the data: halving down to a span of at most GS_CPU_SCAN rows (the last row <= x is in
// it), then a scan of the span (a cache line or two, no dependent loads)
#define GS_CPU_SCAN 16
static inline bool has_row(const gs_i64* __restrict rows, gs_i64 lo, gs_i64 hi, gs_i64 x) {
    gs_i64 len = hi - lo;
    const gs_i64* p = rows + lo;
    while (len > GS_CPU_SCAN) {
        const gs_i64 half = len >> 1;
        p = p[half] <= x ? p + half : p;
        len -= half;
    }
    bool found = false;
    for (gs_i64 i = 0; i < len; ++i) found |= p[i] == x;
    return found;
}

// the kernel's prologue for walker w
static inline void start(const Walk& A, Walker& s, gs_i64 w) {
    const gs_i64 id = A.seeds[w];
    const gs_i64 b = A.n > 0 ? id / A.n : 0;
    s.shift = b * A.n;
    const gs_u64 k = A.key == nullptr ? A.key0 : gs_combine(A.key[0], (gs_i64)A.key[1] + b);
    const gs_i64 pos = A.n > 0 ? w - gs_first_at_least(A.seeds, A.W, s.shift) : w;
    s.h = gs_combine(k, pos);
    s.o = A.out + w * (A.L + 1);
    s.root = id - s.shift;
    s.o[0] = id;
    s.cur = s.root;
    s.prev = -1;
    s.t = 0;
}

// step s.t of the kernel's loop (s.t < L); false when the walk is over (a stop writes -1 to
// the rest of its row, as the kernel's epilogue). Compiled for each combination of the
// kernel's run-time switches (TELEPORT: c3 > 0; ALIAS: alias != null; NODE2VEC: node2vec).
template <bool TELEPORT, bool ALIAS, bool NODE2VEC>
static inline bool step(const Walk& A, Walker& s) {
    const gs_i64 t = s.t;
    const gs_i64 base = t * GS_WALK_STRIDE;
    gs_i64 nxt = -1;
    bool move = true, stop = false;
    if (TELEPORT) {
        const double u = gs_uniform_float(word(s, base));
        if (u < A.c1) stop = true;                                   // the walk stops
        else if (u < A.c2) { nxt = s.root; move = false; }           // back to the root
        else if (u < A.c3) {                                         // anywhere
            nxt = gs_uniform_int(word(s, base + 1), A.N);
            move = false;
        }
    }
    if (!stop && move) {
        const gs_i64 lo = A.indptr[s.cur], deg = A.indptr[s.cur + 1] - lo;
        if (deg == 0) {
            stop = true;                                             // no in-edges
        } else {
            const bool second = NODE2VEC && t > 0;
            const gs_i64 plo = second ? A.indptr[s.prev] : 0;
            const gs_i64 phi = second ? A.indptr[s.prev + 1] : 0;
            for (gs_i64 a = 0;; ++a) {
                const gs_i64 slot = base + 2 + 3 * a;
                gs_i64 e = lo + gs_uniform_int(word(s, slot), deg);
                if (ALIAS) {
                    const gs_u64 coin = word(s, slot + 1) >> 11;
                    if (!(coin < (gs_u64)A.alias[2 * e])) e = A.alias[2 * e + 1];
                }
                const gs_i64 x = A.rows[e];
                if (!second) { nxt = x; break; }
                const double u = __dmul_rn(gs_uniform_float(word(s, slot + 2)),
                                           A.amax);
                // alpha: 1/p back to prev, 1 to a row of column prev, 1/q elsewhere; the
                // search only where its answer decides (the kernel's GS_WALK_LAZY)
                bool accept;
                if (x == s.prev) accept = u < A.inv_p;
                else if ((u < 1.0) == (u < A.inv_q)) accept = u < 1.0;
                else accept = u < (has_row(A.sorted_rows, plo, phi, x) ? 1.0 : A.inv_q);
                if (accept) { nxt = x; break; }
                if (a + 1 >= GS_WALK_MAX_ATTEMPTS) { atomicExch(A.failed, 1); break; }
            }
            if (nxt < 0) stop = true;
        }
    }
    if (stop) {
        for (gs_i64 i = t + 1; i <= A.L; ++i) s.o[i] = -1;
        return false;
    }
    s.o[t + 1] = nxt + s.shift;
    s.prev = s.cur;
    s.cur = nxt;
    s.t = t + 1;
    return s.t < A.L;
}

// one thread's share: blocks of walkers from the counter `next`, `group` of them in flight
template <bool TELEPORT, bool ALIAS, bool NODE2VEC>
static void run(const Walk& A, gs_i64* next, int group) {
    Walker slot[GS_CPU_GROUP_MAX];
    gs_i64 w = 0, end = 0;
    bool exhausted = false;
    auto take = [&](Walker& s) -> bool {
        if (w == end) {
            if (exhausted) return false;
            const gs_i64 b = __atomic_fetch_add(next, (gs_i64)GS_CPU_BLOCK, __ATOMIC_RELAXED);
            if (b >= A.W) { exhausted = true; return false; }
            w = b;
            end = b + GS_CPU_BLOCK < A.W ? b + GS_CPU_BLOCK : A.W;
        }
        start(A, s, w++);
        return true;
    };
    int live = 0;
    while (live < group && take(slot[live])) ++live;
    while (live > 0) {
        for (int i = 0; i < live;) {
            if (step<TELEPORT, ALIAS, NODE2VEC>(A, slot[i]) || take(slot[i])) { ++i; continue; }
            slot[i] = slot[--live];               // done, and no walker left to start
        }
    }
}

template <bool TELEPORT, bool ALIAS>
static void run(const Walk& A, gs_i64* next, int group) {
    if (A.node2vec) run<TELEPORT, ALIAS, true>(A, next, group);
    else run<TELEPORT, ALIAS, false>(A, next, group);
}

static void run(const Walk& A, gs_i64* next, int group) {
    const bool teleport = A.c3 > 0.0, alias = A.alias != nullptr;
    if (teleport && alias) run<true, true>(A, next, group);
    else if (teleport) run<true, false>(A, next, group);
    else if (alias) run<false, true>(A, next, group);
    else run<false, false>(A, next, group);
}

"""
    + PARALLEL
    + r"""
}  // namespace gs_cpu

// The walks of gs_random_walk's arguments on `threads` threads, `group` walkers in flight per
// thread; `kernel`: run gs_random_walk itself instead (one walker at a time per thread).
// Returns the kernel's flags: 1, node2vec's rejection ran past its bound; 2, a seed outside
// [0, M) (the driver's walkers take seeds the host checked; the kernel guards its own).
extern "C" int gs_random_walk_cpu(
        const gs_i64* indptr, const gs_i64* rows, const gs_i64* sorted_rows, const gs_i64* alias,
        const gs_i64* seeds, gs_i64 W, gs_i64 L, gs_i64 N, gs_u64 key0, const gs_u64* key,
        gs_i64 n, gs_i64 M, int node2vec, double inv_p, double inv_q, double amax, double c1,
        double c2, double c3, gs_i64* out, int threads, int openmp, int group, int kernel) {
    int failed[2] = {0, 0};
    if (kernel) {
        gs_cpu::parallel(threads, openmp, [&](int i, int of) {
            blockIdx.x = i;
            gridDim.x = of;
            gs_random_walk(indptr, rows, sorted_rows, alias, seeds, W, L, N, key0, key, n, M,
                           node2vec, inv_p, inv_q, amax, c1, c2, c3, out, failed, nullptr,
                           nullptr, 0, nullptr);
        });
    } else if (L <= 0) {
        for (gs_i64 w = 0; w < W; ++w) out[w] = seeds[w];
    } else {
        const gs_cpu::Walk A{indptr, rows, sorted_rows, alias, seeds, W, L, N, key0, key, n,
                             node2vec, inv_p, inv_q, amax, c1, c2, c3, out, failed};
        gs_i64 next = 0;
        if (group < 1) group = 1;
        if (group > GS_CPU_GROUP_MAX) group = GS_CPU_GROUP_MAX;
        gs_cpu::parallel(threads, openmp, [&](int, int) { gs_cpu::run(A, &next, group); });
    }
    return __atomic_load_n(&failed[0], __ATOMIC_RELAXED)
        | (__atomic_load_n(&failed[1], __ATOMIC_RELAXED) << 1);
}
"""
)

#: compiler options (``-ffp-contract=off``: no fused multiply-add, as torch's comparisons);
#: with OpenMP when the compiler has it (the process then shares torch's ``libgomp.so.1``)
OPTIONS = (
    "-O3",
    "-std=c++17",
    "-ffp-contract=off",
    "-fno-fast-math",
    "-shared",
    "-fPIC",
    "-pthread",
)
OPENMP = ("-fopenmp",)
#: walker steps per thread below which more threads do not pay for starting them
STEPS_PER_THREAD = 1 << 15
#: threads of a walk (None: ``torch.get_num_threads()``, fewer for small walks)
THREADS = None
#: walkers in flight per thread (1: one at a time; at most 32)
GROUP = 8
#: run the kernel itself (one walker at a time per thread) instead of the driver
KERNEL = False


def cache_dir() -> pathlib.Path:
    """Where native CPU libraries are kept (``$GSAMPLE_CACHE/cpu``)."""
    root = os.environ.get("GSAMPLE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "gsample"
    )
    return pathlib.Path(root) / "cpu"


def compiler():
    """The C++ compiler (``$CXX``, else ``g++`` / ``c++``), or None."""
    for name in (os.environ.get("CXX"), "g++", "c++"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


def enabled() -> bool:
    """Whether the native path may be used (``GSAMPLE_NATIVE_CPU=0`` turns it off)."""
    return os.environ.get("GSAMPLE_NATIVE_CPU", "1").strip().lower() not in (
        "0",
        "false",
        "no",
        "off",
    )


#: the process that imported this module: OpenMP there, std::threads in a forked child
#: (libgomp hangs in a child whose parent ran OpenMP teams, torch's included)
PARENT_PID = os.getpid()


def once(make):
    """A function giving ``make()`` (a native library's loaded functions), made on its first
    call under a lock and kept; None, never retried, where ``make`` returned None (no
    compiler, a failed build). Each native module's ``build`` is one.

    Examples
    --------
    >>> build = once(lambda: compile_library("walk", SHIM + DRIVER, [], "random walks"))
    >>> build() is build()
    True
    """
    lock, made = threading.Lock(), []

    def get():
        if not made:
            with lock:
                if not made:
                    made.append(make())
        return made[0]

    return get


def build():
    """The compiled ``gs_random_walk_cpu`` (ctypes), building it on first use; None when
    there is no compiler or the build fails."""
    return _BUILT()


_BUILT = once(lambda: _build())  # _build: below


def compile_library(name: str, source: str, headers: list, what: str):
    """``source`` compiled as a shared library (ctypes), built once per source, headers,
    options and compiler into the cache (``$GSAMPLE_CACHE/cpu/<name>-<hash>.so``), with
    OpenMP where the compiler has it, else ``std::thread``; None, with a warning naming
    ``what``, when there is no compiler or the build fails (the caller runs in torch).

    Parameters
    ----------
    name : str
        The library's name in the cache (``"walk"``, ``"nodewise"``).
    source : str
        The C++ source (a shim, kernel headers by ``#include``, a driver).
    headers : list of pathlib.Path
        The files it includes from ``kernels/`` (their text goes into the hash).
    what : str
        What runs in torch instead, for the warning (``"the walks"``).

    Examples
    --------
    >>> dll = compile_library("walk", SHIM + DRIVER, [kernels_dir() / "walk.cu"], "the walks")
    """
    cxx = compiler()
    if cxx is None:
        return None
    kernels = kernels_dir()
    try:
        version = subprocess.run(
            [cxx, "--version"], capture_output=True, text=True, check=False
        ).stdout
        digest = hashlib.sha256(
            "\0".join(
                [
                    source,
                    *(h.read_text() for h in headers),
                    " ".join(OPTIONS + OPENMP),
                    cxx,
                    version,
                ]
            ).encode()
        ).hexdigest()[:32]
        cache = cache_dir()
        lib = cache / f"{name}-{digest}.so"
        if not lib.is_file():
            cache.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=cache) as tmp:
                src = pathlib.Path(tmp) / f"{name}_cpu.cpp"
                src.write_text(source)
                so = pathlib.Path(tmp) / f"{name}.so"
                for extra in (OPENMP, ()):  # without OpenMP: std::thread
                    done = subprocess.run(
                        [cxx, *OPTIONS, *extra, f"-I{kernels}", str(src), "-o", str(so)],
                        capture_output=True,
                        text=True,
                        check=False,
                    )
                    if done.returncode == 0:
                        break
                else:
                    warnings.warn(
                        f"gsample: the native CPU {name} code did not build; {what} run in "
                        f"torch ({done.stderr.strip()[-2000:]})",
                        RuntimeWarning,
                        stacklevel=4,
                    )
                    return None
                os.replace(so, lib)  # atomic: concurrent builders agree
        return ctypes.CDLL(str(lib))
    except OSError as err:
        warnings.warn(
            f"gsample: the native CPU {name} code is unavailable ({err}); {what} run in torch",
            RuntimeWarning,
            stacklevel=4,
        )
        return None


def _build():
    kernels = kernels_dir()
    if not (kernels / "walk.cu").is_file():
        return None
    # every header walk.cu may include (walkstep.cuh, hash.cuh, search.cuh, ...)
    headers = [kernels / "walk.cu", *sorted(kernels.glob("*.cuh"))]
    dll = compile_library("walk", SHIM + DRIVER, headers, "the walks")
    if dll is None:
        return None
    fn = dll.gs_random_walk_cpu
    i64, f64, ptr = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p
    fn.argtypes = [
        ptr,
        ptr,
        ptr,
        ptr,
        ptr,
        i64,
        i64,
        i64,
        ctypes.c_uint64,
        ptr,
        i64,
        i64,
        ctypes.c_int,
        f64,
        f64,
        f64,
        f64,
        f64,
        f64,
        ptr,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
    ]
    fn.restype = ctypes.c_int
    return fn


def available() -> bool:
    """Whether :func:`random_walk` runs (enabled, and built or buildable)."""
    return enabled() and build() is not None


# ----------------------------------------------------------------------------- keys
def _unmix64(z: int) -> int:
    """The inverse of :func:`gsample.base.random.mix64` (a bijection of 64-bit words)."""
    z = _unxorshift(z, 31)
    z = (z * pow(M2, -1, 1 << 64)) & MASK64
    z = _unxorshift(z, 27)
    z = (z * pow(M1, -1, 1 << 64)) & MASK64
    return _unxorshift(z, 30)


def _unxorshift(y: int, s: int) -> int:
    """``x`` with ``x ^ (x >> s) == y``."""
    x = y
    for _ in range(64 // s + 1):
        x = y ^ (x >> s)
    return x & MASK64


def device_key(keys: tuple):
    """``(prefix, 0)`` with ``combine(prefix, b) == keys[b]`` for every ``b``: the kernel's
    ``key`` for a super-batch whose batch keys are ``keys``; None when no such pair exists
    (keys not of consecutive mini-batches of one op)."""
    # combine(p, b) = mix64(p + (b + 1) * GOLDEN): p = unmix64(keys[0]) - GOLDEN
    prefix = (_unmix64(keys[0]) - GOLDEN) & MASK64
    if all(combine(prefix, b) == k for b, k in enumerate(keys)):
        return prefix
    return None


# ----------------------------------------------------------------------------- walks
def random_walk(
    indptr,
    rows,
    sorted_rows,
    alias,
    seeds,
    length: int,
    num_nodes: int,
    key0: int,
    prefix,
    n: int,
    node2vec: bool,
    inv_p: float,
    inv_q: float,
    c1: float,
    c2: float,
    c3: float,
    kernel=None,
    space: int | None = None,
):
    """The kernel's walks (``out``, shape (W, length + 1)) for CPU int64 tensors, or None
    when the native path is unavailable. ``prefix`` (an int, with ``n``): a super-batch's
    key (:func:`device_key`), else ``key0`` is the op's key; ``kernel`` (default
    :data:`KERNEL`): run the kernel itself, one walker at a time per thread (tests compare it
    with the driver); ``space``: the seeds' id space (default ``num_nodes``; a super-batch's
    ``copies * n``), which the caller has checked them against (the kernel guards them all
    the same). Raises when node2vec's rejection runs past its bound, or an ``IndexError``
    when the kernel met a seed outside ``[0, space)``."""
    fn = build()
    if fn is None:
        return None
    W = seeds.numel()
    out = torch.empty((W, length + 1), dtype=torch.int64)  # every entry written
    if W == 0:
        return out
    key = None if prefix is None else torch.tensor([signed(prefix), 0], dtype=torch.int64)
    threads = THREADS or max(
        1, min(torch.get_num_threads(), (W * max(length, 1)) // STEPS_PER_THREAD)
    )

    def ptr(t):
        return None if t is None else t.data_ptr()

    failed = fn(
        ptr(indptr),
        ptr(rows),
        ptr(sorted_rows),
        ptr(alias),
        ptr(seeds),
        W,
        length,
        num_nodes,
        key0 & MASK64,
        ptr(key),
        n,
        num_nodes if space is None else space,
        int(node2vec),
        inv_p,
        inv_q,
        max(inv_p, 1.0, inv_q),
        c1,
        c2,
        c3,
        ptr(out),
        threads,
        int(os.getpid() == PARENT_PID),
        GROUP,
        int(KERNEL if kernel is None else kernel),
    )
    if failed & 2:
        raise IndexError(
            "seeds: a node id is out of range for a graph of "
            f"{num_nodes if space is None else space} nodes"
        )
    if failed:
        raise RuntimeError(
            "random_walk: node2vec rejection sampling ran past its bound of "
            "2**20 attempts (p or q too extreme)"
        )
    return out


__all__ = [
    "BITS",
    "CUDA_AS_CPP",
    "PARALLEL",
    "PARENT_PID",
    "available",
    "build",
    "cache_dir",
    "compile_library",
    "compiler",
    "device_key",
    "enabled",
    "random_walk",
]
