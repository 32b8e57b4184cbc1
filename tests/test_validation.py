"""docs/architecture.md §6: bad input is a clear Python exception naming the argument, raised
before anything runs; the documented behaviours hold instead of errors.

Every bad-input case runs with the backend instrumented: no backend op may run
once the bad call starts, and the random stream must not move (a failed call
takes no op ordinal).
"""

import functools
import re

import numpy as np
import pytest
import torch

import gsample as gs

# 0->1, 2->1, 3->1, 1->2, 2->2, 0->3, 4->0; node 5 isolated
EI = torch.tensor([[0, 2, 3, 1, 2, 0, 4], [1, 1, 1, 2, 2, 3, 0]])
N = 6
E = EI.shape[1]


@pytest.fixture
def A():
    return gs.Matrix.from_edge_index(EI, num_nodes=N, weight=torch.arange(1.0, E + 1))


def L(*x, dtype=torch.int64, device=None):
    """A 1-D id tensor ``L(0, 1)``, or a (2, E) edge index ``L([src...], [dst...])``."""
    if x and isinstance(x[0], list):
        return torch.tensor(list(x), dtype=dtype, device=device)
    return torch.tensor(x, dtype=dtype, device=device)


META = torch.device("meta")


class Operands:
    """Matrices the cases use as operands, built before the bad call is measured."""

    def __init__(self, A):
        self.sub = A[:, L(1, 2, 1)]  # C = 3 columns, degrees 3, 2, 3: E = 8
        self.sub0 = self.sub * 0.0
        self.neg = -A
        self.sub_rows = self.sub[L(0, 1, 2, 3), :]
        self.row_sliced = A[L(0, 2), :]  # R = 2
        self.sampled = self.sub.individual_sample(1)
        self.sub_T = self.sub.T  # (3, N)
        self.features = gs.sddmm(A, torch.ones(N, 2), torch.ones(N, 2), "mul")  # (E, 2) values
        self.features_T = self.features.T


def _noop(A, seeds):
    return seeds


