"""``first_reached``'s kernels (``kernels/first_reached.cu``) against the torch code, bit for bit.

On the CPU (no GPU needed): the kernel source compiled as C++ (one thread runs every loop:
``helpers.CUDA_AS_CPP``; the compaction's single-pass scan as its sequential twin) and called
by the CUDA backend's own host code (:func:`gsample.backend.cuda.first_reached.run`, with a
CPU ``launch``), on random samples: duplicate pairs, pairs already in the state, empty
frontiers and states, one column, a sample with a row space of its own, super-batches,
integer and float carried values, columns out of (slot, node) order; bad slots, rows,
columns and states flagged, and the next call unharmed. On a GPU (marked ``cuda``): the CUDA
backend's implementation equals the torch backend's on the same inputs, reads back once,
and raises on adversarial ids (``adversarial.bad_ids``) without harming the next call.

The sync-free implementation (``first_reached_sync_free``) is checked the same way on bounded
inputs: samples, slots, carried values and states in buffers longer than their counts, with
garbage (bad ids, bad slots, unsorted keys) in the padding, hop after hop on its own bounded
results; its errors raised through deferred checks (the call completes, the recorded check
raises), and on a GPU it equals the exact implementation and the torch code, makes no host
synchronisation and replays in a CUDA graph."""

from __future__ import annotations

import ctypes
import os
from unittest import mock

import pytest
import torch
from adversarial import bad_ids
from helpers import CUDA_AS_CPP, CXX, build_cpp, hop_sample, host_syncs

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import first_reached as kernels
from gsample.backend.torch import first_reached as reference
from gsample.backend.torch.batched import encode_columns
from gsample.base import validate as V
from gsample.formats.bounded import BoundedCSC, BoundedIds
from gsample.formats.csc import CSC
from gsample.ir import Op


