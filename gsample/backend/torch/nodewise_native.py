"""Node-wise sampling on CPU tensors in native code (C++ with OpenMP): uniform, and weighted
with replacement.

The torch code of :mod:`.select` / :mod:`.fused_select` is the semantic reference; on the CPU
it pays some thirty tensor operations a call (Floyd's vectorised fixed point, the 64-bit hash
of eleven operations, sorts, ``repeat_interleave``), which for a mini-batch's frontier of a
few thousand columns is mostly per-operation overhead. Here one C++ pass counts each column's
sampled edges and scans them into the result's ``indptr``, and a second draws every column's
edges and gathers their rows and edge ids, columns spread over ``torch.get_num_threads()``
threads. The draws are the reference's, by ``kernels/hash.cuh``'s device functions (the
keyed hash, ``gs_uniform_int``) compiled as C++, column by column (the CUDA kernel,
``kernels/nodewise.cu``, draws a column with a warp's shuffles, which one CPU thread cannot
run; its sequential branch is the model of the driver here):

* without replacement, a column of ``deg <= k`` edges keeps them all; a larger one makes
  Floyd's ``k`` draws (draw ``i``: ``t = uniform_int(word(c, i), j + 1)``, ``j = deg - k +
  i``; ``t``, or ``j`` when ``t`` was drawn before), kept sorted as they are made (a binary
  search finds an earlier draw, an insertion keeps the order);
* with replacement, draw ``i`` of a non-empty column takes ``uniform_int(word(c, i), deg)``,
  then the ``k`` draws are sorted;
* weighted with replacement (``method="cdf"``, checked weights, an op key), the inverse CDF
  of ``select._weighted_with`` step for step: each column's float64 weights divided by its
  largest, one running sum over the frontier's edges in column order (a sequential pass, as
  torch's ``cumsum``: the same roundings), draw ``t`` searching ``before + u * total`` in
  its column's part of the sum (the answer of a search of the whole sum) and pulled back to
  the column's last edge of positive weight;

so the result (CSC order, the same edge positions, rows and edge ids) is the reference's,
bit for bit; ``tests/backend/test_nodewise_native.py`` compares them. A super-batch's key
(:class:`~gsample.base.random.BatchKeys` of consecutive mini-batches; uniform draws, and
weighted ones of :func:`individual_sample`) is taken as the CUDA kernel takes it: a prefix
(``walk_native.device_key``) and each column's batch and position within its batch; a
weighted super-batch's running sum starts again at each batch's first column, as the
reference's (``select._weighted_with_per_batch``: a mini-batch's sum, as on its own), in
the same pass over every batch (the reference's is a Python loop of tensor code per
mini-batch). Weighted draws without replacement (exponential keys: a
``log`` whose last bit may differ from torch's), alias draws, unchecked weights and other
inputs run in torch.

Every index the native code reads is checked there first (a column's segment against the
segments, its ``indptr`` bounds against the edges, a super-batch's ids against its id space
and their grouping by batch); a failed check leaves the call to the torch code, which raises
its own error. The library is built once and cached as :mod:`.walk_native`'s
(``$GSAMPLE_CACHE/cpu``); without a compiler, with ``GSAMPLE_NATIVE_CPU=0`` or after a failed
build the torch code runs.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import replace as dc_replace

import torch

from gsample.backend.registry import kernels_dir
from gsample.backend.torch import walk_native
from gsample.base.random import MASK64, BatchKeys
from gsample.formats.csc import CSC

# CUDA's names as plain C++, then the headers' device functions (the hash, the searches)
SHIM = walk_native.CUDA_AS_CPP + '#include "search.cuh"\n'

# The CPU driver: two calls. gs_nodewise_count checks every column and writes the result's
# indptr (counts, then a scan: per-thread sums of contiguous chunks, then each chunk's
# offsets); gs_nodewise_sample draws each column's edges into its slots (threads take blocks
# of columns from a shared counter: a column's work is at most k draws, blocks keep the
# threads busy whatever the degrees).
DRIVER = (
    r"""
#define GS_NW_BLOCK 64

