"""Layer-wise (collective) sampling's passes over a frontier on CPU tensors, in native code.

The torch code is the semantic reference: :func:`.fused_reduce.slice_reduce` (``A[:,
cols].sum(axis=1)``) builds the column slice, sorts its edges by row and sums each row's
segment; :func:`.fused_select.slice_collective_sample` gathers the frontier's rows, marks them
in a boolean array, lists the candidates, and after the draw maps every frontier edge through
a dense array of new positions and compacts the kept ones. On the CPU those are some thirty
tensor operations a layer (a sort among them), where plain PyTorch's LADIES does an
``index_add_`` and a few masks. Here each is one C++ pass over the frontier's edges:

* :func:`slice_row_sum`: ``out[row] += value`` edge by edge, columns in order and each
  column's edges in order: each row's sum is the same sequence of float additions as the
  reference's segment sum (which adds a row's edges, from 0, in the slice's CSC order), so the
  same bits;
* :func:`candidates`: the rows holding a frontier edge (and positive ``node_probs``), ascending,
  from a bitmap over the row space (the calling thread's, cleared by the words it touched);
* :func:`listed_row_sum`: :func:`slice_row_sum`'s sums at those rows only (the same additions
  in the same order), each edge's row found by its rank in a bitmap of them: no array over
  the row space unless it is small beside the frontier's edges (the listed-rows LADIES,
  :func:`.fused_select.listed_collective_sample`);
* :func:`total`: ``A.sum()``'s exact, order-free sum (:func:`.compute.exact_sums`, the same
  bits) of an array or of a frontier's edges, in 128-bit integers, two passes;
* :func:`slice_cols`: ``A[:, cols]``, each column's segment copied (rows, edge ids, values);
* :func:`unique_rows`: ``torch.unique(rows, return_inverse=...)`` of a matrix's rows (the
  compaction behind ``A.compact()`` and ``A.row()``) by a bitmap, ranks for the inverse;
* :func:`keep_chosen`: the frontier's edges from the chosen rows, in CSC order, with each
  kept edge's id, value and row in the chosen rows' space (its rank among them, from a
  bitmap of the chosen rows and a count per word: a few bits a row, which stay in cache
  where an array of new positions over the row space would not).

The draw between the last two stays the reference's (:func:`.select.choose_among`), so the
rows kept are the same. Every index read is checked first (a column against the columns, a
row against the row space); a failed check, tensors of another kind, a sub-matrix's column
space or a super-batch leave the call to the torch code, which returns or raises as it does.
The library is built and cached as :mod:`.walk_native`'s (``$GSAMPLE_CACHE/cpu``); without a
compiler, with ``GSAMPLE_NATIVE_CPU=0``, with :data:`ENABLED` False or after a failed build
the torch code runs. ``tests/backend/test_layerwise_native.py`` compares both.
"""

from __future__ import annotations

import ctypes
import os

import torch

from gsample.backend.torch import walk_native
from gsample.formats.csc import CSC