def GPU(f):
    """Marks a test that needs a CUDA GPU (skipped without one)."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
    return pytest.mark.cuda(skip(f))


# ----------------------------------------------------------------------------- inputs
def states(A: CSC, slot, batches, seed: int) -> list:
    """States to start from: none (the columns' pairs), empty, a random sorted one that
    holds some of the sample's pairs, one made by a previous call, and one with keys outside
    the key space (no pair's: they stay in the state)."""
    copies, n = (1, A.num_nodes) if batches is None else batches
    slots = reference.slot_space(copies, n)
    keys = reference.pair_keys(A.global_rows(), slot[A.edge_cols()], n, slots)
    g = torch.Generator().manual_seed(seed)
    some = keys[torch.rand(keys.numel(), generator=g) < 0.4]
    other = torch.randint(0, copies * slots * n, (7,), generator=g)
    mixed = torch.sort(torch.unique(torch.cat([some, other]))).values
    prev = reference.first_reached(A, slot, None, None, batches)[3]
    outside = torch.cat([torch.tensor([-(2**62), -5]), mixed, torch.tensor([2**62 + 1])])
    return [None, torch.empty(0, dtype=torch.int64), mixed, prev, outside]


def carries(C: int, seed: int) -> list:
    g = torch.Generator().manual_seed(seed)
    return [None, torch.randint(-50, 50, (C,), generator=g), torch.rand(C, generator=g)]


CASES = [
    dict(),
    dict(C=1),
    dict(C=1, k=0),
    dict(C=0),
    dict(k=0),
    dict(n=3, C=50),  # nearly every pair repeated
    dict(grouped=False),
    dict(row_space=True),
    dict(copies=3, n=20),
    dict(copies=4, n=7, C=60, row_space=True),
    dict(copies=2, grouped=False),
]


def assert_same(got, ref, what):
    for i, (x, y) in enumerate(zip(got, ref, strict=True)):
        if y is None:
            assert x is None, f"{what}: output {i}"
            continue
        assert x.dtype == y.dtype and x.shape == y.shape, f"{what}: output {i}"
        assert torch.equal(x.cpu(), y.cpu()), f"{what}: output {i}\n{x}\n{y}"


# ----------------------------------------------------------------------------- C++ twin
@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    """The kernels built for the CPU (the compaction's sequential twin)."""
    if CXX is None:
        pytest.skip("no C++ compiler")
    out = tmp_path_factory.mktemp("first_reached") / "libfirst_reached.so"
    src = CUDA_AS_CPP + "#define GS_FR_SEQUENTIAL 1\n" + '#include "first_reached.cu"\n'
    # GS_FR_CXXFLAGS="-fsanitize=address -g" (with libasan preloaded): the same tests under
    # AddressSanitizer
    done = build_cpp(src, out, "-shared", "-fPIC", *os.environ.get("GS_FR_CXXFLAGS", "").split())
    assert done.returncode == 0, done.stderr
    return ctypes.CDLL(str(out))


def _arg(x):
    if isinstance(x, torch.Tensor):
        assert x.is_contiguous() and x.device.type == "cpu"
        return ctypes.c_void_p(x.data_ptr())
    x = int(x)
    return ctypes.c_int64(x - (1 << 64) if x >= 1 << 63 else x)


def on_cpu(lib, A, slot, state, carry, batches, sync_free=False):
    """The CUDA backend's host code (the sync-free one with ``sync_free``: any read-back
    fails the test), its kernels run on the CPU (its checks raise at once)."""
    launched = []

    def launch(family, name, n, *args, grid=None, block=None):
        assert family == "first_reached"
        launched.append(name)
        if n > 0:
            getattr(lib, name)(*[_arg(a) for a in args])

    def memset(t, byte):
        t.view(torch.uint8).fill_(byte)

    def no_read_back(scalars):
        raise AssertionError(f"the sync-free code read {len(scalars)} values back")

    with mock.patch.object(V, "read_back", no_read_back if sync_free else V.read_back):
        out = kernels.run(
            A, slot, state, carry, batches, launch=launch, memset=memset, sync_free=sync_free
        )
    return out, launched


@pytest.mark.parametrize("finish", ["sorted", "grouped"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c) for c in CASES])
def test_kernels_equal_the_torch_code(lib, case, finish, monkeypatch):
    """Both finishes: the sort of the new pairs, and (columns grouped by (batch, slot)) their
    ranks within each group."""
    monkeypatch.setattr(kernels, "GROUPED_MAX", 0 if finish == "sorted" else 10**9)
    grouped = CASES[case].get("grouped", True)
    for seed in range(4):
        A, slot, batches = hop_sample(seed, **CASES[case])
        for state in states(A, slot, batches, seed):
            for carry in carries(A.num_cols, seed):
                ref = reference.first_reached(A, slot, state, carry, batches)
                got, launched = on_cpu(lib, A, slot, state, carry, batches)
                assert_same(got, ref, f"{CASES[case]} seed {seed}")
                ranked = finish == "grouped" and grouped and ref[0].numel() > 0
                last = "gs_fr_finish_grouped" if ranked else "gs_fr_finish"
                assert launched[0] == "gs_fr_insert" and launched[-1] == last
                assert len(launched) == 2 + (A.nnz > 0)


@pytest.mark.parametrize("most", [0, 10, 10**9])
def test_kernels_hop_after_hop(lib, most, monkeypatch):
    """Three hops of a super-batch, each state the previous call's: the kernels' states
    equal the torch code's all the way (whichever finish: ``most`` edges a group)."""
    monkeypatch.setattr(kernels, "GROUPED_MAX", most)
    A, slot, batches = hop_sample(5, copies=3, n=30, C=40)
    s_ref = s_got = None
    for hop in range(3):
        A, slot, _ = hop_sample(10 + hop, copies=3, n=30, C=40 + 20 * hop)
        ref = reference.first_reached(A, slot, s_ref, slot.double(), batches)
        got, _ = on_cpu(lib, A, slot, s_got, slot.double(), batches)
        assert_same(got, ref, f"hop {hop}")
        s_ref, s_got = ref[3], got[3]
        assert ref[0].numel() > 0


def test_the_default_slot_is_one_tree(lib):
    A, _, _ = hop_sample(2, n=25, C=20)
    ref = reference.first_reached(A)
    got, _ = on_cpu(lib, A, None, None, None, None)
    assert_same(got, ref, "slot None")


def _flagged(lib, A, slot, state=None, batches=None):
    with pytest.raises((ValueError, IndexError)) as info:
        on_cpu(lib, A, slot, state, None, batches)
    return info.value


def test_kernels_flag_bad_input_and_the_next_call_is_unharmed(lib):
    A, slot, batches = hop_sample(3, copies=2, n=20)
    copies, n = batches
    slots = reference.slot_space(copies, n)
    for bad in (-1, slots, 2**62, 2**63 - 1):
        s = slot.clone()
        s[len(s) // 2] = bad
        e = _flagged(lib, A, s, None, batches)
        assert isinstance(e, ValueError) and str(e).startswith(
            f"slot: seed slots must lie in [0, {slots})"
        )
    for bad in bad_ids(A.num_nodes):
        rows = A.rows.clone()
        rows[A.nnz // 3] = bad
        B = CSC(num_nodes=A.num_nodes, indptr=A.indptr, rows=rows, col_ids=A.col_ids)
        e = _flagged(lib, B, slot, None, batches)
        assert isinstance(e, IndexError) and str(e).startswith(f"A: node id {bad} ")
        cols = A.col_ids.clone()
        cols[1] = bad
        B = CSC(num_nodes=A.num_nodes, indptr=A.indptr, rows=A.rows, col_ids=cols)
        e = _flagged(lib, B, slot, None, batches)  # the columns' pairs: the default state
        assert isinstance(e, IndexError) and str(e).startswith(f"A: node id {bad} ")
        on_cpu(lib, B, slot, torch.empty(0, dtype=torch.int64), None, batches)  # not read
    unsorted = torch.tensor([5, 3, 9])
    e = _flagged(lib, A, slot, unsorted, batches)
    assert isinstance(e, ValueError) and str(e).startswith("state: pass the state")
    got, _ = on_cpu(lib, A, slot, None, None, batches)
    assert_same(got, reference.first_reached(A, slot, None, None, batches), "after")


def test_kernels_flag_a_bad_local_row(lib):
    A, slot, _ = hop_sample(4, row_space=True)
    for bad in (-1, A.row_ids.numel(), 2**32 + 1):
        rows = A.rows.clone()
        rows[0] = bad
        B = CSC(A.num_nodes, A.indptr, rows, row_ids=A.row_ids, col_ids=A.col_ids)
        e = _flagged(lib, B, slot)
        assert isinstance(e, IndexError) and str(e).startswith(f"A: row {bad} of edge 0 ")
    row_ids = A.row_ids.clone()
    row_ids[int(A.rows[0])] = -7
    B = CSC(A.num_nodes, A.indptr, A.rows, row_ids=row_ids, col_ids=A.col_ids)
    assert str(_flagged(lib, B, slot)).startswith("A: node id -7 ")


def test_the_cuda_backend_registers_it():
    impl = get_backend("cuda").impl(Op.FIRST_REACHED, "csc")
    assert impl.fn is kernels.first_reached and impl.syncs


def test_the_cuda_backend_resolves_the_sync_free_impl_for_sync_free_programs():
    be = get_backend("cuda")
    impl = be.impl(Op.FIRST_REACHED, "csc", sync_free=True, given=("A", "slot", "state", "carry"))
    assert impl.fn is kernels.first_reached_sync_free
    assert impl.sync_free and impl.bounded_out and not impl.syncs
    assert be.impl(Op.FIRST_REACHED, "csc").fn is kernels.first_reached


# ----------------------------------------------------------------------------- sync-free
#: garbage for the padding of bounded buffers: bad ids, bad slots, keys out of order
GARBAGE = [-1, 2**62, 2**63 - 1, 7, -(2**40), 3, 2**31, 0]


def _junk(m: int, seed: int, like: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    pick = torch.randint(0, len(GARBAGE), (m,), generator=g)
    junk = torch.tensor(GARBAGE)[pick]
    return junk.to(like.dtype)


def _pad(t: torch.Tensor, m: int, seed: int) -> torch.Tensor:
    """``t`` followed by ``m`` garbage entries."""
    return torch.cat([t, _junk(m, seed, t)])


def bounded(A: CSC, slot, state, carry, seed: int, *, cols=3, edges=5, bound_ids=True):
    """``A``, ``slot``, ``state`` and ``carry`` as bounded values with padding: ``cols``
    padding columns (empty, garbage ids, slots and carried values), ``edges`` garbage edge
    entries past the edge count, ``edges`` garbage state entries past its count; ``slot`` and
    ``carry`` as BoundedIds (``bound_ids``) or plain tensors over the column buffer."""
    C = A.num_cols
    indptr = torch.cat([A.indptr, A.indptr[-1:].repeat(cols)])
    csc = CSC(
        A.num_nodes,
        indptr,
        _pad(A.rows, edges, seed),
        row_ids=A.row_ids,
        col_ids=_pad(A.global_cols(), cols, seed + 1),
    )
    ncols = torch.tensor([C])
    out = [BoundedCSC(csc, ncols)]
    for i, v in enumerate((slot, carry)):
        if v is not None:
            v = _pad(v, cols, seed + 2 + i)
            v = BoundedIds(v, ncols) if bound_ids else v
        out.append(v)
    if state is not None:
        state = BoundedIds(_pad(state, edges, seed + 4), torch.tensor([state.numel()]))
    return out[0], out[1], state, out[2]


class Recorded:
    """``V.fail_if`` deferred: the checks a call makes are recorded (the call completes),
    then :meth:`raise_first` raises the first that fails from its details alone."""

    def __init__(self, monkeypatch):
        self.failures = []
        monkeypatch.setattr(V, "fail_if", lambda *a: self.failures.append(a))

    def raise_first(self):
        failures, self.failures = self.failures, []
        for bad, exc, message, *details in failures:
            if bool(bad):
                raise exc(message(*[d.tolist() for d in details]))


def trimmed(got) -> list:
    """The exact values of a sync-free result (its counts read back)."""
    nodes, oslot, ocarry, state = got
    assert oslot.count is nodes.count and (ocarry is None or ocarry.count is nodes.count)
    F = int(nodes.count)
    assert 0 <= F <= nodes.data.numel() and F <= int(state.count) <= state.data.numel()
    return [None if v is None else v.data[: int(v.count)] for v in got]


def sync_free_on_cpu(lib, A, slot, state, carry, batches):
    return on_cpu(lib, A, slot, state, carry, batches, sync_free=True)


@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c) for c in CASES])
def test_sync_free_kernels_equal_the_torch_code(lib, case):
    """Bounded inputs with garbage padding (and, once, exact ones): the trimmed results
    equal the torch code's on the exact inputs, bit for bit; the three column-aligned
    results share one count; four launches, no read-back (the counts stay tensors)."""
    for seed in range(3):
        A, slot, batches = hop_sample(seed, **CASES[case])
        for si, state in enumerate(states(A, slot, batches, seed)):
            for ci, carry in enumerate(carries(A.num_cols, seed)):
                ref = reference.first_reached(A, slot, state, carry, batches)
                pad = (seed + si + ci) % 4
                inputs = (
                    (A, slot, state, carry)
                    if pad == 0
                    else bounded(
                        A,
                        slot,
                        state,
                        carry,
                        seed * 7 + si,
                        cols=pad,
                        edges=2 * pad,
                        bound_ids=pad % 2 == 1,
                    )
                )
                got, launched = sync_free_on_cpu(lib, *inputs, batches)
                assert all(isinstance(v, BoundedIds) for v in got if v is not None)
                assert (got[2] is None) == (carry is None)
                E = (inputs[0].csc if pad else inputs[0]).rows.numel()
                assert got[0].data.numel() == E  # a bound: one new pair per edge entry
                what = f"{CASES[case]} seed {seed} state {si} carry {ci} pad {pad}"
                assert_same(trimmed(got), ref, what)
                assert int(got[3].count) == int(got[0].count) + (ref[3].numel() - ref[0].numel())
                compact = ["gs_fr_compact"] if got[0].data.numel() else []
                assert launched == ["gs_fr_insert", *compact, "gs_fr_report", "gs_fr_finish"]


def test_sync_free_kernels_the_default_slot_is_one_tree(lib):
    A, _, _ = hop_sample(2, n=25, C=20)
    ref = reference.first_reached(A)
    Ab, _, _, _ = bounded(A, None, None, None, 3)
    got, _ = sync_free_on_cpu(lib, Ab, None, None, None, None)
    assert_same(trimmed(got), ref, "slot None")


def _next_hop(nodes: BoundedIds, batches, seed: int, k=4):
    """The next hop's sample, its columns the previous result's whole buffer (``nodes``:
    the real ones its count, the others empty padding columns, garbage ids): a bounded CSC
    sharing the count, and its exact twin."""
    g = torch.Generator().manual_seed(seed)
    copies, n = batches
    F, Cb = int(nodes.count), nodes.data.numel()
    deg = torch.randint(0, k + 1, (F,), generator=g)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), deg.cumsum(0)])
    E = int(indptr[-1])
    cols = nodes.data[:F]
    ecol = torch.repeat_interleave(torch.arange(F), deg)
    rows = torch.div(cols[ecol], n, rounding_mode="floor") * n + torch.randint(
        0, n, (E,), generator=g
    )
    exact_A = CSC(copies * n, indptr, rows, col_ids=cols)
    pad = torch.cat([indptr, indptr[-1:].repeat(Cb - F)])
    csc = CSC(copies * n, pad, _pad(rows, 3, seed), col_ids=nodes.data)
    return BoundedCSC(csc, nodes.count), exact_A