namespace gs_nw {

struct Args {
    const gs_i64* indptr; gs_i64 nseg;   // nseg + 1 entries: the segments
    const gs_i64* rows; const gs_i64* eids; gs_i64 E;   // E entries each (eids: or null)
    const gs_i64* seg;                   // (C,): column c's segment; null: see segment()
    const gs_i64* ids;                   // (C,): the columns' (encoded) ids, with n > 0
    gs_i64 C, n, M;                      // a super-batch: ids b * n + v in [0, M)
    int decode;                          // n > 0: column c is the graph's node v (segment
                                         // v), its rows move to batch b (+ b * n)
    gs_u64 key;                          // n == 0: the op's key; else the batches' prefix
    gs_i64 k; int replace;
    gs_i64* indptr_out; gs_i64* pos_out; gs_i64* rows_out; gs_i64* eids_out;
    const gs_u64* hs;                    // (C,) or null: column c's key, combine(base, position)
};

// column c's batch (0 without a super-batch), or -1 when its id is outside [0, M)
static inline gs_i64 batch_of(const Args& A, gs_i64 c) {
    if (A.n <= 0) return 0;
    const gs_i64 id = A.ids[c];
    return gs_in_range(id, A.M) ? id / A.n : -1;
}

// column c's segment (given its batch b), or -1 when outside [0, nseg)
static inline gs_i64 segment(const Args& A, gs_i64 c, gs_i64 b) {
    const gs_i64 s = A.seg != nullptr ? A.seg[c] : (A.decode ? A.ids[c] - b * A.n : c);
    return gs_in_range(s, A.nseg) ? s : -1;
}

// column c's first edge and degree; false when its indptr entries are not within [0, E]
static inline bool bounds(const Args& A, gs_i64 s, gs_i64* lo, gs_i64* deg) {
    const gs_i64 a = A.indptr[s], z = A.indptr[s + 1];
    if (a < 0 || z < a || z > A.E) return false;
    *lo = a;
    *deg = z - a;
    return true;
}

// the count of column c (>= 0), or -1 / -2 / -3: an id or segment out of range, bad
// indptr bounds, a super-batch's ids not grouped by batch
static inline gs_i64 count(const Args& A, gs_i64 c) {
    const gs_i64 b = batch_of(A, c);
    if (b < 0) return -1;
    if (A.n > 0 && c > 0) {
        const gs_i64 prev = A.ids[c - 1];
        if (gs_in_range(prev, A.M) && prev / A.n > b) return -3;
    }
    const gs_i64 s = segment(A, c, b);
    if (s < 0) return -1;
    gs_i64 lo, deg;
    if (!bounds(A, s, &lo, &deg)) return -2;
    return A.replace ? (deg > 0 ? A.k : 0) : (deg < A.k ? deg : A.k);
}

// column c's edges into its slots (counted and checked before)
static inline void sample(const Args& A, gs_i64 c) {
    const gs_i64 out = A.indptr_out[c], cnt = A.indptr_out[c + 1] - out;
    if (cnt == 0) return;
    const gs_i64 b = batch_of(A, c);
    const gs_i64 s = segment(A, c, b);
    gs_i64 lo, deg;
    bounds(A, s, &lo, &deg);
    const gs_i64 shift = A.decode ? b * A.n : 0;
    const gs_i64* R = A.rows + lo;
    const gs_i64* I = A.eids != nullptr ? A.eids + lo : nullptr;
    gs_i64* P = A.pos_out + out;
    gs_i64* Ro = A.rows_out + out;
    gs_i64* Io = A.eids_out != nullptr ? A.eids_out + out : nullptr;
    if (!A.replace && deg <= A.k) {                     // every edge
        for (gs_i64 j = 0; j < deg; ++j) {
            P[j] = lo + j;
            Ro[j] = R[j] + shift;
            if (Io) Io[j] = I[j];
        }
        return;
    }
    // the column's position (within its batch) keys its draws: word(c, i) = combine(h, i)
    gs_u64 h;
    if (A.hs != nullptr) {
        h = A.hs[c];
    } else {
        gs_u64 base = A.key;
        gs_i64 position = c;
        if (A.n > 0) {
            base = gs_combine(A.key, b);
            position = c - gs_first_at_least(A.ids, A.C, b * A.n);
        }
        h = gs_combine(base, position);
    }
    const gs_i64 k = A.k;
    if (A.replace) {
        for (gs_i64 i = 0; i < k; ++i) P[i] = gs_uniform_int(gs_combine(h, i), deg);
        std::sort(P, P + k);
    } else {
        // Floyd's draws, P[0 .. i) sorted: draw i is t, or j = deg - k + i (larger than every
        // earlier draw, so it goes last) when t is among them
        for (gs_i64 i = 0; i < k; ++i) {
            const gs_i64 j = deg - k + i;
            const gs_i64 t = gs_uniform_int(gs_combine(h, i), j + 1);
            gs_i64* at = std::lower_bound(P, P + i, t);
            if (at != P + i && *at == t) {
                P[i] = j;
            } else {
                std::memmove(at + 1, at, (size_t)(P + i - at) * sizeof(gs_i64));
                *at = t;
            }
        }
    }
    for (gs_i64 i = 0; i < k; ++i) {                    // offsets -> edges, rows, edge ids
        const gs_i64 d = P[i];
        Ro[i] = R[d] + shift;
        if (Io) Io[i] = I[d];
        P[i] = lo + d;
    }
}

"""
    + walk_native.PARALLEL
    + r"""
static Args args(const gs_i64* indptr, gs_i64 nseg, const gs_i64* rows, const gs_i64* eids,
                 gs_i64 E, const gs_i64* seg, const gs_i64* ids, gs_i64 C, gs_i64 n, gs_i64 M,
                 int decode, gs_u64 key, gs_i64 k, int replace, gs_i64* indptr_out,
                 gs_i64* pos_out, gs_i64* rows_out, gs_i64* eids_out) {
    return Args{indptr, nseg, rows, eids, E, seg, ids, C, n, M, decode, key, k, replace,
                indptr_out, pos_out, rows_out, eids_out, nullptr};
}

// body(c) for every column c < C, handed out in blocks of GS_NW_BLOCK to `threads` threads
// (hubs make columns uneven: a static split would leave threads idle)
template <typename F> static void for_columns(gs_i64 C, int threads, int openmp, F body) {
    gs_i64 next = 0;
    parallel(threads, openmp, [&](int, int) {
        for (;;) {
            const gs_i64 c0 = __atomic_fetch_add(&next, (gs_i64)GS_NW_BLOCK, __ATOMIC_RELAXED);
            if (c0 >= C) break;
            const gs_i64 c1 = c0 + GS_NW_BLOCK < C ? c0 + GS_NW_BLOCK : C;
            for (gs_i64 c = c0; c < c1; ++c) body(c);
        }
    });
}

}  // namespace gs_nw

