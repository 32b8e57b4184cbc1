"""``all_nodes`` on CPU tensors in native code (C++ with OpenMP).

The torch code (:func:`.finalize.all_nodes`, :func:`.layout_ops.all_nodes`) is the semantic
reference: the columns' ids in order of first occurrence, then the ids of the rows holding an
edge, in row-space order, each id once (grouped by mini-batch, stably, for a super-batch's
``batches=(N, n)``). It pays two sorts for it (``torch.unique`` of the edges' rows, then of
the concatenated ids, and an ``argsort`` of the first occurrences; a third for ``batches``),
which on the CPU were most of a compiled GraphSAGE sampler's operator time. Here one pass
over the columns keeps each id the first time a bitmap over the id space sees it; one pass
over the edges marks their rows in a bitmap over the row space (threads mark disjoint parts
of the edges, atomically); the marked rows are read back in ascending order (by the words
they touched, sorted, or a scan of the whole bitmap when most words were touched) and each
row's id kept when unseen; a counting sort by batch (stable) groups a super-batch's ids. The
result is the torch code's tensor, bit for bit (``tests/backend/test_all_nodes_native.py``).

The bitmaps belong to the calling thread and are kept across calls (an id space's bits, one
eighth of a byte a node), cleared after each call by the words the call touched only. Every
index read is checked first: a column, row or row id outside its space leaves the call to the
torch code (which returns or raises as it does). The library is built as
:mod:`.walk_native`'s (``$GSAMPLE_CACHE/cpu``); without a compiler, with
``GSAMPLE_NATIVE_CPU=0``, with :data:`ENABLED` False or after a failed build the torch code
runs.
"""

from __future__ import annotations

import ctypes
import os

import torch

from gsample.backend.torch import walk_native
from gsample.formats.csc import CSC
from gsample.formats.layouts import COO, CSR