SOURCE = (
    r"""
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef long long gs_i64;
typedef unsigned long long gs_u64;

namespace gs_lw {

// the calling thread's buffers: a bitmap over the row space and the words a call set (all
// zero between calls), a count per bitmap word (read only where a call wrote it), and a
// thread's own bitmap for a pass split over threads (all zero between calls)
struct Buffers {
    std::vector<gs_u64> present;
    std::vector<gs_i64> touched;
    std::vector<gs_i64> first;
    std::vector<gs_u64> mark;
};
static thread_local Buffers buf;

static inline bool in_range(gs_i64 v, gs_i64 n) { return (gs_u64)v < (gs_u64)n; }
"""
    + walk_native.PARALLEL
    + r"""
// the edges of columns cols[0, C) of a CSC of `ncols` columns (indptr[0, ncols]), or -1 when
// a column is outside [0, ncols) or its segment is not within [0, nnz]
static gs_i64 frontier_edges(const gs_i64* indptr, gs_i64 ncols, gs_i64 nnz,
                             const gs_i64* cols, gs_i64 C) {
    gs_i64 total = 0;
    for (gs_i64 c = 0; c < C; ++c) {
        const gs_i64 j = cols[c];
        if (!in_range(j, ncols)) return -1;
        const gs_i64 a = indptr[j], b = indptr[j + 1];
        if (a < 0 || b < a || b > nnz) return -1;
        total += b - a;
    }
    return total;
}

// bounds[0, T]: T runs of consecutive columns with about E / T edges each
static std::vector<gs_i64> split(const gs_i64* indptr, const gs_i64* cols, gs_i64 C,
                                 gs_i64 E, int T) {
    std::vector<gs_i64> bounds(T + 1, C);
    bounds[0] = 0;
    gs_i64 acc = 0;
    int t = 1;
    for (gs_i64 c = 0; c < C && t < T; ++c) {
        acc += indptr[cols[c] + 1] - indptr[cols[c]];
        while (t < T && acc >= E * t / T) bounds[t++] = c + 1;
    }
    return bounds;
}

// add(e, r) for each edge e of the frontier cols[0, C) whose row r lies in [r0, r1), in CSC
// order (one thread's part of the row space); false at a row outside [0, R) where `checks`
// (the first thread's part starts at 0 and it reports for all), or where add returns false
template <typename F>
static bool each_edge_in(const gs_i64* indptr, const gs_i64* rows, const gs_i64* cols, gs_i64 C,
                         gs_i64 R, gs_i64 r0, gs_i64 r1, bool checks, F add) {
    for (gs_i64 c = 0; c < C; ++c) {
        const gs_i64 j = cols[c];
        for (gs_i64 e = indptr[j]; e < indptr[j + 1]; ++e) {
            const gs_i64 r = rows[e];
            if (r < r0 || r >= r1) {
                if (!checks || in_range(r, R)) continue;
                return false;
            }
            if (!add(e, r)) return false;
        }
    }
    return true;
}

// Each row's sum is its edges' values added in the frontier's CSC order; with T threads,
// thread i adds those of the rows in its own part of the row space (each reads every edge),
// so no row's additions are split or reordered.
template <typename T>
static gs_i64 row_sum(const gs_i64* indptr, gs_i64 ncols, gs_i64 nnz, const gs_i64* rows,
                      const T* values, const gs_i64* cols, gs_i64 C, gs_i64 R, T* out,
                      int threads, int openmp) {
    if (frontier_edges(indptr, ncols, nnz, cols, C) < 0) return -1;
    int bad = 0;
    parallel(threads, openmp, [&](int i, int TT) {
        const gs_i64 r0 = R * i / TT, r1 = R * (i + 1) / TT;
        std::fill(out + r0, out + r1, T(0));
        const bool ok = each_edge_in(indptr, rows, cols, C, R, r0, r1, i == 0,
                                     [&](gs_i64 e, gs_i64 r) {
                                         out[r] += values ? values[e] : T(1);
                                         return true;
                                     });
        if (!ok) __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
    });
    return bad ? -1 : 0;
}

template <typename T>
static gs_i64 candidates(const gs_i64* indptr, const gs_i64* rows, const gs_i64* cols,
                         gs_i64 C, gs_i64 E, gs_i64 R, const T* probs, gs_i64* cand,
                         int threads, int openmp) {
    const size_t words = (size_t)((R + 63) >> 6);
    if (buf.present.size() < words) buf.present.resize(words, 0);
    gs_u64* P = buf.present.data();
    std::vector<gs_i64>& touched = buf.touched;
    touched.clear();
    int bad = 0;
    if (threads <= 1) {
        for (gs_i64 c = 0; c < C && !bad; ++c) {
            const gs_i64 j = cols[c];
            for (gs_i64 e = indptr[j]; e < indptr[j + 1]; ++e) {
                const gs_i64 r = rows[e];
                if (!in_range(r, R)) { bad = 1; break; }
                if (probs && !(probs[r] > 0)) continue;
                gs_u64& w = P[r >> 6];
                if (w == 0) touched.push_back(r >> 6);
                w |= 1ull << (r & 63);
            }
        }
    } else {  // each thread marks the rows of its columns in a bitmap of its own, then ORs
              // the words it set into P, an atomic a word (an atomic an edge on the shared
              // bitmap had the threads contend for its cache lines); the order comes after
        const std::vector<gs_i64> bounds = split(indptr, cols, C, E, threads);
        std::vector<std::vector<gs_i64>> mine(threads);
        parallel(threads, openmp, [&](int i, int) {
            std::vector<gs_u64>& own = buf.mark;  // this thread's
            if (own.size() < words) own.resize(words, 0);
            gs_u64* Q = own.data();
            std::vector<gs_i64> set;
            bool stop = false;
            for (gs_i64 c = bounds[i]; c < bounds[i + 1] && !stop; ++c) {
                const gs_i64 j = cols[c];
                for (gs_i64 e = indptr[j]; e < indptr[j + 1]; ++e) {
                    const gs_i64 r = rows[e];
                    if (!in_range(r, R)) {
                        __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
                        stop = true;
                        break;
                    }
                    if (probs && !(probs[r] > 0)) continue;
                    gs_u64& w = Q[r >> 6];
                    if (w == 0) set.push_back(r >> 6);
                    w |= 1ull << (r & 63);
                }
            }
            std::vector<gs_i64>& t = mine[i];   // (also after a bad row: Q is left clear)
            for (const gs_i64 w : set) {
                if (__atomic_fetch_or(&P[w], Q[w], __ATOMIC_RELAXED) == 0) t.push_back(w);
                Q[w] = 0;
            }
        });
        for (auto& t : mine) touched.insert(touched.end(), t.begin(), t.end());
    }
    // the touched words in ascending order: sorted when few, else a scan of the bitmap
    const gs_i64 nw = (gs_i64)words;
    const bool scan = (gs_i64)touched.size() * 16 > nw;
    if (!scan) std::sort(touched.begin(), touched.end());
    const gs_i64 nt = scan ? nw : (gs_i64)touched.size();
    gs_i64 n = 0;
    for (gs_i64 i = 0; i < nt; ++i) {
        const gs_i64 w = scan ? i : touched[i];
        gs_u64 bits = P[w];
        if (bits == 0) continue;
        P[w] = 0;
        if (bad) continue;                               // clearing only
        while (bits) {
            cand[n++] = (w << 6) + __builtin_ctzll(bits);
            bits &= bits - 1;
        }
    }
    return bad ? -1 : n;
}

// the kept edges of columns [c0, c1) written from position m0 on (out_indptr[c + 1] the
// count up to column c, from m0); the count, or -1 when a row is out of range
template <int W>
static gs_i64 keep_columns(const gs_i64* indptr, const gs_i64* rows, const gs_i64* cols,
                           gs_i64 c0, gs_i64 c1, gs_i64 R, const gs_u64* P,
                           const gs_i64* first, const gs_i64* eids, const char* values,
                           gs_i64 width, gs_i64* out_indptr, gs_i64* out_edges,
                           gs_i64* out_rows, char* out_values) {
    gs_i64 m = 0;
    for (gs_i64 c = c0; c < c1; ++c) {
        const gs_i64 j = cols[c];
        for (gs_i64 e = indptr[j]; e < indptr[j + 1]; ++e) {
            const gs_i64 r = rows[e];
            if (!in_range(r, R)) return -1;
            const gs_u64 bits = P[r >> 6];
            if (!((bits >> (r & 63)) & 1ull)) continue;
            out_edges[m] = eids ? eids[e] : e;
            out_rows[m] = first[r >> 6] + __builtin_popcountll(bits & ((1ull << (r & 63)) - 1));
            if (W > 0) std::memcpy(out_values + m * W, values + e * W, (size_t)W);
            else if (W < 0) std::memcpy(out_values + m * width, values + e * width, (size_t)width);
            ++m;
        }
        out_indptr[c + 1] = m;
    }
    return m;
}

// Marks the ascending rows list[0, K) in the scratch bitmap (buf.present; buf.first: the
// rank of each word's first marked row): 0, or -1 at a row out of range or out of order.
// `set`: the rows marked (the caller clears their words after use).
static gs_i64 mark_rows(const gs_i64* list, gs_i64 K, gs_i64 R, gs_i64& set) {
    const size_t words = (size_t)((R + 63) >> 6);
    if (buf.present.size() < words) buf.present.resize(words, 0);
    if (buf.first.size() < words) buf.first.resize(words);
    gs_u64* P = buf.present.data();
    gs_i64* first = buf.first.data();
    for (set = 0; set < K; ++set) {
        const gs_i64 r = list[set];
        if (!in_range(r, R) || (set > 0 && r <= list[set - 1])) return -1;
        gs_u64& w = P[r >> 6];
        if (w == 0) first[r >> 6] = set;
        w |= 1ull << (r & 63);
    }
    return 0;
}

// gs_lw_keep's passes. A chosen row's position among the chosen rows is its rank: the
// chosen rows before its bitmap word (`first`, written at the words chosen rows set) plus
// the bits below it in that word; the bitmap (an eighth of a byte a row) stays in cache
// where an array of positions (eight bytes a row) would not. With T threads, thread i keeps
// the edges of its run of columns in buffers of its own, then copies them into place.
template <int W>
static gs_i64 keep(const gs_i64* indptr, const gs_i64* rows, const gs_i64* cols, gs_i64 C,
                   gs_i64 E, gs_i64 R, const gs_i64* chosen, gs_i64 K, const gs_i64* eids,
                   const char* values, gs_i64 width, gs_i64* out_indptr, gs_i64* out_edges,
                   gs_i64* out_rows, char* out_values, int threads, int openmp) {
    gs_i64 set = 0, status = mark_rows(chosen, K, R, set);
    gs_u64* P = buf.present.data();
    gs_i64* first = buf.first.data();
    gs_i64 m = 0;
    out_indptr[0] = 0;
    if (status == 0 && threads <= 1) {
        m = keep_columns<W>(indptr, rows, cols, 0, C, R, P, first, eids, values, width,
                            out_indptr, out_edges, out_rows, out_values);
        status = m < 0 ? -1 : 0;
    } else if (status == 0) {
        const std::vector<gs_i64> bounds = split(indptr, cols, C, E, threads);
        const gs_i64 vw = W > 0 ? W : width;
        std::vector<std::vector<gs_i64>> ed(threads), ro(threads);
        std::vector<std::vector<char>> va(threads);
        std::vector<gs_i64> count(threads + 1, 0);
        int bad = 0;
        parallel(threads, openmp, [&](int i, int) {
            const gs_i64 c0 = bounds[i], c1 = bounds[i + 1];
            gs_i64 n = 0;
            for (gs_i64 c = c0; c < c1; ++c) n += indptr[cols[c] + 1] - indptr[cols[c]];
            ed[i].resize(n);
            ro[i].resize(n);
            if (values) va[i].resize((size_t)(n * vw));
            const gs_i64 k = keep_columns<W>(indptr, rows, cols, c0, c1, R, P, first, eids,
                                             values, width, out_indptr, ed[i].data(),
                                             ro[i].data(), va[i].data());
            if (k < 0) __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
            else count[i + 1] = k;
        });
        if (bad) status = -1;
        else {
            for (int i = 0; i < threads; ++i) count[i + 1] += count[i];
            parallel(threads, openmp, [&](int i, int) {
                const gs_i64 at = count[i], n = count[i + 1] - count[i];
                std::memcpy(out_edges + at, ed[i].data(), (size_t)n * sizeof(gs_i64));
                std::memcpy(out_rows + at, ro[i].data(), (size_t)n * sizeof(gs_i64));
                if (values) std::memcpy(out_values + at * vw, va[i].data(), (size_t)(n * vw));
                for (gs_i64 c = bounds[i]; c < bounds[i + 1]; ++c) out_indptr[c + 1] += at;
            });
            m = count[threads];
        }
    }
    for (gs_i64 i = 0; i < set; ++i) P[chosen[i] >> 6] = 0;
    return status != 0 ? status : m;
}

// gs_lw_listed_sum's pass: the sums at the listed rows cand[0, L) (strictly ascending, every
// row of the frontier's edges) of row_sum's additions, in its order (from 0, columns in
// order, edges in order: the same bits), each edge's row found by its rank in a bitmap of
// the listed rows (keep's `first` and popcount) instead of an array over the row space;
// 0, or -1 when a row is out of range, not listed, or the list is not ascending. With T
// threads, as row_sum: thread i adds the rows of its own part of the list (and the rows
// between its first and the next part's; thread 0 also those below cand[0], the last those
// past the list's end, which are not listed), reading every edge: no row's additions split
template <typename T>
static gs_i64 listed_sum(const gs_i64* indptr, const gs_i64* rows, const T* values,
                         const gs_i64* cols, gs_i64 C, gs_i64 R, const gs_i64* cand, gs_i64 L,
                         T* out, int threads, int openmp) {
    gs_i64 set = 0, status = mark_rows(cand, L, R, set);
    if (status == 0 && L > 0) {
        const gs_u64* P = buf.present.data();
        const gs_i64* first = buf.first.data();
        int bad = 0;
        parallel(threads, openmp, [&](int i, int TT) {
            const gs_i64 l0 = L * i / TT, l1 = L * (i + 1) / TT;
            const gs_i64 r0 = i == 0 ? 0 : cand[l0], r1 = i == TT - 1 ? R : cand[l1];
            std::fill(out + l0, out + l1, T(0));
            const bool ok = each_edge_in(indptr, rows, cols, C, R, r0, r1, i == 0,
                                         [&](gs_i64 e, gs_i64 r) {
                                             const gs_u64 bits = P[r >> 6];
                                             if (!((bits >> (r & 63)) & 1ull)) return false;
                                             const gs_i64 at = first[r >> 6] +
                                                 __builtin_popcountll(
                                                     bits & ((1ull << (r & 63)) - 1));
                                             out[at] += values ? values[e] : T(1);
                                             return true;  // (false above: not listed)
                                         });
            if (!ok) __atomic_store_n(&bad, 1, __ATOMIC_RELAXED);
        });
        status = bad ? -1 : 0;
    }
    gs_u64* P = buf.present.data();
    for (gs_i64 i = 0; i < set; ++i) P[cand[i] >> 6] = 0;
    return status;
}

// The exact sum of every term (gsample.backend.torch.compute.exact_sums; kernels/rowsum.cu's
// gs_total_*): each finite nonzero term rounded to nearest-even at 2 ** (em - 62), em the
// largest term's binary exponent (|x| < 2 ** em), the integers added in 128 bits, the sum
// converted back once, (hi * 2 ** 64 + lo) * 2 ** (em - 62), each step rounded to nearest
// (hi * 2 ** 64 is exact, so a contraction of it changes nothing). NaN, or both infinities,
// give NaN; else an infinity wins. Terms: values[e] (1 when null) of the edges of columns
// cols[0, C) (segments checked), or every edge e < E when cols is null.

// frexp's exponent of a finite nonzero x (|x| < 2 ** e), from its bits where it is normal
static inline int exponent_of(double x) {
    gs_u64 b;
    std::memcpy(&b, &x, 8);
    const int e = (int)((b >> 52) & 0x7FF);
    if (e != 0) return e - 1022;
    int ex;
    std::frexp(x, &ex);  // a subnormal
    return ex;
}

// 2 ** e for e in [-1022, 1023], from its bits
static inline double pow2(int e) {
    const gs_u64 b = (gs_u64)(e + 1023) << 52;
    double x;
    std::memcpy(&x, &b, 8);
    return x;
}

template <typename T, typename F>
static void each_term(const gs_i64* indptr, const gs_i64* cols, gs_i64 c0, gs_i64 c1,
                      const T* values, F f) {
    if (cols == nullptr) {  // values[c0, c1)
        for (gs_i64 e = c0; e < c1; ++e) f(values ? (double)values[e] : 1.0);
        return;
    }
    for (gs_i64 c = c0; c < c1; ++c)
        for (gs_i64 e = indptr[cols[c]]; e < indptr[cols[c] + 1]; ++e)
            f(values ? (double)values[e] : 1.0);
}

// threads split the terms (runs of columns of about equal edges, or of values); each keeps
// its exponent, flags and 128-bit sum, combined after (integer addition: the same sum)
template <typename T>
static double total(const gs_i64* indptr, const gs_i64* cols, gs_i64 C, gs_i64 E,
                    const T* values, int threads, int openmp) {
    std::vector<gs_i64> bounds(threads + 1);
    if (cols) bounds = split(indptr, cols, C, E, threads);
    else for (int t = 0; t <= threads; ++t) bounds[t] = E * t / threads;
    std::vector<int> ems(threads, INT_MIN), flags(threads, 0);
    parallel(threads, openmp, [&](int i, int) {
        int em = INT_MIN, f = 0;
        each_term(indptr, cols, bounds[i], bounds[i + 1], values, [&](double x) {
            if (std::isnan(x)) f |= 1;
            else if (std::isinf(x)) f |= x > 0 ? 2 : 4;
            else if (x != 0.0) { const int ex = exponent_of(x); if (ex > em) em = ex; }
        });
        ems[i] = em;
        flags[i] = f;
    });
    int em = INT_MIN, f = 0;
    for (int i = 0; i < threads; ++i) { em = std::max(em, ems[i]); f |= flags[i]; }
    if ((f & 1) || (f & 6) == 6) return std::nan("");
    if (f & 2) return HUGE_VAL;
    if (f & 4) return -HUGE_VAL;
    if (em == INT_MIN) return 0.0;
    // x * 2 ** (62 - em), below 2 ** 62: ldexp's value, as one or two exact multiplications
    // (a product rounds once, as ldexp does, where it falls below the normal range)
    const int shift = 62 - em, s1 = std::min(std::max(shift, -1022), 1000);
    const double p1 = pow2(s1), p2 = pow2(shift - s1);
    std::vector<__int128> sums(threads, 0);
    parallel(threads, openmp, [&](int i, int) {
        __int128 sum = 0;
        each_term(indptr, cols, bounds[i], bounds[i + 1], values, [&](double x) {
            if (x != 0.0 && std::isfinite(x)) sum += (long long)std::llrint(x * p1 * p2);
        });
        sums[i] = sum;
    });
    __int128 sum = 0;
    for (int i = 0; i < threads; ++i) sum += sums[i];
    const unsigned long long lo = (unsigned long long)sum;
    const long long hi = (long long)(sum >> 64);
    const double whole = (double)hi * 0x1p64 + (double)lo;
    return std::ldexp(whole, em - 62);
}

// gs_lw_unique's pass: the rows marked in the bitmap, listed in ascending order with the
// count before each word (`first`), then each edge's row as its rank among them
static gs_i64 unique(const gs_i64* rows, gs_i64 E, gs_i64 R, gs_i64* uniq, gs_i64* inverse) {
    const size_t words = (size_t)((R + 63) >> 6);
    if (buf.present.size() < words) buf.present.resize(words, 0);
    if (buf.first.size() < words) buf.first.resize(words);
    gs_u64* P = buf.present.data();
    gs_i64* first = buf.first.data();
    std::vector<gs_i64>& touched = buf.touched;
    touched.clear();
    bool bad = false;
    for (gs_i64 e = 0; e < E; ++e) {
        const gs_i64 r = rows[e];
        if (!in_range(r, R)) { bad = true; break; }
        gs_u64& w = P[r >> 6];
        if (w == 0) touched.push_back(r >> 6);
        w |= 1ull << (r & 63);
    }
    gs_i64 n = 0;
    if (!bad) {
        const gs_i64 nw = (gs_i64)words;
        const bool scan = (gs_i64)touched.size() * 16 > nw;
        std::vector<gs_i64> order;
        if (!scan) { order = touched; std::sort(order.begin(), order.end()); }
        const gs_i64 nt = scan ? nw : (gs_i64)order.size();
        for (gs_i64 i = 0; i < nt; ++i) {
            const gs_i64 w = scan ? i : order[i];
            gs_u64 bits = P[w];
            if (bits == 0) continue;
            first[w] = n;
            while (bits) {
                uniq[n++] = (w << 6) + __builtin_ctzll(bits);
                bits &= bits - 1;
            }
        }
        if (inverse)
            for (gs_i64 e = 0; e < E; ++e) {
                const gs_i64 r = rows[e];
                inverse[e] = first[r >> 6] +
                             __builtin_popcountll(P[r >> 6] & ((1ull << (r & 63)) - 1));
            }
    }
    for (const gs_i64 w : touched) P[w] = 0;
    return bad ? -1 : n;
}

}  // namespace gs_lw

// the E edges of columns cols[0, C) (segments checked), in CSC order: out_indptr[0, C] over
// them, out_rows their rows, out_edges their positions in the graph (their eids[] when not
// null) and, when values is not null, out_values their values (elements of `width` bytes)
extern "C" void gs_lw_slice(const gs_i64* indptr, const gs_i64* rows, const gs_i64* cols,
                            gs_i64 C, const gs_i64* eids, const char* values, gs_i64 width,
                            gs_i64* out_indptr, gs_i64* out_rows, gs_i64* out_edges,
                            char* out_values) {
    gs_i64 m = 0;
    out_indptr[0] = 0;
    for (gs_i64 c = 0; c < C; ++c) {
        const gs_i64 a = indptr[cols[c]], b = indptr[cols[c] + 1], n = b - a;
        std::memcpy(out_rows + m, rows + a, (size_t)n * sizeof(gs_i64));
        if (eids) std::memcpy(out_edges + m, eids + a, (size_t)n * sizeof(gs_i64));
        else for (gs_i64 e = 0; e < n; ++e) out_edges[m + e] = a + e;
        if (values) std::memcpy(out_values + m * width, values + a * width, (size_t)(n * width));
        m += n;
        out_indptr[c + 1] = m;
    }
}

// uniq[0, n) (n returned): the distinct values of rows[0, E), ascending, and, when inverse is
// not null, inverse[e] the position of rows[e] among them; -1 when a row is outside [0, R)
extern "C" gs_i64 gs_lw_unique(const gs_i64* rows, gs_i64 E, gs_i64 R, gs_i64* uniq,
                               gs_i64* inverse) {
    return gs_lw::unique(rows, E, R, uniq, inverse);
}

// the number of edges of columns cols[0, C), or -1 (a column or a segment out of range)
extern "C" gs_i64 gs_lw_frontier_edges(const gs_i64* indptr, gs_i64 ncols, gs_i64 nnz,
                                       const gs_i64* cols, gs_i64 C) {
    return gs_lw::frontier_edges(indptr, ncols, nnz, cols, C);
}

// out[0, R) = the sums of the values (1 when null) of the edges of columns cols[0, C), per
// row, from 0, columns in order and edges in order; 0, or -1 when an index is out of range
extern "C" gs_i64 gs_lw_row_sum_f32(const gs_i64* indptr, gs_i64 ncols, gs_i64 nnz,
                                    const gs_i64* rows, const float* values, const gs_i64* cols,
                                    gs_i64 C, gs_i64 R, float* out, int threads, int openmp) {
    return gs_lw::row_sum<float>(indptr, ncols, nnz, rows, values, cols, C, R, out, threads,
                                 openmp);
}
extern "C" gs_i64 gs_lw_row_sum_f64(const gs_i64* indptr, gs_i64 ncols, gs_i64 nnz,
                                    const gs_i64* rows, const double* values, const gs_i64* cols,
                                    gs_i64 C, gs_i64 R, double* out, int threads, int openmp) {
    return gs_lw::row_sum<double>(indptr, ncols, nnz, rows, values, cols, C, R, out, threads,
                                  openmp);
}

// *out = the exact sum of the values (1 when null) of the edges of columns cols[0, C)
// (segments checked), or of values[0, E) when cols is null (see gs_lw::total)
extern "C" void gs_lw_total_f32(const gs_i64* indptr, const gs_i64* cols, gs_i64 C, gs_i64 E,
                                const float* values, double* out, int threads, int openmp) {
    *out = gs_lw::total<float>(indptr, cols, C, E, values, threads, openmp);
}
extern "C" void gs_lw_total_f64(const gs_i64* indptr, const gs_i64* cols, gs_i64 C, gs_i64 E,
                                const double* values, double* out, int threads, int openmp) {
    *out = gs_lw::total<double>(indptr, cols, C, E, values, threads, openmp);
}

// out[0, L): gs_lw_row_sum's sums at the rows cand[0, L) (strictly ascending, every row of
// the edges of columns cols[0, C), whose segments were checked), the same additions in the
// same order, without an array over the row space; 0, or -1 (see gs_lw::listed_sum)
extern "C" gs_i64 gs_lw_listed_sum_f32(const gs_i64* indptr, const gs_i64* rows,
                                       const float* values, const gs_i64* cols, gs_i64 C,
                                       gs_i64 R, const gs_i64* cand, gs_i64 L, float* out,
                                       int threads, int openmp) {
    return gs_lw::listed_sum<float>(indptr, rows, values, cols, C, R, cand, L, out, threads,
                                    openmp);
}
extern "C" gs_i64 gs_lw_listed_sum_f64(const gs_i64* indptr, const gs_i64* rows,
                                       const double* values, const gs_i64* cols, gs_i64 C,
                                       gs_i64 R, const gs_i64* cand, gs_i64 L, double* out,
                                       int threads, int openmp) {
    return gs_lw::listed_sum<double>(indptr, rows, values, cols, C, R, cand, L, out, threads,
                                     openmp);
}

// cand[0, n) (n returned): the rows in [0, R) of the E edges of columns cols[0, C) (whose
// segments were checked) with probs[row] > 0 (every row when probs is null), ascending,
// each once; -1 when a row is out of range (the bitmap is left clear either way)
extern "C" gs_i64 gs_lw_candidates_f32(const gs_i64* indptr, const gs_i64* rows,
                                       const gs_i64* cols, gs_i64 C, gs_i64 E, gs_i64 R,
                                       const float* probs, gs_i64* cand, int threads,
                                       int openmp) {
    return gs_lw::candidates<float>(indptr, rows, cols, C, E, R, probs, cand, threads, openmp);
}
extern "C" gs_i64 gs_lw_candidates_f64(const gs_i64* indptr, const gs_i64* rows,
                                       const gs_i64* cols, gs_i64 C, gs_i64 E, gs_i64 R,
                                       const double* probs, gs_i64* cand, int threads,
                                       int openmp) {
    return gs_lw::candidates<double>(indptr, rows, cols, C, E, R, probs, cand, threads, openmp);
}

// the edges of columns cols[0, C) (E of them, segments checked) whose row is among
// chosen[0, K) (strictly ascending rows in [0, R)): out_indptr[0, C] over them, out_edges
// their positions in the graph (their eids[] when not null), out_rows their rows' positions
// in `chosen` and, when values is not null, out_values their values (elements of `width`
// bytes), in CSC order; the count, or -1 when a chosen row or an edge's row is out of range
// (or the chosen rows are not strictly ascending)
extern "C" gs_i64 gs_lw_keep(const gs_i64* indptr, const gs_i64* rows, const gs_i64* cols,
                             gs_i64 C, gs_i64 E, gs_i64 R, const gs_i64* chosen, gs_i64 K,
                             const gs_i64* eids, const char* values, gs_i64 width,
                             gs_i64* out_indptr, gs_i64* out_edges, gs_i64* out_rows,
                             char* out_values, int threads, int openmp) {
    using namespace gs_lw;
#define GS_LW_KEEP(w) keep<w>(indptr, rows, cols, C, E, R, chosen, K, eids, values, width, \
                              out_indptr, out_edges, out_rows, out_values, threads, openmp)
    switch (width) {  // a copy of a fixed size is a move, not a call
        case 0: return GS_LW_KEEP(0);
        case 4: return GS_LW_KEEP(4);
        case 8: return GS_LW_KEEP(8);
        default: return GS_LW_KEEP(-1);
    }
#undef GS_LW_KEEP
}
"""
)

