"""``first_reached``'s kernels (``kernels/first_reached.cu``) against the torch code, bit for bit.

On the CPU (no GPU needed): the kernel source compiled as C++ (one thread runs every loop:
``helpers.CUDA_AS_CPP``; the compaction's single-pass scan as its sequential twin) and called
by the CUDA backend's own host code (:func:`gsample.backend.cuda.first_reached.run`, with a
CPU ``launch``), on random samples: duplicate pairs, pairs already in the state, empty
frontiers and states, one column, a sample with a row space of its own, super-batches,
integer and float carried values, columns out of (slot, node) order; bad slots, rows,
columns and states flagged, and the next call unharmed. On a GPU (marked ``cuda``): the CUDA
backend's implementation equals the torch backend's on the same inputs, reads back once,
and raises on adversarial ids (``adversarial.bad_ids``) without harming the next call."""

from __future__ import annotations

import ctypes
import os

import pytest
import torch
from adversarial import bad_ids
from helpers import CUDA_AS_CPP, CXX, build_cpp, host_syncs

import gsample as gs
from gsample.backend import get_backend
from gsample.backend.cuda import first_reached as kernels
from gsample.backend.torch import first_reached as reference
from gsample.backend.torch.batched import encode_columns
from gsample.formats.csc import CSC
from gsample.ir import Op


def GPU(f):
    """Marks a test that needs a CUDA GPU (skipped without one)."""
    skip = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
    return pytest.mark.cuda(skip(f))


# ----------------------------------------------------------------------------- inputs
def sample(seed: int, *, copies=None, n=40, C=30, k=6, row_space=False, grouped=True):
    """A random hop's sample: ``(A, slot, batches)``. Few nodes, so pairs repeat; columns
    grouped by (batch, slot) as the disjoint program's frontiers (``grouped``) or not;
    ``copies``: a super-batch of that many mini-batches (ids ``b * n + v``); ``row_space``:
    local rows into ``row_ids``."""
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


def on_cpu(lib, A, slot, state, carry, batches):
    """The CUDA backend's host code, its kernels run on the CPU."""
    launched = []

    def launch(family, name, n, *args, grid=None, block=None):
        assert family == "first_reached"
        launched.append(name)
        if n > 0:
            getattr(lib, name)(*[_arg(a) for a in args])

    def memset(t, byte):
        t.view(torch.uint8).fill_(byte)

    out = kernels.run(A, slot, state, carry, batches, launch=launch, memset=memset)
    return out, launched


@pytest.mark.parametrize("finish", ["sorted", "grouped"])
@pytest.mark.parametrize("case", range(len(CASES)), ids=[str(c) for c in CASES])
def test_kernels_equal_the_torch_code(lib, case, finish, monkeypatch):
    """Both finishes: the sort of the new pairs, and (columns grouped by (batch, slot)) their
    ranks within each group."""
    monkeypatch.setattr(kernels, "GROUPED_MAX", 0 if finish == "sorted" else 10**9)
    grouped = CASES[case].get("grouped", True)
    for seed in range(4):
        A, slot, batches = sample(seed, **CASES[case])
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
    A, slot, batches = sample(5, copies=3, n=30, C=40)
    s_ref = s_got = None
    for hop in range(3):
        A, slot, _ = sample(10 + hop, copies=3, n=30, C=40 + 20 * hop)
        ref = reference.first_reached(A, slot, s_ref, slot.double(), batches)
        got, _ = on_cpu(lib, A, slot, s_got, slot.double(), batches)
        assert_same(got, ref, f"hop {hop}")
        s_ref, s_got = ref[3], got[3]
        assert ref[0].numel() > 0


def test_the_default_slot_is_one_tree(lib):
    A, _, _ = sample(2, n=25, C=20)
    ref = reference.first_reached(A)
    got, _ = on_cpu(lib, A, None, None, None, None)
    assert_same(got, ref, "slot None")


def _flagged(lib, A, slot, state=None, batches=None):
    with pytest.raises((ValueError, IndexError)) as info:
        on_cpu(lib, A, slot, state, None, batches)
    return info.value


def test_kernels_flag_bad_input_and_the_next_call_is_unharmed(lib):
    A, slot, batches = sample(3, copies=2, n=20)
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
    A, slot, _ = sample(4, row_space=True)
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
        A, slot, batches = sample(seed, **CASES[case])
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
    A, slot, batches = sample(1, copies=2, n=50, C=200)
    Ad, sd = _cuda(A), slot.cuda()
    kernels.first_reached(Ad, sd, None, None, batches)  # compiled
    syncs = host_syncs(lambda: kernels.first_reached(Ad, sd, None, sd.double(), batches))
    assert len(syncs) == 1, syncs


@GPU
def test_bad_ids_raise_and_the_next_call_is_unharmed():
    """Adversarial rows, columns and slots on the device: the documented error, then the
    next call equals the torch code (compute-sanitizer's memcheck runs this test)."""
    A, slot, batches = sample(6, copies=2, n=30, C=80)
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