SOURCE = (
    r"""
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef long long gs_i64;
typedef unsigned long long gs_u64;

namespace gs_rl {

// the calling thread's bitmaps (all zero between calls) and its list of touched row words
struct Buffers {
    std::vector<gs_u64> seen;       // the id space: ids already output
    std::vector<gs_u64> present;    // the row space: rows holding an edge
    std::vector<gs_i64> touched;    // words of `present` set by this call
};
static thread_local Buffers buf;

"""
    + walk_native.BITS
    + walk_native.PARALLEL
    + r"""
static void grow(std::vector<gs_u64>& bits, gs_i64 n) {
    const size_t words = (size_t)((n + 63) >> 6);
    if (bits.size() < words) bits.resize(words, 0);   // the new words zero, the old ones are
}

// mark the rows of rows[0, E) in `present`, collecting the words they turned non-zero; false
// when a row is outside [0, R) (or, with `ascending`, rows[] is not strictly ascending)
static bool mark_rows(const gs_i64* rows, gs_i64 E, gs_i64 R, int ascending, int threads,
                      int openmp) {
    gs_u64* P = buf.present.data();
    std::vector<gs_i64>& touched = buf.touched;
    if (threads <= 1 || ascending) {
        bool ok = true;
        for (gs_i64 e = 0; e < E; ++e) {
            const gs_i64 r = rows[e];
            if (!in_range(r, R) || (ascending && e > 0 && r <= rows[e - 1])) { ok = false; break; }
            gs_u64& w = P[r >> 6];
            if (w == 0) touched.push_back(r >> 6);
            w |= 1ull << (r & 63);
        }
        return ok;
    }
    std::vector<std::vector<gs_i64>> mine(threads);
    int bad = 0;
    parallel(threads, openmp, [&](int i, int T) {
        const gs_i64 e0 = E * i / T, e1 = E * (i + 1) / T;
        std::vector<gs_i64>& t = mine[i];
        for (gs_i64 e = e0; e < e1; ++e) {
            const gs_i64 r = rows[e];
            if (!in_range(r, R)) { __atomic_store_n(&bad, 1, __ATOMIC_RELAXED); break; }
            const gs_u64 m = 1ull << (r & 63);
            if (__atomic_fetch_or(&P[r >> 6], m, __ATOMIC_RELAXED) == 0) t.push_back(r >> 6);
        }
    });
    for (auto& t : mine) touched.insert(touched.end(), t.begin(), t.end());
    return !bad;
}

}  // namespace gs_rl

// all_nodes: out[0, k) (k returned) the columns' ids (cols, or 0 .. C - 1 when null) in order
// of first occurrence, then the ids (row_ids[r], or r when null) of the rows r in [0, R)
// marked by rows[0, E), ascending, that are not among them; every id in [0, num_nodes). With
// n > 0, grouped[0, k) holds out[0, k) stably sorted by id / n. Returns -1 when an index is
// out of range, -2 when `ascending` rows are not (nothing written to `grouped` then; the
// bitmaps are left clear either way). `out` has room for C + min(E, R) ids.
extern "C" gs_i64 gs_all_nodes(const gs_i64* cols, gs_i64 C, const gs_i64* rows, gs_i64 E,
                               int ascending, const gs_i64* row_ids, gs_i64 R,
                               gs_i64 num_nodes, gs_i64 n, gs_i64* out, gs_i64* grouped,
                               int threads, int openmp) {
    using namespace gs_rl;
    buf.touched.clear();
    grow(buf.seen, num_nodes);
    grow(buf.present, R);
    gs_u64* S = buf.seen.data();
    gs_u64* P = buf.present.data();
    gs_i64 k = 0, status = 0;
    for (gs_i64 c = 0; c < C; ++c) {
        const gs_i64 id = cols ? cols[c] : c;
        if (!in_range(id, num_nodes)) { status = -1; break; }
        if (test_set(S, id)) out[k++] = id;
    }
    if (status == 0 && !mark_rows(rows, E, R, ascending, threads, openmp))
        status = ascending ? -2 : -1;
    // the touched words in ascending order: sorted when few, else a scan of the whole bitmap
    std::vector<gs_i64>& touched = buf.touched;
    const gs_i64 words = (R + 63) >> 6;
    const bool scan = (gs_i64)touched.size() * 16 > words;
    if (!scan && !ascending) std::sort(touched.begin(), touched.end());
    const gs_i64 nt = scan ? words : (gs_i64)touched.size();
    for (gs_i64 i = 0; i < nt; ++i) {
        const gs_i64 w = scan ? i : touched[i];
        gs_u64 bits = P[w];
        if (bits == 0) continue;
        P[w] = 0;
        if (status != 0) continue;                       // clearing only
        while (bits) {
            const gs_i64 r = (w << 6) + __builtin_ctzll(bits);
            bits &= bits - 1;
            const gs_i64 id = row_ids ? row_ids[r] : r;
            if (!in_range(id, num_nodes)) { status = -1; break; }
            if (test_set(S, id)) out[k++] = id;
        }
    }
    for (gs_i64 i = 0; i < k; ++i) S[out[i] >> 6] = 0;  // every set bit is an output's
    if (status != 0) return status;
    if (n > 0) {                                        // a stable counting sort by id / n
        const gs_i64 G = (num_nodes + n - 1) / n;
        if (G <= 4 * k + 1024) {
            std::vector<gs_i64> at(G + 1, 0);
            for (gs_i64 i = 0; i < k; ++i) ++at[out[i] / n + 1];
            for (gs_i64 g = 0; g < G; ++g) at[g + 1] += at[g];
            for (gs_i64 i = 0; i < k; ++i) grouped[at[out[i] / n]++] = out[i];
        } else {
            std::memcpy(grouped, out, (size_t)k * sizeof(gs_i64));
            std::stable_sort(grouped, grouped + k,
                             [n](gs_i64 a, gs_i64 b) { return a / n < b / n; });
        }
    }
    return k;
}
"""
)

#: edges per thread below which the rows are marked on one thread (a team's start and join
#: cost tens of microseconds; an edge's mark a few nanoseconds)
EDGES_PER_THREAD = 1 << 16
#: threads of a call (None: ``torch.get_num_threads()``, fewer for small matrices)
THREADS = None
#: id and row spaces past which the torch code runs (a bitmap of that many bits is kept for
#: each calling thread)
MAX_SPACE = 1 << 34
#: the native path is taken (with :func:`walk_native.enabled`); False: the torch code runs
ENABLED = True