#: the native path is taken (with :func:`walk_native.enabled`); False: the torch code runs
ENABLED = True
#: row spaces past which the torch code runs (the calling thread keeps a bitmap of that
#: many rows and a count per 64 of them)
MAX_ROWS = 1 << 34

#: frontier edges per thread below which a pass runs on one thread: a team's start and join
#: cost tens of microseconds on an idle host and milliseconds on a loaded one (its threads
#: wait for a core), an edge a few nanoseconds
EDGES_PER_THREAD = 1 << 18
#: threads of a pass (None: ``torch.get_num_threads()``, fewer for small frontiers)
THREADS = None


def enabled() -> bool:
    """Whether the native path may be used (``GSAMPLE_NATIVE_CPU=0`` or :data:`ENABLED` False
    turn it off)."""
    return ENABLED and walk_native.enabled()


def build():
    """The compiled functions (a dict of ctypes functions), building them on first use; None
    when there is no compiler or the build fails."""
    return _BUILT()


_BUILT = walk_native.once(lambda: _build())  # _build: below


def available() -> bool:
    """Whether the native passes run (enabled, and built or buildable)."""
    return enabled() and build() is not None


def _build():
    dll = walk_native.compile_library("layerwise", SOURCE, [], "layer-wise sampling")
    if dll is None:
        return None
    i64, ptr, cint = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    fns = {}
    signatures = {
        "gs_lw_frontier_edges": [ptr, i64, i64, ptr, i64],
        "gs_lw_unique": [ptr, i64, i64, ptr, ptr],
        "gs_lw_slice": [ptr, ptr, ptr, i64, ptr, ptr, i64, ptr, ptr, ptr, ptr],
        "gs_lw_row_sum_f32": [ptr, i64, i64, ptr, ptr, ptr, i64, i64, ptr, cint, cint],
        "gs_lw_row_sum_f64": [ptr, i64, i64, ptr, ptr, ptr, i64, i64, ptr, cint, cint],
        "gs_lw_total_f32": [ptr, ptr, i64, i64, ptr, ptr, cint, cint],
        "gs_lw_total_f64": [ptr, ptr, i64, i64, ptr, ptr, cint, cint],
        "gs_lw_listed_sum_f32": [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, cint, cint],
        "gs_lw_listed_sum_f64": [ptr, ptr, ptr, ptr, i64, i64, ptr, i64, ptr, cint, cint],
        "gs_lw_candidates_f32": [ptr, ptr, ptr, i64, i64, i64, ptr, ptr, cint, cint],
        "gs_lw_candidates_f64": [ptr, ptr, ptr, i64, i64, i64, ptr, ptr, cint, cint],
        "gs_lw_keep": [ptr, ptr, ptr, i64, i64, i64, ptr, i64, ptr, ptr, i64]
        + [ptr, ptr, ptr, ptr, cint, cint],
    }
    for name, args in signatures.items():
        fn = getattr(dll, name)
        fn.argtypes = args
        fn.restype = None if name == "gs_lw_slice" or "_total_" in name else i64
        fns[name] = fn
    return fns