#define GS_NW_ARGS                                                                        \
    const gs_i64 *indptr, gs_i64 nseg, const gs_i64 *rows, const gs_i64 *eids, gs_i64 E,  \
        const gs_i64 *seg, const gs_i64 *ids, gs_i64 C, gs_i64 n, gs_i64 M, int decode,   \
        gs_u64 key, gs_i64 k, int replace, gs_i64 *indptr_out
#define GS_NW_PASS indptr, nseg, rows, eids, E, seg, ids, C, n, M, decode, key, k, replace, \
        indptr_out

// The result's indptr (C + 1 entries) on `threads` threads; returns its last entry (the
// edges sampled), or -1 / -2 / -3 (gs_nw::count) when a column fails its checks.
extern "C" gs_i64 gs_nodewise_count(GS_NW_ARGS, int threads, int openmp) {
    const gs_nw::Args A = gs_nw::args(GS_NW_PASS, nullptr, nullptr, nullptr);
    indptr_out[0] = 0;
    if (threads < 1) threads = 1;
    std::vector<gs_i64> sums(threads + 1, 0);
    int failed = 0;
    gs_nw::parallel(threads, openmp, [&](int i, int T) {
        const gs_i64 c0 = C * i / T, c1 = C * (i + 1) / T;
        gs_i64 sum = 0;
        for (gs_i64 c = c0; c < c1; ++c) {
            const gs_i64 cnt = gs_nw::count(A, c);
            if (cnt < 0) { __atomic_store_n(&failed, (int)-cnt, __ATOMIC_RELAXED); break; }
            indptr_out[c + 1] = cnt;
            sum += cnt;
        }
        sums[i + 1] = sum;
    });
    if (failed) return -(gs_i64)failed;
    for (int i = 0; i < threads; ++i) sums[i + 1] += sums[i];
    gs_nw::parallel(threads, openmp, [&](int i, int T) {
        const gs_i64 c0 = C * i / T, c1 = C * (i + 1) / T;
        gs_i64 run = sums[i];
        for (gs_i64 c = c0; c < c1; ++c) indptr_out[c + 1] = run += indptr_out[c + 1];
    });
    return sums[threads];
}

// Every column's edges (after gs_nodewise_count, with the same arguments): pos_out (the
// edges' positions), rows_out (their rows, + b * n with `decode`), eids_out (their ids, with
// eids non-null), indptr_out's total entries each, on `threads` threads.
extern "C" void gs_nodewise_sample(GS_NW_ARGS, gs_i64* pos_out, gs_i64* rows_out,
                                   gs_i64* eids_out, int threads, int openmp) {
    const gs_nw::Args A = gs_nw::args(GS_NW_PASS, pos_out, rows_out, eids_out);
    gs_nw::for_columns(C, threads, openmp, [&](gs_i64 c) { gs_nw::sample(A, c); });
}

// gs_nodewise_sample with column c keyed by hs[c] (its draws' words combine(hs[c], i)):
// columns whose keys are not (op key, position), as a disjoint sampler's (each column keyed
// by its seed, gsample.backend.torch.temporal.seed_keys)
extern "C" void gs_nodewise_sample_keyed(GS_NW_ARGS, const gs_u64* hs, gs_i64* pos_out,
                                         gs_i64* rows_out, gs_i64* eids_out, int threads,
                                         int openmp) {
    gs_nw::Args A = gs_nw::args(GS_NW_PASS, pos_out, rows_out, eids_out);
    A.hs = hs;
    gs_nw::for_columns(C, threads, openmp, [&](gs_i64 c) { gs_nw::sample(A, c); });
}