CASES = [
    # --- ids: cols
    ("cols_out_of_range", lambda A, S: A[:, L(0, N)], IndexError, r"\bcols\b.*\b6\b"),
    ("cols_negative", lambda A, S: A[:, L(0, -1)], IndexError, r"\bcols\b.*negative"),
    ("cols_list_negative", lambda A, S: A[:, [-3]], IndexError, r"\bcols\b"),
    ("cols_float", lambda A, S: A[:, L(0, 1, dtype=torch.float32)], TypeError, r"\bcols\b.*float"),
    (
        "cols_bool",
        lambda A, S: A[:, L(True, False, dtype=torch.bool)],
        TypeError,
        r"\bcols\b.*bool",
    ),
    ("cols_2d", lambda A, S: A[:, torch.tensor([[0, 1]])], ValueError, r"\bcols\b.*1-D"),
    ("cols_device", lambda A, S: A[:, L(0, 1, device=META)], ValueError, r"\bcols\b.*meta"),
    ("cols_out_of_range_on_sub", lambda A, S: S.sub[:, L(N + 3)], IndexError, r"\bcols\b"),
    # --- ids: rows
    ("rows_out_of_range", lambda A, S: A[L(0, 99), :], IndexError, r"\brows\b.*\b99\b"),
    ("rows_negative", lambda A, S: A[L(-2), :], IndexError, r"\brows\b.*negative"),
    ("rows_float", lambda A, S: A[L(0.0, dtype=torch.float64), :], TypeError, r"\brows\b"),
    ("rows_bool", lambda A, S: A[L(True, dtype=torch.bool), :], TypeError, r"\brows\b"),
    ("rows_2d", lambda A, S: A[torch.tensor([[0], [1]]), :], ValueError, r"\brows\b"),
    ("rows_device", lambda A, S: A[L(0, device=META), :], ValueError, r"\brows\b.*meta"),
    ("rows_repeated", lambda A, S: A[L(2, 0, 2), :], ValueError, r"\brows\b.*\b2\b"),
    ("rows_repeated_with_cols", lambda A, S: A[L(3, 3), L(1, 2)], ValueError, r"\brows\b.*\b3\b"),
    ("rows_repeated_on_sub", lambda A, S: S.sub[L(0, 1, 0), :], ValueError, r"\brows\b"),
    ("good_rows_cols_out_of_range", lambda A, S: A[L(0), L(N)], IndexError, r"\bcols\b"),
    ("bad_key", lambda A, S: A[L(0)], TypeError, r"A\[rows, cols\]"),
    # --- individual_sample: probs
    (
        "probs_nan",
        lambda A, S: A.individual_sample(1, probs=torch.tensor([1.0] * (E - 1) + [float("nan")])),
        ValueError,
        r"\bprobs\b.*NaN",
    ),
    (
        "probs_inf",
        lambda A, S: A.individual_sample(1, probs=torch.tensor([float("inf")] + [1.0] * (E - 1))),
        ValueError,
        r"\bprobs\b.*inf",
    ),
    (
        "probs_neginf",
        lambda A, S: A.individual_sample(1, probs=torch.tensor([-float("inf")] + [1.0] * (E - 1))),
        ValueError,
        r"\bprobs\b",
    ),
    (
        "probs_negative",
        lambda A, S: A.individual_sample(1, probs=torch.tensor([1.0, -0.5] + [1.0] * (E - 2))),
        ValueError,
        r"\bprobs\b.*negative",
    ),
    (
        "probs_negative_matrix",
        lambda A, S: A.individual_sample(1, probs=S.neg),
        ValueError,
        r"\bprobs\b.*negative",
    ),
    (
        "probs_all_zero_column",
        lambda A, S: S.sub.individual_sample(1, probs=torch.tensor([1.0, 1, 1, 0, 0, 1, 1, 1])),
        ValueError,
        r"\bprobs\b.*column 1.*node 2",
    ),
    (
        "probs_all_zero_column_matrix",
        lambda A, S: S.sub.individual_sample(2, probs=S.sub0),
        ValueError,
        r"\bprobs\b.*zero",
    ),
    (
        "probs_too_short",
        lambda A, S: A.individual_sample(1, probs=torch.ones(E - 1)),
        ValueError,
        rf"\bprobs\b.*\({E},\)",
    ),
    (
        "probs_too_long",
        lambda A, S: S.sub.individual_sample(1, probs=torch.ones(E)),
        ValueError,
        r"\bprobs\b.*\(8,\)",
    ),
    (
        "probs_2d",
        lambda A, S: A.individual_sample(1, probs=torch.ones(E, 1)),
        ValueError,
        r"\bprobs\b",
    ),
    (
        "probs_int",
        lambda A, S: A.individual_sample(1, probs=torch.ones(E, dtype=torch.long)),
        TypeError,
        r"\bprobs\b",
    ),
    (
        "probs_device",
        lambda A, S: A.individual_sample(1, probs=torch.ones(E, device=META)),
        ValueError,
        r"\bprobs\b.*meta",
    ),
    (
        "probs_matrix_other_sparsity",
        lambda A, S: A.individual_sample(1, probs=S.sub),
        ValueError,
        r"\bprobs\b.*sparsity",
    ),
    # --- collective_sample: node_probs
    (
        "node_probs_nan",
        lambda A, S: A.collective_sample(
            2, node_probs=torch.tensor([1.0, float("nan")] + [1.0] * (N - 2))
        ),
        ValueError,
        r"\bnode_probs\b.*NaN",
    ),
    (
        "node_probs_inf",
        lambda A, S: A.collective_sample(
            2, node_probs=torch.tensor([float("inf")] + [1.0] * (N - 1))
        ),
        ValueError,
        r"\bnode_probs\b",
    ),
    (
        "node_probs_negative",
        lambda A, S: A.collective_sample(2, node_probs=torch.tensor([-1.0] + [1.0] * (N - 1))),
        ValueError,
        r"\bnode_probs\b.*negative",
    ),
    # rows 0..4 have edges; only isolated node 5 has mass
    (
        "node_probs_zero_on_rows_with_edges",
        lambda A, S: A.collective_sample(2, node_probs=torch.tensor([0.0] * (N - 1) + [3.0])),
        ValueError,
        r"\bnode_probs\b.*zero",
    ),
    (
        "node_probs_zero_on_sub",
        lambda A, S: S.sub.collective_sample(1, node_probs=torch.tensor([0.0, 0, 0, 0, 1, 1])),
        ValueError,
        r"\bnode_probs\b",
    ),
    (
        "node_probs_wrong_length",
        lambda A, S: A.collective_sample(2, node_probs=torch.ones(N + 1)),
        ValueError,
        rf"\bnode_probs\b.*\({N},\)",
    ),
    (
        "node_probs_per_column_on_row_sliced",
        lambda A, S: S.row_sliced.collective_sample(1, node_probs=torch.ones(N)),
        ValueError,
        r"\bnode_probs\b.*\(2,\)",
    ),
    (
        "node_probs_int",
        lambda A, S: A.collective_sample(2, node_probs=torch.ones(N, dtype=torch.int32)),
        TypeError,
        r"\bnode_probs\b",
    ),
    (
        "node_probs_device",
        lambda A, S: A.collective_sample(2, node_probs=torch.ones(N, device=META)),
        ValueError,
        r"\bnode_probs\b.*meta",
    ),
    # --- k and replace
    ("k_negative", lambda A, S: A.individual_sample(-1), ValueError, r"\bk\b.*>= 0"),
    ("k_negative_collective", lambda A, S: A.collective_sample(-3), ValueError, r"\bk\b"),
    ("k_float", lambda A, S: A.individual_sample(2.0), TypeError, r"\bk\b.*int"),
    ("k_float_collective", lambda A, S: A.collective_sample(1.5), TypeError, r"\bk\b"),
    ("k_bool", lambda A, S: A.individual_sample(True), TypeError, r"\bk\b.*bool"),
    ("k_bool_collective", lambda A, S: A.collective_sample(False), TypeError, r"\bk\b"),
    ("k_tensor", lambda A, S: A.individual_sample(torch.tensor(2.5)), TypeError, r"\bk\b"),
    ("k_str", lambda A, S: A.individual_sample("2"), TypeError, r"\bk\b"),
    ("replace_int", lambda A, S: A.individual_sample(1, replace=1), TypeError, r"\breplace\b"),
    (
        "replace_str",
        lambda A, S: A.individual_sample(1, replace="False"),
        TypeError,
        r"\breplace\b",
    ),
    ("replace_none", lambda A, S: A.collective_sample(1, replace=None), TypeError, r"\breplace\b"),
    # --- axis
    *[
        (
            f"axis_{bad!r}_{op}",
            functools.partial(lambda A, S, op, bad: getattr(A, op)(bad), op=op, bad=bad),
            ValueError,
            r"\baxis\b",
        )
        for op in ("sum", "max", "mean")
        for bad in (2, -1, True, None, "0")
        if (op, bad) != ("sum", None)  # A.sum(None): the sum of every edge
    ],
    *[
        (
            f"axis_{bad!r}_{op}",
            functools.partial(
                lambda A, S, op, bad: getattr(A, op)(torch.ones(N), bad), op=op, bad=bad
            ),
            ValueError,
            r"\baxis\b",
        )
        for op in ("mul", "div", "add", "sub")
        for bad in (2, -1, True, False)
    ],
    # --- broadcast vectors
    (
        "bcast_axis0_wrong_length",
        lambda A, S: S.sub.mul(torch.ones(N), 0),
        ValueError,
        r"\bv\b.*column.*\(3,\)",
    ),
    (
        "bcast_axis1_wrong_length",
        lambda A, S: S.sub.div(torch.ones(3), 1),
        ValueError,
        r"\bv\b.*row.*\(6,\)",
    ),
    ("bcast_2d", lambda A, S: A.add(torch.ones(N, 2), 0), ValueError, r"\bv\b"),
    ("bcast_device", lambda A, S: A.sub(torch.ones(N, device=META), 1), ValueError, r"\bv\b.*meta"),
    # --- edge maps
    (
        "edge_tensor_too_short",
        lambda A, S: A * torch.ones(E - 1),
        ValueError,
        rf"\bother\b.*\({E},\)",
    ),
    ("edge_tensor_too_long_r", lambda A, S: torch.ones(E + 2) - A, ValueError, r"\bother\b"),
    ("edge_tensor_add", lambda A, S: S.sub + torch.ones(E), ValueError, r"\bother\b.*\(8,\)"),
    ("edge_tensor_pow", lambda A, S: A ** torch.ones(2 * E), ValueError, r"\bother\b"),
    ("edge_tensor_3d", lambda A, S: A / torch.ones(E, 1, 1), ValueError, r"\bother\b"),
    (
        "edge_tensor_device",
        lambda A, S: A * torch.ones(E, device=META),
        ValueError,
        r"\bother\b.*meta",
    ),
    ("edge_bool_scalar", lambda A, S: A * True, TypeError, r"\bother\b"),
    ("edge_str", lambda A, S: A + "1", TypeError, r"\bother\b"),
    ("edge_matrix_other_sparsity", lambda A, S: A * S.sub, ValueError, r"\bother\b.*sparsity"),
    ("edge_matrix_other_sparsity_div", lambda A, S: S.sub / A, ValueError, r"\bother\b.*sparsity"),
    ("edge_matrix_other_rows", lambda A, S: S.sub - S.sub_rows, ValueError, r"\bother\b"),
    ("edge_matrix_sampled", lambda A, S: S.sub + S.sampled, ValueError, r"\bother\b"),
    # --- products
    ("spmm_wrong_length", lambda A, S: S.sub @ torch.ones(N), ValueError, r"\bD\b.*\(3,\)"),
    ("spmm_t_wrong_length", lambda A, S: S.sub_T @ torch.ones(3, 2), ValueError, r"\bD\b.*\(6,"),
    ("spmm_device", lambda A, S: A @ torch.ones(N, device=META), ValueError, r"\bD\b.*meta"),
    ("spmm_3d", lambda A, S: A @ torch.ones(N, 2, 2), ValueError, r"\bD\b"),
    (
        "spmm_feature_values",
        lambda A, S: S.features @ torch.ones(N),
        ValueError,
        r"\bA\b.*values of shape \(\d+, 2\)",
    ),
    (
        "spmm_feature_values_T",
        lambda A, S: S.features_T @ torch.ones(N),
        ValueError,
        r"\bA\b.*values of shape",
    ),
    (
        "sddmm_bad_op",
        lambda A, S: gs.sddmm(A, torch.ones(N), torch.ones(N), "max"),
        ValueError,
        r"\bop\b.*max",
    ),
    (
        "sddmm_bad_op_none",
        lambda A, S: gs.sddmm(A, torch.ones(N), torch.ones(N), None),
        ValueError,
        r"\bop\b",
    ),
    (
        "sddmm_U_rows",
        lambda A, S: gs.sddmm(S.sub, torch.ones(3, 2), torch.ones(3, 2)),
        ValueError,
        r"\bU\b.*\(6,",
    ),
    (
        "sddmm_V_cols",
        lambda A, S: gs.sddmm(S.sub, torch.ones(N, 2), torch.ones(N, 2)),
        ValueError,
        r"\bV\b.*\(3,",
    ),
    (
        "sddmm_feature_mismatch",
        lambda A, S: gs.sddmm(A, torch.ones(N, 4), torch.ones(N, 3)),
        ValueError,
        r"\bU, V\b.*\(6, 4\).*\(6, 3\)",
    ),
    (
        "sddmm_dim_mismatch",
        lambda A, S: gs.sddmm(A, torch.ones(N), torch.ones(N, 3)),
        ValueError,
        r"\bU, V\b",
    ),
    (
        "sddmm_device",
        lambda A, S: gs.sddmm(A, torch.ones(N), torch.ones(N, device=META)),
        ValueError,
        r"\bV\b.*meta",
    ),
    (
        "sddmm_not_matrix",
        lambda A, S: gs.sddmm(torch.ones(2, 2), torch.ones(2), torch.ones(2)),
        TypeError,
        r"\bA\b",
    ),
    # --- DataLoader
    (
        "loader_seed_out_of_range",
        lambda A, S: gs.DataLoader(A, _noop, L(0, N), batch_size=1),
        IndexError,
        r"\bseeds\b.*\b6\b",
    ),
    (
        "loader_seed_negative",
        lambda A, S: gs.DataLoader(A, _noop, L(-1, 0), batch_size=1),
        IndexError,
        r"\bseeds\b.*negative",
    ),
    (
        "loader_seed_float",
        lambda A, S: gs.DataLoader(A, _noop, L(0.0, dtype=torch.float32), batch_size=1),
        TypeError,
        r"\bseeds\b",
    ),
    (
        "loader_seed_bool",
        lambda A, S: gs.DataLoader(A, _noop, L(True, dtype=torch.bool), batch_size=1),
        ValueError,
        r"\bseeds\b: a boolean mask needs one entry per graph node",
    ),
    (
        "loader_seed_2d",
        lambda A, S: gs.DataLoader(A, _noop, torch.zeros(2, 2, dtype=torch.long), batch_size=1),
        ValueError,
        r"\bseeds\b",
    ),
    (
        "loader_seed_device",
        lambda A, S: gs.DataLoader(A, _noop, L(0, device=META), batch_size=1),
        ValueError,
        r"\bseeds\b.*meta",
    ),
    (
        "loader_batch_size_0",
        lambda A, S: gs.DataLoader(A, _noop, L(0, 1), batch_size=0),
        ValueError,
        r"\bbatch_size\b",
    ),
    (
        "loader_batch_size_negative",
        lambda A, S: gs.DataLoader(A, _noop, L(0, 1), batch_size=-4),
        ValueError,
        r"\bbatch_size\b",
    ),
    (
        "loader_batch_size_float",
        lambda A, S: gs.DataLoader(A, _noop, L(0, 1), batch_size=2.0),
        TypeError,
        r"\bbatch_size\b",
    ),
    (
        "loader_batch_size_bool",
        lambda A, S: gs.DataLoader(A, _noop, L(0, 1), batch_size=True),
        TypeError,
        r"\bbatch_size\b",
    ),
    (
        "loader_sampler_not_callable",
        lambda A, S: gs.DataLoader(A, "graphsage", L(0, 1), batch_size=1),
        TypeError,
        r"\bsampler_fn\b",
    ),
    (
        "loader_sampler_none",
        lambda A, S: gs.DataLoader(A, None, L(0, 1), batch_size=1),
        TypeError,
        r"\bsampler_fn\b",
    ),
    (
        "loader_A_not_matrix",
        lambda A, S: gs.DataLoader(EI, _noop, L(0, 1), batch_size=1),
        TypeError,
        r"\bA\b",
    ),
    (
        "loader_shuffle_not_bool",
        lambda A, S: gs.DataLoader(A, _noop, L(0, 1), batch_size=1, shuffle=1),
        TypeError,
        r"\bshuffle\b",
    ),
    (
        "loader_seed_not_int",
        lambda A, S: gs.DataLoader(A, _noop, L(0, 1), batch_size=1, seed=1.5),
        TypeError,
        r"\bseed\b",
    ),
]