@pytest.mark.parametrize("copies", [1, 3])
def test_sync_free_kernels_hop_after_hop(lib, copies):
    """Four hops of the disjoint program's shape, each on the previous sync-free result's
    bounded buffers (its nodes the columns, its slots and carried times aligned with them,
    its state): every hop's trimmed result equals the torch code's chain."""
    A, slot, batches = hop_sample(5, copies=copies, n=200, C=40)
    batches = (copies, 200)
    time = torch.randint(0, 100, (A.num_cols,), generator=torch.Generator().manual_seed(1))
    ref = reference.first_reached(A, slot, None, time, batches)
    Ab, sb, _, tb = bounded(A, slot, None, time, 11, cols=4, edges=6)
    got, _ = sync_free_on_cpu(lib, Ab, sb, None, tb, batches)
    assert_same(trimmed(got), ref, "hop 0")
    for hop in range(1, 4):
        Ab, Ae = _next_hop(got[0], batches, hop)
        ref = reference.first_reached(Ae, ref[1], ref[3], ref[2], batches)
        got, _ = sync_free_on_cpu(lib, Ab, got[1], got[3], got[2], batches)
        assert_same(trimmed(got), ref, f"hop {hop}")
        assert ref[0].numel() > 0


def test_sync_free_kernels_flag_through_deferred_checks(lib, monkeypatch):
    """Bad slots, rows, column ids and an unsorted state (in the real part of bounded
    inputs): the call completes, its recorded check raises the exact implementation's error
    from the details alone, and the next call is unharmed."""
    checks = Recorded(monkeypatch)
    A, slot, batches = hop_sample(3, copies=2, n=20)
    copies, n = batches
    slots = reference.slot_space(copies, n)
    good = reference.first_reached(A, slot, None, None, batches)

    def flagged(B, bad_slot, state=None):
        Ab, sb, stb, _ = bounded(B, bad_slot, state, None, 5)
        got, _ = sync_free_on_cpu(lib, Ab, sb, stb, None, batches)
        assert got[0].data.numel() >= 0  # the call completed: results are buffers
        with pytest.raises((ValueError, IndexError)) as info:
            checks.raise_first()
        Ab, sb, _, _ = bounded(A, slot, None, None, 6)  # the next call
        again, _ = sync_free_on_cpu(lib, Ab, sb, None, None, batches)
        checks.raise_first()
        assert_same(trimmed(again), good, "after")
        return info.value

    for bad in (-1, slots, 2**62, 2**63 - 1):
        s = slot.clone()
        s[len(s) // 2] = bad
        e = flagged(A, s)
        lo, hi = torch.aminmax(s)
        assert isinstance(e, ValueError)
        assert str(e) == f"slot: seed slots must lie in [0, {slots}), got {int(lo)} .. {int(hi)}"
    for bad in bad_ids(A.num_nodes):
        rows = A.rows.clone()
        rows[A.nnz // 3] = bad
        B = CSC(num_nodes=A.num_nodes, indptr=A.indptr, rows=rows, col_ids=A.col_ids)
        e = flagged(B, slot)
        assert isinstance(e, IndexError) and str(e) == (
            f"A: node id {bad} (the row of edge {A.nnz // 3}) is out of range for a graph "
            f"of {A.num_nodes} nodes"
        )
        cols = A.col_ids.clone()
        cols[1] = bad
        B = CSC(num_nodes=A.num_nodes, indptr=A.indptr, rows=A.rows, col_ids=cols)
        e = flagged(B, slot)
        assert isinstance(e, IndexError) and str(e).startswith(f"A: node id {bad} (column 1 ")
    e = flagged(A, slot, torch.tensor([5, 3, 9]))
    assert isinstance(e, ValueError) and str(e).startswith("state: pass the state")
    assert str(e).endswith("entry 1 is below entry 0")


def test_sync_free_kernels_flag_a_bad_local_row(lib, monkeypatch):
    checks = Recorded(monkeypatch)
    A, slot, _ = hop_sample(4, row_space=True)
    for bad in (-1, A.row_ids.numel(), 2**32 + 1):
        rows = A.rows.clone()
        rows[0] = bad
        B = CSC(A.num_nodes, A.indptr, rows, row_ids=A.row_ids, col_ids=A.col_ids)
        sync_free_on_cpu(lib, *bounded(B, slot, None, None, 1), None)
        with pytest.raises(IndexError, match=rf"^A: row {bad} of edge 0 is out of range"):
            checks.raise_first()


def test_sync_free_falls_back_to_the_exact_values_on_the_cpu():
    """Inputs the kernels do not take (CPU tensors here): trimmed, then the exact
    implementation's (the torch code's) exact values."""
    A, slot, batches = hop_sample(7, copies=2, n=20)
    time = torch.rand(A.num_cols, dtype=torch.float64)
    prev = reference.first_reached(A, slot, None, None, batches)[3]
    ref = reference.first_reached(A, slot, prev, time, batches)
    got = kernels.first_reached_sync_free(*bounded(A, slot, prev, time, 2), batches)
    assert_same(got, ref, "fallback")


# ----------------------------------------------------------------------------- GPU
def _cuda(A: CSC) -> CSC:
    return CSC(
        A.num_nodes,
        A.indptr.cuda(),
        A.rows.cuda(),
        row_ids=None if A.row_ids is None else A.row_ids.cuda(),
        col_ids=None if A.col_ids is None else A.col_ids.cuda(),
    )


def _to(t):
    return None if t is None else t.cuda()


@GPU
@pytest.mark.parametrize("finish", ["sorted", "grouped"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c) for c in CASES])
def test_cuda_equals_the_torch_code(case, finish, monkeypatch):
    monkeypatch.setattr(kernels, "GROUPED_MAX", 0 if finish == "sorted" else 10**9)
    for seed in range(3):
        A, slot, batches = hop_sample(seed, **CASES[case])
        Ad, sd = _cuda(A), slot.cuda()
        for state in states(A, slot, batches, seed):
            for carry in carries(A.num_cols, seed):
                ref = reference.first_reached(Ad, sd, _to(state), _to(carry), batches)
                got = kernels.first_reached(Ad, sd, _to(state), _to(carry), batches)
                assert_same(got, ref, f"{CASES[case]} seed {seed}")
                assert all(t is None or t.is_cuda for t in got)


@GPU
@pytest.mark.parametrize("most", [0, kernels.GROUPED_MAX])
@pytest.mark.parametrize("copies", [None, 16])
def test_cuda_equals_the_torch_code_at_scale(copies, most, monkeypatch):
    """A disjoint hop of a mini-batch (1,024 seeds x 10) or of 16, on an R-MAT graph, and a
    hop from the state that holds every pair (both finishes: ``most`` 0 sorts)."""
    monkeypatch.setattr(kernels, "GROUPED_MAX", most)
    A = gs.datasets.rmat(20_000, 400_000, seed=1).to("cuda")
    B = 1024 * (copies or 1)
    n = A.num_nodes
    g = torch.Generator().manual_seed(0)
    seeds = torch.randint(0, n, (B,), generator=g).cuda()
    batch = torch.arange(B, device="cuda") // 1024
    slot = torch.arange(B, device="cuda") % 1024
    if copies:
        seeds = seeds + batch * n
    gs.manual_seed(0)
    with gs.use_backend("torch"):
        csc = A.temporal_sample(seeds % n, 10, seed=slot).csc
    if copies:  # the super-batch's sample: each column's rows moved to its batch
        csc = encode_columns(csc, seeds, n, copies)
    batches = None if copies is None else (copies, n)
    carry = torch.arange(B, device="cuda", dtype=torch.float64)
    ref = reference.first_reached(csc, slot, None, carry, batches)
    got = kernels.first_reached(csc, slot, None, carry, batches)
    assert_same(got, ref, "hop 1")
    ref2 = reference.first_reached(csc, slot, ref[3], None, batches)
    got2 = kernels.first_reached(csc, slot, got[3], None, batches)
    assert_same(got2, ref2, "a state that holds every pair")
    assert ref2[0].numel() == 0


@GPU
def test_cuda_reads_back_once():
    A, slot, batches = hop_sample(1, copies=2, n=50, C=200)
    Ad, sd = _cuda(A), slot.cuda()
    kernels.first_reached(Ad, sd, None, None, batches)  # compiled
    syncs = host_syncs(lambda: kernels.first_reached(Ad, sd, None, sd.double(), batches))
    assert len(syncs) == 1, syncs


@GPU
def test_bad_ids_raise_and_the_next_call_is_unharmed():
    """Adversarial rows, columns and slots on the device: the documented error, then the
    next call equals the torch code (compute-sanitizer's memcheck runs this test)."""
    A, slot, batches = hop_sample(6, copies=2, n=30, C=80)
    Ad, sd = _cuda(A), slot.cuda()
    ref = reference.first_reached(Ad, sd, None, None, batches)
    slots = reference.slot_space(*batches)
    for bad in bad_ids(A.num_nodes):
        rows = Ad.rows.clone()
        rows[A.nnz // 2] = bad
        B = CSC(A.num_nodes, Ad.indptr, rows, col_ids=Ad.col_ids)
        with pytest.raises(IndexError, match=rf"^A: node id {bad} "):
            kernels.first_reached(B, sd, None, None, batches)
        cols = Ad.col_ids.clone()
        cols[-1] = bad
        B = CSC(A.num_nodes, Ad.indptr, Ad.rows, col_ids=cols)
        with pytest.raises(IndexError, match=rf"^A: node id {bad} "):
            kernels.first_reached(B, sd, None, None, batches)
        assert_same(kernels.first_reached(Ad, sd, None, None, batches), ref, f"after {bad}")
    for bad in (-1, slots, slots + 1, 2**62, 2**63 - 1):
        s = sd.clone()
        s[3] = bad
        with pytest.raises(ValueError, match=r"^slot: seed slots must lie in \[0, "):
            kernels.first_reached(Ad, s, None, None, batches)
        assert_same(kernels.first_reached(Ad, sd, None, None, batches), ref, f"after {bad}")
    with pytest.raises(ValueError, match=r"^state: pass the state"):
        kernels.first_reached(Ad, sd, torch.tensor([9, 2**62, 1], device="cuda"), None, batches)
    assert_same(kernels.first_reached(Ad, sd, None, None, batches), ref, "after the state")


@GPU
def test_bad_ids_through_the_op():
    """The op's method on the CUDA backend: a bad slot raises the torch code's error."""
    A = gs.datasets.rmat(300, 4000, seed=0).to("cuda")
    seeds = torch.arange(12, device="cuda")
    with gs.use_backend("cuda"):
        s = A.temporal_sample(seeds, 3)
        with pytest.raises(ValueError, match=r"slot: seed slots must lie in \[0, "):
            s.first_reached(torch.arange(12, device="cuda") - 1)
        nodes, *_ = s.first_reached(torch.arange(12, device="cuda"))
    with gs.use_backend("torch"):
        ref, *_ = s.first_reached(torch.arange(12, device="cuda"))
    assert torch.equal(nodes, ref)


# ----------------------------------------------------------------------------- GPU, sync-free
def _dev(v):
    """``v`` (a tensor, CSC, BoundedIds or BoundedCSC, or None) on the GPU."""
    if v is None or isinstance(v, torch.Tensor):
        return _to(v)
    if isinstance(v, BoundedIds):
        return BoundedIds(v.data.cuda(), v.count.cuda())
    if isinstance(v, BoundedCSC):
        return BoundedCSC(_cuda(v.csc), _to(v.ncols))
    return _cuda(v)


def _host(v):
    return None if v is None else BoundedIds(v.data.cpu(), v.count.cpu())


@GPU
@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c) for c in CASES])
def test_cuda_sync_free_equals_the_exact_impl_and_the_torch_code(case):
    """Bounded inputs with garbage padding on the device: the sync-free results, trimmed,
    equal the exact implementation's and the torch code's, bit for bit, on the device."""
    for seed in range(3):
        A, slot, batches = hop_sample(seed, **CASES[case])
        Ad, sd = _cuda(A), slot.cuda()
        for si, state in enumerate(states(A, slot, batches, seed)):
            for ci, carry in enumerate(carries(A.num_cols, seed)):
                ref = reference.first_reached(Ad, sd, _to(state), _to(carry), batches)
                exact = kernels.first_reached(Ad, sd, _to(state), _to(carry), batches)
                assert_same(exact, ref, f"{CASES[case]} seed {seed}: exact")
                pad = 1 + (seed + si + ci) % 3
                inputs = bounded(
                    A, slot, state, carry, seed + si, cols=pad, edges=3 * pad, bound_ids=pad != 2
                )
                got = kernels.first_reached_sync_free(*map(_dev, inputs), batches)
                assert all(v is None or v.data.is_cuda for v in got)
                assert_same(trimmed(got), ref, f"{CASES[case]} seed {seed} pad {pad}")