// out[c]: the first position in [start[c], end[c]) whose time is above t[c] (times sorted
// within the range: a temporal sampler's time order), by the binary search of
// gsample.backend.torch.temporal._after (mid = (lo + hi) / 2, "time[mid] <= t" goes right),
// so NaN compares as it does there; a range outside [0, E] or reversed gives start[c] and
// reads nothing. `f64`: float64 times, else int64.
template <typename T>
static void gs_after_of(const T* time, const gs_i64* start, const gs_i64* end, const T* t,
                        gs_i64 C, gs_i64 E, gs_i64* out) {
    for (gs_i64 c = 0; c < C; ++c) {
        gs_i64 lo = start[c], hi = end[c];
        if (lo < 0 || hi < lo || hi > E) { out[c] = lo; continue; }
        const T x = t[c];
        while (lo < hi) {
            const gs_i64 mid = lo + (hi - lo) / 2;
            if (time[mid] <= x) lo = mid + 1; else hi = mid;
        }
        out[c] = lo;
    }
}

extern "C" void gs_nodewise_after(const void* time, int f64, const gs_i64* start,
                                  const gs_i64* end, const void* t, gs_i64 C, gs_i64 E,
                                  gs_i64* out) {
    if (f64) {
        gs_after_of((const double*)time, start, end, (const double*)t, C, E, out);
    } else {
        gs_after_of((const gs_i64*)time, start, end, (const gs_i64*)t, C, E, out);
    }
}

// ----------------------------------------------------------------------------- weighted
// Weighted draws with replacement by the inverse CDF (select._weighted_with, step for step):
// each column's weights (float64) divided by its largest (at least the smallest normal
// double), one running sum over the frontier's edges in column order (torch's cumsum: one
// sequential pass, so the same roundings), draw t of a column with a positive total finds
// before + u * total (u = uniform_float(word(c, t))) in the running sum (the first entry
// above it; the column's own range holds the answer of a search of the whole sum), pulled
// back to the column's last edge of positive weight; then the column's draws are sorted.
namespace gs_nw {

static inline double weight(const void* probs, int f32, gs_i64 e) {
    return f32 ? (double)((const float*)probs)[e] : ((const double*)probs)[e];
}

// column c's draws (after gs_nodewise_weighted_count): fptr, the frontier's edge offsets
// (gs_nodewise_count with k past every degree), cum / before / total / last as that call left
// them; a super-batch's column is keyed by its batch and its position within it (as
// gs_nw::sample keys it)
static inline void sample_weighted(const Args& A, gs_i64 c, const gs_i64* fptr,
                                   const double* cum, const double* before,
                                   const double* total, const gs_i64* last) {
    const gs_i64 out = A.indptr_out[c], cnt = A.indptr_out[c + 1] - out;
    if (cnt == 0) return;
    const gs_i64 b = batch_of(A, c);
    const gs_i64 s = segment(A, c, b);
    gs_i64 lo, deg;
    bounds(A, s, &lo, &deg);
    const gs_i64 shift = A.decode ? b * A.n : 0;
    const gs_i64 f0 = fptr[c], f1 = fptr[c + 1], end = last[c];
    const double from = before[c], sum = total[c];
    gs_u64 base = A.key;
    gs_i64 position = c;
    if (A.n > 0) {
        base = gs_combine(A.key, b);
        position = c - gs_first_at_least(A.ids, A.C, b * A.n);
    }
    const gs_u64 h = gs_combine(base, position);
    gs_i64* P = A.pos_out + out;
    for (gs_i64 t = 0; t < A.k; ++t) {
        const double target = from + gs_uniform_float(gs_combine(h, t)) * sum;
        gs_i64 e = std::upper_bound(cum + f0, cum + f1, target) - cum;
        if (e > end) e = end;
        if (e < f0) e = f0;                             // (never: a bound on the reads)
        P[t] = e - f0;
    }
    std::sort(P, P + A.k);
    const gs_i64* R = A.rows + lo;
    const gs_i64* I = A.eids != nullptr ? A.eids + lo : nullptr;
    for (gs_i64 t = 0; t < A.k; ++t) {
        const gs_i64 d = P[t];
        A.rows_out[out + t] = R[d] + shift;
        if (I) A.eids_out[out + t] = I[d];
        P[t] = lo + d;
    }
}

}  // namespace gs_nw