@pytest.mark.parametrize("call, exc, match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_before_anything_runs(A, ran_ops, call, exc, match):
    gs.manual_seed(7)
    S = Operands(A)
    ran_ops.clear()
    with pytest.raises(exc, match=match):
        call(A, S)
    assert ran_ops == [], f"ops ran before the bad input was rejected: {ran_ops}"
    # a rejected call takes no op ordinal: the next sample is the one a stream
    # without the failed call gives
    after = S.sub.individual_sample(1).edges()[2]
    gs.manual_seed(7)
    Operands(A)
    fresh = S.sub.individual_sample(1).edges()[2]
    assert torch.equal(after, fresh)


# ----------------------------------------------------------------------------- constructors
CTOR_CASES = [
    (
        "ei_dst_out_of_range",
        lambda: gs.Matrix.from_edge_index(L([0, 1], [1, 4]), num_nodes=4),
        IndexError,
        r"\bedge_index\b.*\b4\b",
    ),
    (
        "ei_src_out_of_range",
        lambda: gs.Matrix.from_edge_index(L([0, 7], [1, 2]), num_nodes=4),
        IndexError,
        r"\bedge_index\b.*\b7\b",
    ),
    (
        "ei_negative_src",
        lambda: gs.Matrix.from_edge_index(L([0, -1], [1, 2])),
        IndexError,
        r"\bedge_index\b.*negative",
    ),
    (
        "ei_negative_dst",
        lambda: gs.Matrix.from_edge_index(L([0, 1], [-5, 2]), num_nodes=4),
        IndexError,
        r"\bedge_index\b.*negative",
    ),
    (
        "ei_float",
        lambda: gs.Matrix.from_edge_index(torch.tensor([[0.0], [1.0]])),
        TypeError,
        r"\bedge_index\b.*float",
    ),
    (
        "ei_bool",
        lambda: gs.Matrix.from_edge_index(torch.tensor([[True], [False]])),
        TypeError,
        r"\bedge_index\b",
    ),
    (
        "ei_shape_3xE",
        lambda: gs.Matrix.from_edge_index(torch.zeros(3, 2, dtype=torch.long)),
        ValueError,
        r"\bedge_index\b.*\(2, E\)",
    ),
    (
        "ei_1d",
        lambda: gs.Matrix.from_edge_index(torch.zeros(4, dtype=torch.long)),
        ValueError,
        r"\bedge_index\b",
    ),
    (
        "ei_weight_too_short",
        lambda: gs.Matrix.from_edge_index(L([0, 1], [1, 0]), weight=torch.ones(1)),
        ValueError,
        r"\bweight\b.*\(2,\)",
    ),
    (
        "ei_weight_2d",
        lambda: gs.Matrix.from_edge_index(L([0, 1], [1, 0]), weight=torch.ones(2, 2)),
        ValueError,
        r"\bweight\b",
    ),
    (
        "ei_weight_device",
        lambda: gs.Matrix.from_edge_index(L([0, 1], [1, 0]), weight=torch.ones(2, device=META)),
        ValueError,
        r"\bweight\b.*meta",
    ),
    (
        "ei_num_nodes_negative",
        lambda: gs.Matrix.from_edge_index(L([0], [0]), num_nodes=-1),
        ValueError,
        r"\bnum_nodes\b",
    ),
    (
        "ei_num_nodes_float",
        lambda: gs.Matrix.from_edge_index(L([0], [0]), num_nodes=2.0),
        TypeError,
        r"\bnum_nodes\b",
    ),
    # an int32 indptr that overflowed past 2**31 - 1 wraps negative: no longer non-decreasing
    (
        "csc_int32_overflow",
        lambda: gs.Matrix.from_csc(
            torch.tensor([0, 2, -2147483646, 3], dtype=torch.int32), L(0, 1, 2)
        ),
        ValueError,
        r"\bindptr\b.*non-decreasing",
    ),
    (
        "csc_decreasing",
        lambda: gs.Matrix.from_csc(torch.tensor([0, 3, 1, 3], dtype=torch.int32), L(0, 1, 2)),
        ValueError,
        r"\bindptr\b.*int64",
    ),
    ("csc_bad_end", lambda: gs.Matrix.from_csc(L(0, 1, 2), L(0, 1, 1)), ValueError, r"\bindptr\b"),
    (
        "csc_bad_start",
        lambda: gs.Matrix.from_csc(L(1, 1, 3), L(0, 1, 1)),
        ValueError,
        r"\bindptr\b",
    ),
    ("csc_empty_indptr", lambda: gs.Matrix.from_csc(L(), L()), ValueError, r"\bindptr\b"),
    (
        "csc_float_indptr",
        lambda: gs.Matrix.from_csc(torch.tensor([0.0, 1.0]), L(0)),
        TypeError,
        r"\bindptr\b",
    ),
    (
        "csc_indices_out_of_range",
        lambda: gs.Matrix.from_csc(L(0, 1, 2), L(0, 2)),
        IndexError,
        r"\bindices\b.*\b2\b",
    ),
    (
        "csc_indices_negative",
        lambda: gs.Matrix.from_csc(L(0, 1, 2), L(0, -1)),
        IndexError,
        r"\bindices\b.*negative",
    ),
    (
        "csc_indices_float",
        lambda: gs.Matrix.from_csc(L(0, 1, 2), torch.tensor([0.0, 1.0])),
        TypeError,
        r"\bindices\b",
    ),
    (
        "csc_num_nodes_mismatch",
        lambda: gs.Matrix.from_csc(L(0, 1, 2), L(0, 1), num_nodes=3),
        ValueError,
        r"\bnum_nodes\b",
    ),
    (
        "csc_weight_length",
        lambda: gs.Matrix.from_csc(L(0, 1, 2), L(0, 1), weight=torch.ones(3)),
        ValueError,
        r"\bweight\b",
    ),
]


@pytest.mark.parametrize(
    "call, exc, match", [c[1:] for c in CTOR_CASES], ids=[c[0] for c in CTOR_CASES]
)
def test_bad_constructor_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# ----------------------------------------------------------------------------- k overflow
@pytest.mark.parametrize("replace", [False, True], ids=["no_replace", "replace"])
@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
@pytest.mark.parametrize("collective", [False, True], ids=["individual", "collective"])
def test_k_beyond_int64(A, replace, weighted, collective):
    # k = 2**63 does not fit an int64: either the call rejects k by name, or (without
    # replacement) it returns every edge as for any k above the degrees. A generic
    # torch overflow error or a silently empty sample is neither.
    k = 2**63
    sub = A[:, L(1, 2, 1)]
    if collective:
        probs = torch.ones(N) if weighted else None
        call = functools.partial(sub.collective_sample, k, node_probs=probs, replace=replace)
    else:
        probs = torch.ones(sub.num_edges) if weighted else None
        call = functools.partial(sub.individual_sample, k, probs=probs, replace=replace)
    try:
        out = call()
    except (ValueError, OverflowError) as e:
        assert re.search(r"\bk\b", str(e)), f"message does not name k: {e!r}"
    else:
        assert not replace, "with replacement 2**63 draws per column cannot succeed"
        assert out.num_edges == sub.num_edges


# ---------------------------------------------------------------------------- documented behaviours
def _sample_all(A, cols, rows=None):
    gs.manual_seed(5)
    sub = A[:, cols] if rows is None else A[rows, cols]
    s1 = sub.individual_sample(2)
    s2 = sub.individual_sample(1, probs=sub**2, replace=True)
    s3 = sub.collective_sample(2)
    return [sub.edges(), s1.edges(), s2.edges(), s3.edges(), sub.all_nodes(), sub.row()]


def _assert_same(a, b):
    for x, y in zip(a, b):
        if isinstance(x, tuple):
            for p, q in zip(x, y):
                assert torch.equal(p, q)
        else:
            assert torch.equal(x, y)


def test_non_contiguous_ids_work(A):
    grid = torch.tensor([[1, 0], [2, 0], [1, 0], [3, 5]])
    cols = grid[:, 0]  # a strided view
    rows = torch.tensor([[4, 9], [0, 9], [2, 9], [1, 9]])[:, 0]
    assert not cols.is_contiguous() and not rows.is_contiguous()
    _assert_same(_sample_all(A, cols), _sample_all(A, cols.contiguous()))
    _assert_same(_sample_all(A, cols, rows), _sample_all(A, cols.contiguous(), rows.contiguous()))


def test_non_contiguous_operands_work(A):
    sub = A[:, L(1, 2, 1)]
    E_ = sub.num_edges
    p = torch.arange(1.0, 2 * E_ + 1).reshape(E_, 2)[:, 1]
    v = torch.arange(1.0, 7.0).reshape(3, 2)[:, 0]
    Dm = torch.arange(12.0).reshape(4, 3).T  # (3, 4), non-contiguous
    assert not p.is_contiguous() and not v.is_contiguous() and not Dm.is_contiguous()
    assert torch.equal((sub * p).values, (sub * p.contiguous()).values)
    assert torch.equal(sub.mul(v, 0).values, sub.mul(v.contiguous(), 0).values)
    assert torch.equal(sub @ Dm, sub @ Dm.contiguous())
    gs.manual_seed(1)
    a = sub.individual_sample(2, probs=p).edges()
    gs.manual_seed(1)
    b = sub.individual_sample(2, probs=p.contiguous()).edges()
    _assert_same([a], [b])
    ei = torch.stack([EI[1], EI[0]], dim=1).T.flip(0)  # a non-contiguous (2, E) view
    assert not ei.is_contiguous()
    B = gs.Matrix.from_edge_index(ei, num_nodes=N)
    _assert_same([B.edges()], [gs.Matrix.from_edge_index(ei.contiguous(), num_nodes=N).edges()])


def test_non_contiguous_seeds_in_loader(A):
    seeds = torch.tensor([[0, 9], [3, 9], [1, 9], [2, 9], [4, 9]])[:, 0]
    assert not seeds.is_contiguous()

    def fn(A, s):
        return A[:, s].individual_sample(1).edges()

    got = [(b.seeds, b.out) for b in gs.DataLoader(A, fn, seeds, batch_size=2, seed=3)]
    exp = [(b.seeds, b.out) for b in gs.DataLoader(A, fn, seeds.contiguous(), batch_size=2, seed=3)]
    assert len(got) == len(exp) == 3
    for (s1, o1), (s2, o2) in zip(got, exp):
        assert torch.equal(s1, s2)
        _assert_same([o1], [o2])


@pytest.mark.parametrize("dtype", [torch.int32, torch.int16])
def test_narrow_int_ids_work_like_int64(A, dtype):
    cols, rows = L(1, 2, 1, 3), L(4, 0, 2, 1)
    _assert_same(_sample_all(A, cols.to(dtype)), _sample_all(A, cols))
    _assert_same(_sample_all(A, cols.to(dtype), rows.to(dtype)), _sample_all(A, cols, rows))
    B = gs.Matrix.from_edge_index(EI.to(dtype), num_nodes=N)
    _assert_same([B.edges()], [gs.Matrix.from_edge_index(EI, num_nodes=N).edges()])
    assert B.edges()[0].dtype == torch.int64
    assert A[:, cols.to(dtype)].column().dtype == torch.int64

    def fn(A, s):
        return A[:, s].individual_sample(1).edges()

    a = [b.out for b in gs.DataLoader(A, fn, L(0, 3, 1, 2).to(dtype), batch_size=2, seed=0)]
    b = [b.out for b in gs.DataLoader(A, fn, L(0, 3, 1, 2), batch_size=2, seed=0)]
    _assert_same(a, b)


def test_int32_csc_works_like_int64():
    ptr, idx = L(0, 2, 2, 5), L(1, 0, 2, 0, 1)
    a = gs.Matrix.from_csc(ptr.to(torch.int32), idx.to(torch.int32))
    b = gs.Matrix.from_csc(ptr, idx)
    _assert_same([a.edges()], [b.edges()])


def test_lists_and_numpy_ids_work(A):
    t = A[:, L(1, 2, 1)].edges()
    _assert_same([A[:, [1, 2, 1]].edges()], [t])
    _assert_same([A[:, np.array([1, 2, 1], dtype=np.int32)].edges()], [t])
    gs.manual_seed(0)
    x = A[:, L(1, 2)].individual_sample(np.int64(1)).edges()
    gs.manual_seed(0)
    y = A[:, L(1, 2)].individual_sample(1).edges()
    _assert_same([x], [y])
    assert A[:, L(1)].individual_sample(1, replace=np.bool_(True)).num_edges == 1


@pytest.mark.parametrize("replace", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_k_zero_gives_empty_sample(A, replace, weighted):
    sub = A[:, L(1, 2, 1, 5)]
    probs = (sub**2) if weighted else None
    s = sub.individual_sample(0, probs=probs, replace=replace)
    assert s.num_edges == 0
    assert s.shape == sub.shape
    assert torch.equal(s.column(), sub.column())
    assert s.row().numel() == 0
    assert torch.equal(s.all_nodes(), L(1, 2, 5))
    assert torch.equal(s.sum(axis=0), torch.zeros(4))
    node_probs = sub.sum(axis=1) if weighted else None
    c = sub.collective_sample(0, node_probs=node_probs, replace=replace)
    assert c.num_edges == 0 and c.shape == (0, 4)
    assert torch.equal(c.column(), sub.column())


@pytest.mark.parametrize("weighted", [False, True])
def test_fewer_than_k_edges_returns_all(A, weighted):
    sub = A[:, L(1, 2, 0, 1, 5)]  # degrees 3, 2, 1, 3, 0
    probs = sub * 2.0 if weighted else None
    s = sub.individual_sample(3, probs=probs)
    _assert_same([s.edges()], [sub.edges()])
    assert torch.equal(s.values, sub.values)
    s = sub.individual_sample(100, probs=probs)
    _assert_same([s.edges()], [sub.edges()])
    # a column with more than k edges returns exactly k of its own
    s = sub.individual_sample(2, probs=probs)
    deg = torch.bincount(torch.repeat_interleave(torch.arange(5), s.csc.indptr.diff()), minlength=5)
    assert deg.tolist() == [2, 2, 1, 2, 0]
    assert set(s.edges()[2].tolist()) <= set(sub.edges()[2].tolist())
    # collective: fewer than k rows with edges -> all of them
    c = sub.collective_sample(50, node_probs=sub.sum(axis=1) if weighted else None)
    assert torch.equal(c.row_ids, sub.row())
    assert c.num_edges == sub.num_edges


def test_fewer_than_k_positive_probability_edges_returns_them(A):
    sub = A[:, L(1)]  # rows 0, 2, 3
    s = sub.individual_sample(3, probs=torch.tensor([1.0, 0.0, 2.0]))
    assert s.edges()[0].tolist() == [0, 3]
    c = sub.collective_sample(3, node_probs=torch.tensor([1.0, 0, 0, 2.0, 0, 0]))
    assert c.row_ids.tolist() == [0, 3]


def test_empty_cols_are_a_matrix_of_no_column(A):
    """An empty frontier (a hop that reached no new node) is a slice of no column, on the
    graph and on a sub-matrix; sampling it draws nothing."""
    for M in (A, A[:, L(1, 2, 1)]):
        s = M[:, torch.tensor([], dtype=torch.long)]
        assert s.shape == (M.shape[0], 0) and s.num_edges == 0
        assert s.individual_sample(2).shape == (M.shape[0], 0)


def test_empty_rows_are_allowed(A):
    s = A[torch.tensor([], dtype=torch.long), :]
    assert s.shape == (0, N) and s.num_edges == 0


# ----------------------------------------------------------------------------- sizes
def _huge_k(A, seeds, weighted=False):
    sub = A[:, seeds]
    return sub.individual_sample(2**62, probs=sub**2 if weighted else None, replace=True)


@pytest.mark.parametrize("weighted", [False, True], ids=["uniform", "weighted"])
@pytest.mark.parametrize("path", ["eager", "compiled", "loader"])
def test_a_sample_too_large_for_memory_names_k(A, path, weighted):
    """k = 2**62 draws with replacement fit an int64 but no memory: a ValueError naming k,
    not an allocator's message (issue 11), on every path."""
    fn = functools.partial(_huge_k, weighted=weighted)
    seeds = L(1, 2)
    with pytest.raises(ValueError, match=r"^k: 2 columns x k = 4611686018427387904 draws"):
        if path == "eager":
            fn(A, seeds)
        elif path == "compiled":
            gs.compile(fn)(A, seeds)
        else:
            list(gs.DataLoader(A, gs.compile(fn), L(1, 2, 3), batch_size=2))


def test_a_huge_k_without_replacement_returns_every_edge(A):
    seeds = L(1, 2)
    for fn in (
        lambda A, s: A[:, s].individual_sample(2**62),
        gs.compile(lambda A, s: A[:, s].individual_sample(2**62)),
    ):
        assert fn(A, seeds).num_edges == A[:, seeds].num_edges


@pytest.mark.parametrize(
    "make",
    [
        lambda: gs.Matrix.from_edge_index(EI, num_nodes=2**60),
        lambda: gs.datasets.rmat(2**60, 10),
        lambda: gs.datasets.rmat(10, 2**60),
    ],
    ids=["from_edge_index", "rmat_nodes", "rmat_edges"],
)
def test_a_graph_too_large_for_memory_names_the_argument(make):
    with pytest.raises(ValueError, match=r"^num_(nodes|edges): .* would need about .* bytes"):
        make()


# ----------------------------------------------------------------------------- checked once
def test_weights_that_passed_are_not_read_again_until_they_change(monkeypatch):
    """A CPU weight vector that passed the finite / non-negative check is not scanned again
    on the next call; changed in place (its version bumps), it is, and a bad value raises;
    a tensor that failed is never taken as passed."""
    from gsample.base import validate as V

    scans = []
    real = torch.aminmax
    monkeypatch.setattr(torch, "aminmax", lambda t: scans.append(t.numel()) or real(t))
    p = torch.rand(50) + 0.1
    V.finite_nonnegative(p, "node_probs")
    V.finite_nonnegative(p, "node_probs")
    assert scans == [50]  # the second call read nothing
    p[3] = -1.0  # in place: the version moves on
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        V.finite_nonnegative(p, "node_probs")
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        V.finite_nonnegative(p, "node_probs")  # a failure is not remembered as a pass
    view = p[:2]  # another tensor object: checked on its own
    V.finite_nonnegative(view, "node_probs")
    assert scans == [50, 50, 50, 2]
    q = torch.rand(10)
    q[0] = float("nan")
    with pytest.raises(ValueError, match="NaN or infinite"):
        V.finite_nonnegative(q, "probs")


def test_a_compiled_sampler_still_refuses_weights_made_bad_in_place():
    """The same degree tensor handed to a compiled collective sampler every call: made
    negative in place between calls, the next call raises."""
    A = gs.Matrix.from_edge_index(torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]]), num_nodes=4)
    probs = torch.ones(4)

    @gs.compile
    def layer(A, seeds, probs):
        return A[:, seeds].collective_sample(2, node_probs=probs)

    layer(A, torch.tensor([0, 1]), probs)
    layer(A, torch.tensor([0, 1]), probs)
    probs[2] = -1.0
    with pytest.raises(ValueError, match="node_probs: contains negative values"):
        layer(A, torch.tensor([0, 1]), probs)