@GPU
@pytest.mark.parametrize("copies", [1, 3])
def test_cuda_sync_free_hop_after_hop(copies):
    """Four hops on the device, each on the previous sync-free result's bounded buffers."""
    A, slot, _ = hop_sample(5, copies=copies, n=200, C=40)
    batches = (copies, 200)
    time = torch.rand(A.num_cols, generator=torch.Generator().manual_seed(1))
    ref = reference.first_reached(A, slot, None, time, batches)
    Ab, sb, _, tb = bounded(A, slot, None, time, 11, cols=4, edges=6)
    got = kernels.first_reached_sync_free(_dev(Ab), _dev(sb), None, _dev(tb), batches)
    assert_same(trimmed(got), ref, "hop 0")
    for hop in range(1, 4):
        Ab, Ae = _next_hop(_host(got[0]), batches, hop)
        ref = reference.first_reached(Ae, ref[1], ref[3], ref[2], batches)
        got = kernels.first_reached_sync_free(_dev(Ab), got[1], got[3], got[2], batches)
        assert_same(trimmed(got), ref, f"hop {hop}")
        assert ref[0].numel() > 0


def _scale_inputs(copies=4):
    """A disjoint hop of ``copies`` mini-batches of 512 seeds (R-MAT), as bounded values:
    ``(A, slot, carry, batches)``."""
    G = gs.datasets.rmat(20_000, 400_000, seed=1).to("cuda")
    n, B = G.num_nodes, 512 * copies
    g = torch.Generator().manual_seed(0)
    seeds = torch.randint(0, n, (B,), generator=g).cuda()
    batch = torch.arange(B, device="cuda") // 512
    slot = torch.arange(B, device="cuda") % 512
    gs.manual_seed(0)
    with gs.use_backend("torch"):
        csc = G.temporal_sample(seeds, 10, seed=slot).csc
    csc = encode_columns(csc, seeds + batch * n, n, copies)
    carry = torch.arange(B, device="cuda", dtype=torch.float64)
    return csc, slot, carry, (copies, n)