// The running sum of the frontier's scaled weights (cum, fptr[C] entries), its value before
// each column (before, C), each column's total (total, C: its sum less before), each
// column's last edge of positive scaled weight (last, C; -1: none) and the result's indptr
// (k edges for a column of positive total), in one sequential pass (the roundings of
// torch's cumsum); returns the edges sampled. A super-batch's sum starts again at 0 at each
// batch's first column: a mini-batch's sum, as on its own (the rounding of a sum carried
// over from the batches before would change a rare draw). The columns were checked by
// gs_nodewise_count (fptr).
extern "C" gs_i64 gs_nodewise_weighted_count(GS_NW_ARGS, const void* probs, int f32,
                                             const gs_i64* fptr, double* cum, double* before,
                                             double* total, gs_i64* last) {
    const gs_nw::Args A = gs_nw::args(GS_NW_PASS, nullptr, nullptr, nullptr);
    const double tiny = 2.2250738585072014e-308;
    double acc = 0.0;
    gs_i64 drawn = 0, batch = 0;
    indptr_out[0] = 0;
    for (gs_i64 c = 0; c < C; ++c) {
        const gs_i64 b = gs_nw::batch_of(A, c);
        if (b != batch) {                               // (ids grouped by batch: checked)
            batch = b;
            acc = 0.0;
        }
        gs_i64 lo, deg;
        gs_nw::bounds(A, gs_nw::segment(A, c, b), &lo, &deg);
        double top = 0.0;                               // scatter_reduce amax over zeros
        for (gs_i64 j = 0; j < deg; ++j) {
            const double w = gs_nw::weight(probs, f32, lo + j);
            if (w > top) top = w;
        }
        const double scale = top > tiny ? top : tiny;   // clamp_min(tiny)
        gs_i64 end = -1;
        double* S = cum + fptr[c];
        const double from = acc;
        for (gs_i64 j = 0; j < deg; ++j) {
            const double w = gs_nw::weight(probs, f32, lo + j) / scale;
            acc = acc + w;
            S[j] = acc;
            if (w > 0.0) end = fptr[c] + j;
        }
        last[c] = end;
        before[c] = from;
        total[c] = acc - from;
        drawn += total[c] > 0.0 ? k : 0;
        indptr_out[c + 1] = drawn;
    }
    return drawn;
}