_SUFFIX = {torch.float32: "f32", torch.float64: "f64"}


def _index(t) -> bool:
    """A contiguous 1-d int64 CPU tensor: what the native code reads as ids."""
    return (
        isinstance(t, torch.Tensor)
        and t.device.type == "cpu"
        and t.dtype == torch.int64
        and t.dim() == 1
        and t.is_contiguous()
    )


def _floats(t, length: int) -> bool:
    """A contiguous 1-d float32 / float64 CPU tensor of ``length`` values (None allowed)."""
    return t is None or (
        isinstance(t, torch.Tensor)
        and t.device.type == "cpu"
        and t.dtype in _SUFFIX
        and t.dim() == 1
        and t.numel() == length
        and t.is_contiguous()
        and not t.requires_grad
    )


def _takes(A, cols) -> bool:
    """Whether the native code takes the graph ``A`` (a CSC over its own columns) and the
    frontier ``cols``."""
    return (
        enabled()
        and isinstance(A, CSC)
        and A.col_ids is None
        and _index(cols)
        and _index(A.indptr)
        and _index(A.rows)
        and A.indptr.numel() >= 1
        and A.num_rows <= MAX_ROWS
    )


def _threads(edges: int):
    """``(threads, openmp)`` of a pass over ``edges`` frontier edges: ``torch.get_num_threads()``
    (or :data:`THREADS`), fewer for small frontiers; an OpenMP team in the process that
    imported :mod:`.walk_native`, ``std::thread``s in a forked child."""
    threads = THREADS or max(1, min(torch.get_num_threads(), edges // EDGES_PER_THREAD))
    return threads, int(os.getpid() == walk_native.PARENT_PID)


def _ptr(t):
    return None if t is None else t.data_ptr()


def _exact(t: torch.Tensor, n: int) -> torch.Tensor:
    # an exact tensor (what the torch code returns): a view would keep the whole buffer
    return t if n == t.numel() else t[:n].clone()


def slice_row_sum(A: CSC, cols: torch.Tensor):
    """``A[:, cols].sum(axis=1)`` (shape ``(A.num_rows,)``, the dtype of ``A``'s values,
    float32 without values), bit for bit the torch code's; None where the torch code must
    run.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> p = slice_row_sum(A.csc, seeds)  # one value per row of A
    >>> p.shape
    torch.Size([100])
    """
    values = A.values
    if not (_takes(A, cols) and _floats(values, A.nnz)):
        return None
    fns = build()
    if fns is None:
        return None
    dtype = torch.float32 if values is None else values.dtype
    # zeroed by the pass (torch.zeros would start a team of threads for a large row space)
    out = torch.empty(A.num_rows, dtype=dtype)
    ip, C = A.indptr.data_ptr(), cols.numel()
    E = fns["gs_lw_frontier_edges"](ip, A.indptr.numel() - 1, A.nnz, cols.data_ptr(), C)
    if E < 0:
        return None
    status = fns[f"gs_lw_row_sum_{_SUFFIX[dtype]}"](
        ip,
        A.indptr.numel() - 1,
        A.nnz,
        A.rows.data_ptr(),
        _ptr(values),
        cols.data_ptr(),
        C,
        A.num_rows,
        out.data_ptr(),
        *_threads(E),
    )
    return out if status == 0 else None


def total(values: torch.Tensor | None, A: CSC | None = None, cols: torch.Tensor | None = None):
    """The exact, order-free sum (:func:`.compute.exact_sums`, the same bits) of ``values``
    (shape (E,)), or, with the graph ``A`` and a frontier ``cols``, of ``values`` (one per
    edge of ``A``; None: 1.0 each) at the frontier's edges: ``A[:, cols].sum()`` without the
    slice. A 0-dim tensor of the values' dtype (float32 without values); None where the
    torch code must run.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> sq, A2 = A[:, seeds] ** 2, A ** 2
    >>> total(sq.values)                # (A[:, seeds] ** 2).sum()
    tensor(12.)
    >>> total(A2.values, A2.csc, seeds)  # the same, without the slice
    tensor(12.)
    """
    if not enabled():
        return None
    if A is None:
        if values is None or not _floats(values, values.numel()):
            return None
    elif not (_takes(A, cols) and _floats(values, A.nnz)):
        return None
    fns = build()
    if fns is None:
        return None
    dtype = torch.float32 if values is None else values.dtype
    out = torch.empty((), dtype=torch.float64)
    if A is None:
        E = values.numel()
        args = (None, None, 0, E)
    else:
        C = cols.numel()
        ip = A.indptr.data_ptr()
        E = fns["gs_lw_frontier_edges"](ip, A.indptr.numel() - 1, A.nnz, cols.data_ptr(), C)
        if E < 0:
            return None
        args = (ip, cols.data_ptr(), C, E)
    fns[f"gs_lw_total_{_SUFFIX[dtype]}"](*args, _ptr(values), out.data_ptr(), *_threads(E))
    return out.to(dtype)


#: :func:`listed_row_sum` sums over the whole row space (then gathers the listed rows) where
#: it has at most this many rows per frontier edge
ROWS_PER_EDGE = 4


def listed_row_sum(
    A: CSC, cols: torch.Tensor, cand: torch.Tensor, values: torch.Tensor, edges: int = 0
):
    """:func:`slice_row_sum` at the rows ``cand`` only (every row of the frontier's edges,
    ascending: :func:`candidates` without probabilities), of ``values`` (one per edge of
    ``A``): shape ``(len(cand),)``, the same additions in the same order (the same bits),
    by a rank per edge in a bitmap of the listed rows, or (a row space of at most
    :data:`ROWS_PER_EDGE` rows per frontier edge) over the row space, then gathered.
    ``edges``: the frontier's edge count where known (:func:`candidates`'s), which sets the
    threads and the choice. None where the torch code must run.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> cand, E = candidates(A.csc, seeds, None)
    >>> p = listed_row_sum(A.csc, seeds, cand, A.values, E)  # slice_row_sum(A, seeds)[cand]
    >>> p.shape == cand.shape
    True
    """
    if not (_takes(A, cols) and _index(cand) and values is not None):
        return None
    if not _floats(values, A.nnz):
        return None
    fns = build()
    if fns is None:
        return None
    if 0 < A.num_rows <= ROWS_PER_EDGE * edges:
        # a row space no larger than a few times the frontier's edges: the sums over it
        # (row_sum, the same additions) then gathered cost less than a rank for every edge
        out = torch.empty(A.num_rows, dtype=values.dtype)
        status = fns[f"gs_lw_row_sum_{_SUFFIX[values.dtype]}"](
            A.indptr.data_ptr(),
            A.indptr.numel() - 1,
            A.nnz,
            A.rows.data_ptr(),
            values.data_ptr(),
            cols.data_ptr(),
            cols.numel(),
            A.num_rows,
            out.data_ptr(),
            *_threads(edges),
        )
        return out[cand] if status == 0 else None
    out = torch.empty(cand.numel(), dtype=values.dtype)
    status = fns[f"gs_lw_listed_sum_{_SUFFIX[values.dtype]}"](
        A.indptr.data_ptr(),
        A.rows.data_ptr(),
        values.data_ptr(),
        cols.data_ptr(),
        cols.numel(),
        A.num_rows,
        cand.data_ptr(),
        cand.numel(),
        out.data_ptr(),
        *_threads(edges),
    )
    return out if status == 0 else None


def candidates(A: CSC, cols: torch.Tensor, node_probs: torch.Tensor | None):
    """``(cand, E)``: the rows of ``A``'s row space holding an edge of the frontier ``cols``
    (with ``node_probs[row] > 0`` when given), ascending, and the frontier's edge count; what
    :func:`.select.choose_rows` lists as its candidates. None where the torch code must run.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> cand, E = candidates(A.csc, seeds, None)
    >>> cand, E                         # the rows of A[:, seeds] that hold an edge; its edges
    (tensor([23, 55, 60, 63, 66, 67, 76, 80, 84]), 12)
    """
    if not (_takes(A, cols) and _floats(node_probs, A.num_rows)):
        return None
    fns = build()
    if fns is None:
        return None
    ip, C = A.indptr.data_ptr(), cols.numel()
    E = fns["gs_lw_frontier_edges"](ip, A.indptr.numel() - 1, A.nnz, cols.data_ptr(), C)
    if E < 0:
        return None
    R = A.num_rows
    dtype = torch.float64 if node_probs is None else node_probs.dtype
    cand = torch.empty(min(E, R), dtype=torch.int64)
    n = fns[f"gs_lw_candidates_{_SUFFIX[dtype]}"](
        ip,
        A.rows.data_ptr(),
        cols.data_ptr(),
        C,
        E,
        R,
        _ptr(node_probs),
        cand.data_ptr(),
        *_threads(E),
    )
    if n < 0:
        return None
    return _exact(cand, n), E


def keep_chosen(A: CSC, cols: torch.Tensor, chosen: torch.Tensor, E: int):
    """``(indptr, eids, rows, values)``: the edges of the frontier ``cols`` (``E`` of them,
    as :func:`candidates` counted) whose row is among ``chosen`` (distinct, ascending local
    rows), in CSC order: ``indptr`` over the columns, their edge ids (``A.eids`` at them, or
    their positions in ``A``), their rows' positions in ``chosen`` and their values (None
    when ``A`` has none): what the torch code's ``keep_rows`` and gathers give. None where
    the torch code must run.
    """
    fns = build()
    values, eids = A.values, A.eids
    if fns is None or not _index(chosen) or not _values_taken(A):
        return None
    C = cols.numel()
    indptr = torch.empty(C + 1, dtype=torch.int64)
    edges = torch.empty(E, dtype=torch.int64)
    rows = torch.empty(E, dtype=torch.int64)
    out_values = None if values is None else values.new_empty((E, *values.shape[1:]))
    width = 0 if values is None else values.element_size() * values[:1].numel()
    m = fns["gs_lw_keep"](
        A.indptr.data_ptr(),
        A.rows.data_ptr(),
        cols.data_ptr(),
        C,
        E,
        A.num_rows,
        chosen.data_ptr(),
        chosen.numel(),
        _ptr(eids),
        _ptr(values),
        width,
        indptr.data_ptr(),
        edges.data_ptr(),
        rows.data_ptr(),
        _ptr(out_values),
        *_threads(E),
    )
    if m < 0:
        return None
    out_values = None if values is None else _exact(out_values, m)
    return indptr, _exact(edges, m), _exact(rows, m), out_values


def _values_taken(A: CSC) -> bool:
    """Whether the native code copies ``A``'s values and edge ids (contiguous CPU tensors,
    one value row per edge, int64 ids)."""
    values, eids = A.values, A.eids
    return (eids is None or (_index(eids) and eids.numel() == A.nnz)) and (
        values is None
        or (
            values.device.type == "cpu"
            and values.is_contiguous()
            and values.shape[:1] == (A.nnz,)
            and not values.requires_grad
        )
    )


def slice_cols(A: CSC, cols: torch.Tensor):
    """``A[:, cols]`` (:func:`.extract.slice_cols`: the same CSC, field for field) by one
    pass copying each column's segment; None where the torch code must run.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> S = slice_cols(A.csc, seeds)
    >>> S.col_ids
    tensor([0, 1, 2])
    """
    if not (_takes(A, cols) and _values_taken(A)):
        return None
    fns = build()
    if fns is None:
        return None
    C = cols.numel()
    E = fns["gs_lw_frontier_edges"](
        A.indptr.data_ptr(), A.indptr.numel() - 1, A.nnz, cols.data_ptr(), C
    )
    if E < 0:
        return None
    values = A.values
    indptr = torch.empty(C + 1, dtype=torch.int64)
    rows = torch.empty(E, dtype=torch.int64)
    eids = torch.empty(E, dtype=torch.int64)
    out_values = None if values is None else values.new_empty((E, *values.shape[1:]))
    fns["gs_lw_slice"](
        A.indptr.data_ptr(),
        A.rows.data_ptr(),
        cols.data_ptr(),
        C,
        _ptr(A.eids),
        _ptr(values),
        0 if values is None else values.element_size() * values[:1].numel(),
        indptr.data_ptr(),
        rows.data_ptr(),
        eids.data_ptr(),
        _ptr(out_values),
    )
    return CSC.of(A.num_nodes, indptr, rows, A.row_ids, cols, out_values, eids)


def unique_rows(rows: torch.Tensor, num_rows: int, inverse: bool = False):
    """``torch.unique(rows)`` (ascending), with ``return_inverse=inverse``, of rows in
    ``[0, num_rows)``: the same tensors, by a bitmap over the row space instead of a sort;
    None where the torch code must run (a row outside the space, tensors of another kind).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.tensor([0, 1, 2])
    >>> S = slice_cols(A.csc, seeds)
    >>> local, inverse = unique_rows(S.rows, S.num_rows, inverse=True)  # a compaction
    >>> local
    tensor([23, 55, 60, 63, 66, 67, 76, 80, 84])
    """
    if not (enabled() and _index(rows) and 0 <= num_rows <= MAX_ROWS):
        return None
    fns = build()
    if fns is None:
        return None
    E = rows.numel()
    uniq = torch.empty(min(E, num_rows), dtype=torch.int64)
    inv = torch.empty(E, dtype=torch.int64) if inverse else None
    n = fns["gs_lw_unique"](rows.data_ptr(), E, num_rows, uniq.data_ptr(), _ptr(inv))
    if n < 0:
        return None
    uniq = _exact(uniq, n)
    return (uniq, inv) if inverse else uniq


__all__ = [
    "EDGES_PER_THREAD",
    "ENABLED",
    "MAX_ROWS",
    "THREADS",
    "available",
    "build",
    "candidates",
    "enabled",
    "keep_chosen",
    "slice_cols",
    "slice_row_sum",
    "unique_rows",
]