@GPU
def test_cuda_sync_free_makes_no_host_sync_and_defers_its_checks():
    csc, slot, carry, batches = _scale_inputs()
    A = BoundedCSC(csc, torch.tensor([csc.num_cols], device="cuda"))
    ref = reference.first_reached(csc, slot, None, carry, batches)
    with V.deferred() as record:
        kernels.first_reached_sync_free(A, slot, None, carry, batches)  # compiled
        record.failures.clear()
        out = []
        syncs = host_syncs(
            lambda: out.append(kernels.first_reached_sync_free(A, slot, None, carry, batches))
        )
        assert syncs == [], syncs
        assert len(record.failures) == 3
        V.read_back([])  # no check failed
    assert_same(trimmed(out[0]), ref, "sync-free")
    ref2 = reference.first_reached(csc, slot, ref[3], None, batches)
    got2 = kernels.first_reached_sync_free(A, slot, out[0][3], None, batches)
    assert_same(trimmed(got2), ref2, "a state that holds every pair")
    assert ref2[0].numel() == 0


@GPU
def test_cuda_sync_free_replays_in_a_cuda_graph():
    """Captured once, replayed on new slots and carried values: each replay's results equal
    the torch code's on those inputs."""
    csc, slot, carry, batches = _scale_inputs(2)
    A = BoundedCSC(csc, torch.tensor([csc.num_cols], device="cuda"))
    slot_in, carry_in = slot.clone(), carry.clone()
    with V.deferred():
        kernels.first_reached_sync_free(A, slot_in, None, carry_in, batches)  # compiled
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with V.deferred() as record, torch.cuda.graph(graph):
        out = kernels.first_reached_sync_free(A, slot_in, None, carry_in, batches)
    flags = record.flags()
    for shift in (0, 7, 300):
        slot_in.copy_((slot + shift) % 512)
        carry_in.copy_(carry * (shift + 1))
        graph.replay()
        assert not any(bool(f) for f in flags)
        ref = reference.first_reached(csc, slot_in, None, carry_in, batches)
        assert_same(trimmed(out), ref, f"replay {shift}")