def enabled() -> bool:
    """Whether the native path may be used (``GSAMPLE_NATIVE_CPU=0`` or :data:`ENABLED` False
    turn it off)."""
    return ENABLED and walk_native.enabled()


def build():
    """The compiled ``gs_all_nodes`` (ctypes), building it on first use; None when there is
    no compiler or the build fails."""
    return _BUILT()


_BUILT = walk_native.once(lambda: _build())  # _build: below


def available() -> bool:
    """Whether the native ``all_nodes`` runs (enabled, and built or buildable)."""
    return enabled() and build() is not None


def _build():
    dll = walk_native.compile_library("relabel", SOURCE, [], "all_nodes")
    if dll is None:
        return None
    fn = dll.gs_all_nodes
    i64, ptr, cint = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    fn.argtypes = [ptr, i64, ptr, i64, cint, ptr, i64, i64, i64, ptr, ptr, cint, cint]
    fn.restype = i64
    return fn


def _usable(t) -> bool:
    """A 1-d int64 CPU tensor (None allowed): what the native code reads."""
    return t is None or (t.device.type == "cpu" and t.dtype == torch.int64 and t.dim() == 1)


def _ptr(t):
    return None if t is None else t.data_ptr()


def _batch_size(batches):
    """``n`` of ``batches=(N, n)`` (0: none), or None when the native code does not take it."""
    if batches is None:
        return 0
    try:
        n = batches[1]
    except (TypeError, IndexError, KeyError):
        return None
    if isinstance(n, int) and not isinstance(n, bool) and n > 0:
        return n
    return None


def all_nodes(A, batches=None):
    """``finalize.all_nodes(A, batches)`` in native code: the same tensor (int64), bit for
    bit; or None where the torch code must run (no native build, a layout or tensors it does
    not take, an id or row outside its space).

    Parameters
    ----------
    A : CSC, COO or compact CSR
        The matrix (int64 CPU tensors); a CSR whose every row is stored runs in torch.
    batches : tuple (N, n), optional
        ``A`` is a super-batch of mini-batches of ``n`` nodes: the ids are grouped by
        mini-batch (``id // n``), keeping their order within each.

    Returns
    -------
    LongTensor, shape (U,), or None
        The columns' ids in order of first occurrence, then the new rows' ids in row-space
        order.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> S = A[:, seeds].individual_sample(10).csc
    >>> ids = all_nodes(S)              # the columns, then the rows they reached
    >>> ids[:3]
    tensor([0, 1, 2])
    """
    if not enabled():
        return None
    n = _batch_size(batches)
    if n is None:
        return None
    if isinstance(A, (CSC, COO)):
        rows, ascending = A.rows, False
    elif isinstance(A, CSR) and A.stored_rows is not None:
        rows, ascending = A.stored_rows, True  # each holds an edge, ascending
    else:
        return None
    cols, row_ids, N = A.col_ids, A.row_ids, A.num_nodes
    if not (_usable(cols) and _usable(rows) and _usable(row_ids)):
        return None
    C = cols.numel() if cols is not None else A.num_cols
    R = row_ids.numel() if row_ids is not None else N
    if not (0 <= N <= MAX_SPACE and R <= MAX_SPACE):
        return None
    fn = build()
    if fn is None:
        return None
    cols = None if cols is None else cols.contiguous()
    rows = rows.contiguous()
    row_ids = None if row_ids is None else row_ids.contiguous()
    E = rows.numel()
    out = torch.empty(C + min(E, R), dtype=torch.int64)
    grouped = torch.empty_like(out) if n else None
    threads = THREADS or max(1, min(torch.get_num_threads(), E // EDGES_PER_THREAD))
    k = fn(
        _ptr(cols),
        C,
        _ptr(rows),
        E,
        int(ascending),
        _ptr(row_ids),
        R,
        N,
        n,
        _ptr(out),
        _ptr(grouped),
        threads,
        int(os.getpid() == walk_native.PARENT_PID),
    )
    if k < 0:
        return None
    ids = out if grouped is None else grouped
    # an exact tensor (what the torch code returns): a view would keep, and send to another
    # process, the whole buffer
    return ids if k == ids.numel() else ids[:k].clone()


__all__ = ["ENABLED", "THREADS", "all_nodes", "available", "build", "enabled"]