// Every column's weighted draws (after gs_nodewise_weighted_count), as gs_nodewise_sample.
extern "C" void gs_nodewise_weighted_sample(GS_NW_ARGS, const gs_i64* fptr, const double* cum,
                                            const double* before, const double* total,
                                            const gs_i64* last, gs_i64* pos_out,
                                            gs_i64* rows_out, gs_i64* eids_out, int threads,
                                            int openmp) {
    const gs_nw::Args A = gs_nw::args(GS_NW_PASS, pos_out, rows_out, eids_out);
    gs_nw::for_columns(C, threads, openmp, [&](gs_i64 c) {
        gs_nw::sample_weighted(A, c, fptr, cum, before, total, last);
    });
}
"""
)

#: draws per thread below which more threads do not pay for starting them (a team's start
#: and join cost tens of microseconds, more on a loaded machine)
DRAWS_PER_THREAD = 1 << 14
#: columns per thread below which the count and scan run on one thread (two loads a column)
COLUMNS_PER_THREAD = 1 << 16
#: threads of a call (None: ``torch.get_num_threads()``, fewer for small frontiers)
THREADS = None
#: frontier columns x k past which sampling with replacement runs in torch (which first
#: checks that the draws fit in memory)
LARGE = 1 << 26


def enabled() -> bool:
    """Whether the native path may be used (``GSAMPLE_NATIVE_CPU=0`` turns it off)."""
    return walk_native.enabled()


def build():
    """The compiled functions (``gs_nodewise_count``, ``gs_nodewise_sample``,
    ``gs_nodewise_weighted_count``, ``gs_nodewise_weighted_sample``,
    ``gs_nodewise_sample_keyed``, ``gs_nodewise_after``; ctypes), building them on first
    use; None when there is no compiler or the build fails."""
    return _BUILT()


_BUILT = walk_native.once(lambda: _build())  # _build: below


def available() -> bool:
    """Whether the native sampling runs (enabled, and built or buildable)."""
    return enabled() and build() is not None


def _build():
    kernels = kernels_dir()
    if not (kernels / "search.cuh").is_file():
        return None
    dll = walk_native.compile_library(
        "nodewise", SHIM + DRIVER, sorted(kernels.glob("*.cuh")), "node-wise draws"
    )
    if dll is None:
        return None
    i64, ptr, cint = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    common = [ptr, i64, ptr, ptr, i64, ptr, ptr, i64, i64, i64, cint, ctypes.c_uint64, i64]
    common += [cint, ptr]
    count, sample = dll.gs_nodewise_count, dll.gs_nodewise_sample
    wcount, wsample = dll.gs_nodewise_weighted_count, dll.gs_nodewise_weighted_sample
    count.argtypes = [*common, cint, cint]
    count.restype = i64
    sample.argtypes = [*common, ptr, ptr, ptr, cint, cint]
    sample.restype = None
    wcount.argtypes = [*common, ptr, cint, ptr, ptr, ptr, ptr, ptr]
    wcount.restype = i64
    wsample.argtypes = [*common, ptr, ptr, ptr, ptr, ptr, ptr, ptr, ptr, cint, cint]
    wsample.restype = None
    keyed = dll.gs_nodewise_sample_keyed
    keyed.argtypes = [*common, ptr, ptr, ptr, ptr, cint, cint]
    keyed.restype = None
    after = dll.gs_nodewise_after
    after.argtypes = [ptr, cint, ptr, ptr, ptr, i64, i64, ptr]
    after.restype = None
    return count, sample, wcount, wsample, keyed, after


def _ptr(t):
    return None if t is None else t.data_ptr()


def _usable(*tensors) -> bool:
    """Contiguous 1-d int64 CPU tensors (None allowed): what the native code reads."""
    for t in tensors:  # (a loop of plain tests: on every call's path)
        if t is not None and not (
            t.is_cpu and t.dtype is torch.int64 and t.dim() == 1 and t.is_contiguous()
        ):
            return False
    return True


def _weights(probs, nnz: int, k: int, replace: bool, method: str, checked: bool):
    """Whether weighted draws by ``probs`` are taken here: with replacement by the inverse CDF
    (``method="cdf"``) and checked weights (float32 / float64, one per edge)."""
    return (
        replace
        and method == "cdf"
        and checked
        and probs.device.type == "cpu"
        and probs.dtype in (torch.float32, torch.float64)
        and probs.dim() == 1
        and probs.numel() == nnz
        and probs.is_contiguous()
    )


def _threads(work: int, per: int) -> int:
    return THREADS or max(1, min(torch.get_num_threads(), work // per))


def _sample(indptr, rows, eids, seg, ids, C, n, M, decode, key, k, replace, probs=None, hs=None):
    """``(indptr_out, pos, rows_out, eids_out)`` or None (unavailable, or a column failed its
    checks: the torch code then raises its own error). ``probs``: weighted draws with
    replacement (:func:`_weights`; with ``n``, each batch's running sum from 0). ``hs``:
    each column's key (uniform draws; ``key`` is then not read)."""
    fns = build()
    if fns is None:
        return None
    count, sample, wcount, wsample, keyed, _ = fns
    openmp = int(os.getpid() == walk_native.PARENT_PID)

    def common(k, replace, indptr_out):
        return (
            _ptr(indptr),
            indptr.numel() - 1,
            _ptr(rows),
            _ptr(eids),
            rows.numel(),
            _ptr(seg),
            _ptr(ids),
            C,
            n,
            M,
            int(decode),
            key & MASK64,
            k,
            int(replace),
            _ptr(indptr_out),
        )

    indptr_out = torch.empty(C + 1, dtype=torch.int64)
    if probs is None:
        args = common(k, replace, indptr_out)
        total = count(*args, _threads(C, COLUMNS_PER_THREAD), openmp)
        if total < 0:
            return None
    else:
        # the frontier's edge offsets (every edge of each column), checking the columns
        fptr = torch.empty(C + 1, dtype=torch.int64)
        nnz = count(*common(1 << 62, False, fptr), _threads(C, COLUMNS_PER_THREAD), openmp)
        if nnz < 0:
            return None
        cum = torch.empty(nnz, dtype=torch.float64)
        before = torch.empty(C, dtype=torch.float64)
        sums = torch.empty(C, dtype=torch.float64)
        last = torch.empty(C, dtype=torch.int64)
        args = common(k, True, indptr_out)
        f32 = int(probs.dtype == torch.float32)
        weighted = (_ptr(fptr), _ptr(cum), _ptr(before), _ptr(sums), _ptr(last))
        total = wcount(*args, _ptr(probs), f32, *weighted)
    pos = torch.empty(total, dtype=torch.int64)
    rows_out = torch.empty(total, dtype=torch.int64)
    eids_out = None if eids is None else torch.empty(total, dtype=torch.int64)
    if total:
        outs = (_ptr(pos), _ptr(rows_out), _ptr(eids_out), _threads(total, DRAWS_PER_THREAD))
        if hs is not None:
            keyed(*args, _ptr(hs), *outs, openmp)
        elif probs is None:
            sample(*args, *outs, openmp)
        else:
            wsample(*args, *weighted, *outs, openmp)
    return indptr_out, pos, rows_out, eids_out


def _key(key):
    """``(key, n, copies)`` as the native code takes it, or None (a key it does not take)."""
    if isinstance(key, bool):
        return None
    if isinstance(key, int):
        return key, 0, 1
    if isinstance(key, BatchKeys) and key.num_nodes > 0 and key.copies > 0:
        prefix = walk_native.device_key(key.keys)
        if prefix is not None:
            return prefix, key.num_nodes, key.copies
    return None


def _takes(k, replace) -> bool:
    return isinstance(k, int) and not isinstance(k, bool) and k >= 0 and isinstance(replace, bool)


def _draw_args(
    A: CSC, C: int, k, replace, key, probs, method: str, checked: bool, batched: bool = False
):
    """``(key, n, copies, probs)`` of a node-wise draw of ``k`` over ``C`` columns as the
    native code takes it (``probs`` None when nothing is drawn), or None where it does not
    (the torch code runs). ``batched``: a super-batch's weighted draws are taken (weights
    shared by the batches, one per edge of ``A``); else only an op key's."""
    if not _takes(k, replace):
        return None
    keyed = _key(key)
    if keyed is None:
        return None
    base, n, copies = keyed
    if k == 0 and checked:
        probs = None  # nothing drawn, no weight read
    if replace and C * k > LARGE:
        return None
    if probs is not None and (
        (n and not batched) or not _weights(probs, A.nnz, k, replace, method, checked)
    ):
        return None
    return base, n, copies, probs


def ranged_sample(lo: torch.Tensor, hi: torch.Tensor, hs: torch.Tensor, k, replace, rows, eids):
    """Uniform draws of ``k`` positions among ``[lo[c], hi[c])`` of every column ``c``, keyed
    by ``hs[c]`` (draw ``i``'s word ``combine(hs[c], i)``): ``select.select_in_columns`` of
    the ranges' sizes with those keys, bit for bit, shifted by ``lo``.

    Parameters
    ----------
    lo, hi : LongTensor, shape (C,)
        Each column's candidate positions (within ``[0, E]``: a temporal sampler's allowed
        edges, in the graph's CSC order or its time order).
    hs : LongTensor, shape (C,)
        Each column's key bits (``combine(base, position)`` of its :class:`ColumnKeys`).
    k : int
        Draws per column (a column of at most ``k`` candidates without replacement keeps
        them all).
    replace : bool
    rows, eids : LongTensor, shape (E,)
        ``rows_out`` / ``eids_out`` read them at the drawn positions (meaningful where the
        positions are CSC positions); ``eids`` may be None.

    Returns
    -------
    tuple or None
        ``(indptr_out (C + 1,), pos, rows_out, eids_out)``; None where the native code does
        not run (then the torch code does, and raises its own errors).

    Examples
    --------
    >>> import torch
    >>> out = ranged_sample(torch.tensor([0, 5]), torch.tensor([3, 9]),
    ...                     torch.tensor([11, 12]), 2, False, torch.arange(9), None)
    """
    C = lo.numel()
    if not (enabled() and _takes(k, replace)) or C == 0 or (replace and C * k > LARGE):
        return None
    # column c is segment 2c of the ranges laid out as [lo[0], hi[0], lo[1], hi[1], ...]
    ranges = torch.stack([lo, hi], 1).reshape(-1)
    seg = torch.arange(0, 2 * C, 2)
    if not _usable(ranges, seg, hs, rows, eids):
        return None
    return _sample(ranges, rows, eids, seg, None, C, 0, 0, False, 0, k, replace, hs=hs)


def after(sorted_time, start, end, t):
    """Per column ``c``, the first position in ``[start[c], end[c])`` whose time is above
    ``t[c]`` (``sorted_time`` ascending within each range): ``temporal._after``'s binary
    search in one native pass, or None where it does not run.

    Parameters
    ----------
    sorted_time : Tensor, shape (E,)
        int64 or float64 (``temporal.wide``), contiguous, on the CPU.
    start, end : LongTensor, shape (C,)
    t : Tensor, shape (C,)
        ``sorted_time``'s dtype.

    Returns
    -------
    LongTensor, shape (C,), or None

    Examples
    --------
    >>> import torch
    >>> after(torch.tensor([1, 3, 3, 7]), torch.tensor([0]), torch.tensor([4]),
    ...       torch.tensor([3]))
    tensor([3])
    """
    if not enabled() or sorted_time.dtype not in (torch.int64, torch.float64):
        return None
    if t.dtype != sorted_time.dtype or not _usable(start, end):
        return None
    dense = (sorted_time, t)
    if any(x.device.type != "cpu" or x.dim() != 1 or not x.is_contiguous() for x in dense):
        return None
    if start.numel() != t.numel() or end.numel() != t.numel():
        return None
    fns = build()
    if fns is None:
        return None
    out = torch.empty_like(start)
    f64 = int(sorted_time.dtype == torch.float64)
    E = sorted_time.numel()
    fns[5](_ptr(sorted_time), f64, _ptr(start), _ptr(end), _ptr(t), t.numel(), E, _ptr(out))
    return out


def slice_individual_sample(
    A: CSC,
    cols: torch.Tensor,
    k: int,
    replace: bool,
    key,
    probs: torch.Tensor | None = None,
    method: str = "cdf",
    checked: bool = True,
):
    """``fused_select.slice_individual_sample(A, cols, k, replace, key, probs, method=method,
    checked=checked)`` in native code: the same CSC, bit for bit; or None where the torch
    code must run (no native build, inputs it does not take, a column that fails the checks).

    Parameters
    ----------
    A : CSC
        The matrix sliced (usually the whole graph), int64 CPU tensors.
    cols : LongTensor, shape (C,)
        The frontier (global ids; encoded ``b * n + v`` with a super-batch's key).
    k : int
        Edges per column (``>= 0``).
    replace : bool
        Draw with replacement.
    key : int or BatchKeys
        The op's key, or a super-batch's keys (consecutive mini-batches of one op; uniform
        draws only).
    probs : Tensor, shape (A.nnz,), optional
        Edge weights (float32 / float64): weighted draws with replacement by the inverse CDF
        (``method="cdf"``), taken here when ``checked`` (the executor checked them).

    Returns
    -------
    CSC or None
        Row space of ``A`` (a super-batch's: encoded), column space ``cols``.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from gsample.base.random import op_key
    >>> g = gs.datasets.rmat(100, 500, seed=0)
    >>> S = slice_individual_sample(g.csc, torch.tensor([0, 5, 5]), 10, False, op_key(0, 0, 0))
    >>> S.indptr                        # node 5 twice: two columns, sampled independently
    tensor([ 0,  1, 11, 21])
    """
    if cols.device.type != "cpu" or cols.dim() != 1 or cols.dtype != torch.int64:
        return None
    C = cols.numel()
    taken = _draw_args(A, C, k, replace, key, probs, method, checked)
    if taken is None:
        return None
    base, n, copies, probs = taken
    cols = cols.contiguous()
    if n:
        # a super-batch over the whole graph: column c is node cols[c] % n of its batch
        if A.col_ids is not None or A.row_ids is not None or A.num_cols != n:
            return None
        indptr, seg = A.indptr, None
    else:
        indptr, seg = A.column_segments(cols)
        seg = seg.contiguous()
    if not _usable(indptr, A.rows, A.eids, seg) or (
        A.eids is not None and A.eids.numel() != A.rows.numel()
    ):
        return None
    got = _sample(
        indptr,
        A.rows,
        A.eids,
        seg,
        cols if n else None,
        C,
        n,
        n * copies,
        n > 0,
        base,
        k,
        replace,
        probs,
    )
    if got is None:
        return None
    indptr_out, pos, rows, eids = got
    return CSC(
        num_nodes=n * copies if n else A.num_nodes,
        indptr=indptr_out,
        rows=rows,
        row_ids=A.row_ids,
        col_ids=cols,
        values=None if A.values is None else A.values[pos],
        eids=pos if eids is None else eids,
    )


def individual_sample(
    A: CSC,
    k: int,
    replace: bool,
    key,
    probs: torch.Tensor | None = None,
    method: str = "cdf",
    checked: bool = True,
):
    """``select.individual_sample(A, k, replace, key, probs, method=method, checked=checked)``
    in native code: the same CSC, bit for bit; or None where the torch code must run.

    ``key``: the op's key, or a super-batch's :class:`BatchKeys` (``A``'s columns are then
    keyed by their global ids' batches and positions, as the reference keys them; weighted
    draws sum each batch's weights from 0). ``probs`` (shape (A.nnz,)): as
    :func:`slice_individual_sample`'s (a super-batch's: checked by the caller first).

    Examples
    --------
    >>> import gsample as gs
    >>> from gsample.base.random import op_key
    >>> g = gs.datasets.rmat(100, 500, seed=0)
    >>> S = individual_sample(g.csc, 10, False, op_key(0, 0, 0))
    >>> S.indptr.shape                  # every column of the graph
    torch.Size([101])
    """
    C = A.num_cols
    taken = _draw_args(A, C, k, replace, key, probs, method, checked, batched=True)
    if taken is None:
        return None
    base, n, copies, probs = taken
    ids = A.global_cols().contiguous() if n else None
    if (
        not _usable(A.indptr, A.rows, A.eids, ids)
        or A.indptr.numel() != C + 1
        or (A.eids is not None and A.eids.numel() != A.rows.numel())
    ):
        return None
    got = _sample(
        A.indptr, A.rows, A.eids, None, ids, C, n, n * copies, False, base, k, replace, probs
    )
    if got is None:
        return None
    indptr_out, pos, rows, eids = got
    return dc_replace(
        A,
        indptr=indptr_out,
        rows=rows,
        values=None if A.values is None else A.values[pos],
        eids=pos if eids is None else eids,
    )


__all__ = ["available", "build", "enabled", "individual_sample", "slice_individual_sample"]