@GPU
def test_cuda_sync_free_bad_ids_raise_deferred_and_the_next_call_is_unharmed():
    A, slot, batches = hop_sample(6, copies=2, n=30, C=80)
    ref = reference.first_reached(A, slot, None, None, batches)
    slots = reference.slot_space(*batches)

    def deferred(B, s, state=None):
        with V.deferred():
            kernels.first_reached_sync_free(*map(_dev, bounded(B, s, state, None, 3)), batches)
            V.read_back([])

    def after(what):
        with V.deferred():
            got = kernels.first_reached_sync_free(
                *map(_dev, bounded(A, slot, None, None, 4)), batches
            )
            V.read_back([])
        assert_same(trimmed(got), ref, f"after {what}")

    for bad in bad_ids(A.num_nodes):
        rows = A.rows.clone()
        rows[A.nnz // 2] = bad
        with pytest.raises(IndexError, match=rf"^A: node id {bad} \(the row of edge"):
            deferred(CSC(A.num_nodes, A.indptr, rows, col_ids=A.col_ids), slot)
        cols = A.col_ids.clone()
        cols[-1] = bad
        with pytest.raises(IndexError, match=rf"^A: node id {bad} \(column "):
            deferred(CSC(A.num_nodes, A.indptr, A.rows, col_ids=cols), slot)
        after(bad)
    for bad in (-1, slots, 2**62, 2**63 - 1):
        s = slot.clone()
        s[3] = bad
        with pytest.raises(ValueError, match=r"^slot: seed slots must lie in \[0, "):
            deferred(A, s)
        after(bad)
    with pytest.raises(ValueError, match=r"^state: pass the state"):
        deferred(A, slot, torch.tensor([9, 2**62, 1]))
    after("the state")
