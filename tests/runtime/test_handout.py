"""The per-mini-batch hand-out of a super-batch: ``block_diagonal._parts`` (each batch's
matrices as views), ``Assemble``'s fast path for flat templates, the runtime's constructors
(``CSC.of``, ``matrix_of``, ``batches_of``) and the loader's hand-out loop: each gives exactly
what the general (slower) construction gives."""

import collections
import dataclasses
import functools

import pytest
import torch
from helpers import graphsage

import gsample as gs
from gsample.backend.torch import extract, select
from gsample.compiler.compiled import wrap
from gsample.formats.csc import CSC
from gsample.formats.pieces import SplitCSC
from gsample.ir.graph import Ref, map_template
from gsample.loader.batch import Batch, batches_of
from gsample.matrix.sparse import Matrix, matrix_of
from gsample.runtime import block_diagonal as blocks

FIELDS = ("num_nodes", "indptr", "rows", "row_ids", "col_ids", "values", "eids")


def _batches(n: int, copies: int, values: bool, eids: bool) -> list:
    """``copies`` sampled sub-matrices of an R-MAT graph (row spaces compacted: ``row_ids``
    set), some with no edge, with values and edge ids as asked."""
    A = gs.datasets.rmat(n, 3000, seed=5).csc
    parts = []
    for b in range(copies):
        cols = torch.arange(b, 60 + 7 * b, 3) if b != 2 else torch.tensor([], dtype=torch.long)
        p = select.collective_sample(extract.slice_cols(A, cols), 15 + 5 * b, False, 100 + b)
        if values:
            p = p.with_values(torch.rand(p.nnz, generator=torch.Generator().manual_seed(b)))
        if not eids:
            p = CSC(p.num_nodes, p.indptr, p.rows, p.row_ids, p.col_ids, p.values, None)
        parts.append(p)
    return parts


#: the fields ``_parts`` cuts with ``unsafe_split_with_sizes`` (index tensors no one reads as
#: a super-batch's n_id): tensors of their own to autograd; the others are views
OWN_PIECES = ("indptr", "rows", "eids")


def _same_view(got: torch.Tensor | None, want: torch.Tensor | None, view: bool = True) -> bool:
    """The same range of the same storage (offset, shape, strides, dtype), a view to
    autograd (``view``) or a tensor of its own, or both None."""
    if got is None or want is None:
        return got is None and want is None
    return (
        got.untyped_storage().data_ptr() == want.untyped_storage().data_ptr()
        and got.storage_offset() == want.storage_offset()
        and got.shape == want.shape
        and got.stride() == want.stride()
        and got.dtype == want.dtype
        and (got._base is not None) == view
    )


@pytest.mark.parametrize("values", [False, True])
@pytest.mark.parametrize("eids", [False, True])
@pytest.mark.parametrize("lazy", [True, False])
def test_each_batch_s_matrix_is_the_slice_of_every_decoded_field(values, eids, lazy, monkeypatch):
    """``_parts``: batch ``b``'s fields are exactly the slices ``[lo_b, hi_b)`` of the decoded
    fields (indptr: its ``C_b + 1`` entries, after ``b`` extra ones) and of ``M``'s values and
    edge ids, views of them, and equal to batch ``b``'s own matrix. Made when first read
    (``LAZY_PIECES``, a ``SplitCSC``: its sizes known before, none made) or at once."""
    monkeypatch.setattr(blocks, "LAZY_PIECES", lazy)
    n, copies = 200, 5
    own = _batches(n, copies, values, eids)
    M = blocks.join_matrices(own, n)
    bnd = blocks.bounds(M, n, copies)
    decoded = [torch.cat([getattr(p, f) for p in own]) for f in ("indptr", "rows")]
    decoded += [torch.cat([getattr(p, f) for p in own]) for f in ("col_ids", "row_ids")]
    got = blocks._parts(M, bnd, n, copies, *decoded)
    indptr, rows, col_ids, row_ids = decoded
    c, r, e = bnd.cols, bnd.rows, bnd.edges
    assert len(got) == copies and type(got) is list
    if lazy:
        for part, mine in zip(got, own, strict=True):
            assert type(part) is SplitCSC
            assert part.nnz == mine.nnz and part.num_cols == mine.num_cols
            assert part.num_rows == mine.num_rows and part.device == mine.device
            assert not set(vars(part)) & set(FIELDS[1:5]), "the sizes made no field"
        for part in got:
            for field in FIELDS[1:]:
                getattr(part, field)
            assert set(FIELDS) <= set(vars(part))
    for b, part in enumerate(got):
        assert (type(part) is SplitCSC) if lazy else list(vars(part)) == list(FIELDS)
        want = {
            "indptr": indptr[c[b] + b : c[b + 1] + b + 1],
            "rows": rows[e[b] - e[0] : e[b + 1] - e[0]],
            "row_ids": row_ids[r[b] - r[0] : r[b + 1] - r[0]],
            "col_ids": col_ids[c[b] - c[0] : c[b + 1] - c[0]],
            "values": None if M.values is None else M.values[e[b] : e[b + 1]],
            "eids": None if M.eids is None else M.eids[e[b] : e[b + 1]],
        }
        assert part.num_nodes == n
        for field, view in want.items():
            assert _same_view(getattr(part, field), view, field not in OWN_PIECES), (b, field)
        for field in FIELDS[1:]:  # and the batch's own matrix, value for value
            mine, theirs = getattr(part, field), getattr(own[b], field)
            if theirs is None:
                assert mine is None, (b, field)
            else:
                assert torch.equal(mine, theirs), (b, field)
    assert (got[0].values is None) != values and (got[0].eids is None) != eids


@pytest.mark.parametrize("values", [False, True])
def test_an_in_place_write_to_one_batch_s_matrix_changes_it_alone(values):
    """Every field of every batch's matrix written in place (the ones cut as tensors of their
    own and the views): that batch's field changes, no other batch's does, and each other
    batch still equals its own matrix sampled alone; an index piece's version counter is its
    own (written: only its own is bumped)."""
    n, copies = 200, 5
    own = _batches(n, copies, values, eids=True)
    M = blocks.join_matrices(own, n)
    got = blocks.split_matrix(M, blocks.bounds(M, n, copies), n, copies)
    snapshot = [
        {f: getattr(p, f).clone() for f in FIELDS[1:] if getattr(p, f) is not None} for p in got
    ]
    for b in range(copies):
        for field, before in snapshot[b].items():
            piece = getattr(got[b], field)
            if piece.numel() == 0:
                continue
            others = [getattr(got[o], field)._version for o in range(copies) if o != b]
            piece.add_(1000)
            assert torch.equal(piece, before + 1000), (b, field)
            if field in OWN_PIECES:
                after = [getattr(got[o], field)._version for o in range(copies) if o != b]
                assert after == others, (b, field)  # no sibling's counter bumped
            for o in range(copies):  # (each earlier write undone below)
                if o != b:
                    theirs = getattr(got[o], field)
                    assert torch.equal(theirs, snapshot[o][field]), (b, field, o)
            piece.copy_(before)
    for mine, theirs in zip(got, own, strict=True):  # all restored: each batch's own matrix
        for field in FIELDS[1:]:
            a, w = getattr(mine, field), getattr(theirs, field)
            assert (a is None) == (w is None) and (a is None or torch.equal(a, w)), field


def test_csc_each_makes_what_csc_of_makes():
    t = torch.arange(6)
    columns = ([t[:2], t[2:5]], [t[:1], t], [None, t[1:]], [t[:1], t[:2]], [None, None], [t, t])
    got = CSC.each(9, *columns)
    want = [CSC.of(9, *col) for col in zip(*columns)]
    assert type(got) is list and len(got) == 2
    for g, w in zip(got, want):
        assert type(g) is CSC and list(vars(g)) == list(vars(w)) == list(FIELDS)
        assert all(getattr(g, f) is getattr(w, f) for f in FIELDS)
    # and what the dataclass itself makes, field for field: a field CSC gains that each (and
    # of) leave out fails here, whatever FIELDS says
    names = [f.name for f in dataclasses.fields(CSC)]
    for g, col in zip(got, zip(*columns), strict=True):
        slow = CSC(9, *col)
        assert list(vars(g)) == list(vars(slow)) == names
        assert all(getattr(g, f) is getattr(slow, f) for f in names)
    with pytest.raises(ValueError):  # per-matrix sequences of unequal lengths
        CSC.each(9, *columns[:-1], [t])
    assert CSC.each(9, *([],) * 6) == []


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32, torch.float64], ids=str)
def test_own_pieces_cut_index_tensors_alone_and_leave_floating_point_views(dtype):
    """``_own_pieces``: the ranges ``split_with_sizes`` gives (the same storage, offsets,
    shapes and strides), tensors of their own for indices (int64 or int32: no ``_base``, a
    version counter each) and views for floating point (whose gradient reaches the whole)."""
    floating = dtype.is_floating_point
    whole = torch.arange(2, 14, dtype=dtype)[1:]  # a view itself, as M.eids[e_lo:e_hi] is
    if floating:
        whole = whole.detach().requires_grad_()
    sizes = [3, 0, 5, 3]
    got, want = blocks._own_pieces(whole, sizes), whole.split_with_sizes(sizes)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert _same_view(g, w, view=floating) and torch.equal(g.detach(), w.detach())
    if floating:  # views: autograd sees them as parts of the whole
        torch.cat([g * (i + 1) for i, g in enumerate(got)]).sum().backward()
        assert whole.grad.tolist() == [1.0] * 3 + [3.0] * 5 + [4.0] * 3
        return
    before = [g._version for g in got]
    got[0].add_(1)  # an index piece's counter is its own: written, it alone moves
    assert [g._version for g in got] == [before[0] + 1, *before[1:]]
    assert whole[:3].tolist() == list(range(4, 7))


def test_split_matrix_on_the_cpu_gives_each_batch_its_own_matrix():
    n, copies = 200, 4
    own = _batches(n, copies, values=True, eids=True)
    M = blocks.join_matrices(own, n)
    got = blocks.split_matrix(M, blocks.bounds(M, n, copies), n, copies)
    for mine, theirs in zip(got, own, strict=True):
        for field in FIELDS[1:]:
            assert torch.equal(getattr(mine, field), getattr(theirs, field)), field


def test_walks_split_into_a_list_of_each_batch_s_decoded_rows():
    n = 10
    walks = torch.tensor([[1, 2, -1], [3, 4, 5], [11, 12, -1], [25, 26, 27]])
    got = blocks.split_walks(walks, n, 3)
    assert type(got) is list and len(got) == 3
    assert [g.tolist() for g in got] == [[[1, 2, -1], [3, 4, 5]], [[1, 2, -1]], [[5, 6, 7]]]
    ids = blocks.split(torch.tensor([3, 7, 13, 29]), spec="ids", n=10, copies=3)
    assert type(ids) is list and [p.tolist() for p in ids] == [[3, 7], [3], [9]]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_walks_decode_on_the_gpu_as_the_torch_ops():
    """On a GPU the walks are decoded in one kernel (``gs_decode_walks``): the torch ops'
    values, big ids and -1 included, one walker to many, and an odd length."""
    n = 1_000_003
    g = torch.Generator().manual_seed(0)
    for W, S in ((1, 1), (5, 3), (70_001, 81)):
        batch = torch.randint(0, 50, (W, 1), generator=g).sort(0).values  # grouped by batch
        walks = batch * n + torch.randint(0, n, (W, S), generator=g)
        walks[:, 1:][torch.rand(W, S - 1, generator=g) < 0.2] = -1
        got = blocks.split_walks(walks.cuda(), n, 50)
        want = blocks.split_walks(walks, n, 50)
        assert len(got) == len(want) and all(
            torch.equal(a.cpu(), b) for a, b in zip(got, want, strict=True)
        )


def test_csc_of_is_the_dataclass_s_construction():
    t = torch.arange(4)
    args = (9, t, t[:2], None, t[1:], None, t)
    fast, slow = CSC.of(*args), CSC(*args)
    assert type(fast) is CSC and list(vars(fast)) == list(vars(slow)) == list(FIELDS)
    assert all(getattr(fast, f) is getattr(slow, f) for f in FIELDS)
    with pytest.raises(AttributeError):  # still frozen
        fast.rows = t


def test_matrix_of_is_matrix_without_its_checks():
    csc = CSC.of(3, torch.tensor([0, 1]), torch.tensor([2]), None, torch.tensor([0]))
    fast, slow = matrix_of(csc), Matrix(csc)
    assert type(fast) is Matrix and fast._csc is csc and fast._edge_time is None
    assert slow._edge_time is None and fast.num_edges == slow.num_edges == 1
    assert wrap(csc)._csc is csc and wrap(5) == 5


# ----------------------------------------------------------------------------- Assemble
Pair = collections.namedtuple("Pair", "first second")


class Blocks(list):
    """A list subclass: the general path keeps its type."""


TEMPLATES = {
    "one ref": Ref("a"),
    "list": [Ref("a"), Ref("b")],
    "tuple": (Ref("a"), Ref("b"), Ref("a")),
    "shared in a list": [Ref("a"), Ref("g")],
    "list with a constant": [Ref("a"), 3, None],
    "nested": ([Ref("a"), Ref("b")], Ref("g")),
    "dict": {"blocks": [Ref("a")], "walks": Ref("b"), "k": "x"},
    "named tuple": Pair(Ref("a"), Ref("b")),
    "list subclass": Blocks([Ref("a"), Ref("b")]),
    "empty": [],
    "none": None,
    "constant": 7,
}


def _reference(template, per_batch, copies, wrap_fn, inputs) -> list:
    """What ``Assemble`` has always returned: ``map_template`` per batch."""
    return [
        map_template(
            template,
            lambda ref, b=b: wrap_fn(
                inputs[ref.name][b] if ref.name in per_batch else inputs[ref.name]
            ),
        )
        for b in range(copies)
    ]


def _assert_identical(got, want, path="out"):
    """The same structure, types and values: Matrices holding the very same CSC, tensors
    the very same objects, containers of the same type (and new objects per batch)."""
    assert type(got) is type(want), path
    if isinstance(want, Matrix):
        assert got._csc is want._csc and got._edge_time is want._edge_time, path
    elif isinstance(want, (list, tuple)):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            _assert_identical(g, w, f"{path}[{i}]")
    elif isinstance(want, dict):
        assert list(got) == list(want), path
        for k in want:
            _assert_identical(got[k], want[k], f"{path}[{k!r}]")
    else:
        assert got is want or got == want, path


def _inputs(copies: int) -> dict:
    csc = [CSC.of(5, torch.tensor([0, b]), torch.arange(b)) for b in range(copies)]
    return {
        "a": csc,
        "b": [torch.arange(b + 1) for b in range(copies)],
        "g": CSC.of(5, torch.tensor([0]), torch.arange(0)),  # graph-level (shared)
    }


def _custom_wrap(value):  # a wrap other than the compiler's
    return ("wrapped", value) if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("name", list(TEMPLATES))
@pytest.mark.parametrize("wrap_fn", [wrap, None, _custom_wrap], ids=["compiler", "none", "custom"])
def test_assemble_gives_what_map_template_gives_per_batch(name, wrap_fn):
    template, copies = TEMPLATES[name], 4
    per_batch = frozenset({"a", "b"})
    inputs = _inputs(copies)
    got = blocks.Assemble(template, per_batch, copies, wrap_fn)(**inputs)
    want = _reference(template, per_batch, copies, wrap_fn or (lambda v: v), inputs)
    assert type(got) is list and len(got) == copies
    _assert_identical(got, want)
    if isinstance(template, (list, tuple, dict)) and copies > 1:  # a new container per batch
        assert len({id(o) for o in got}) == copies
    if name == "shared in a list" and wrap_fn is wrap:  # a new Matrix per batch, as before
        assert len({id(o[1]) for o in got}) == copies
    if name == "one ref":
        assert got is not inputs["a"]  # a list of its own, not the program's value


def test_assemble_s_flat_path_is_taken_for_plain_lists_tuples_and_single_refs():
    flat = blocks._flat_refs
    assert flat(Ref("a")) == (None, ("a",))
    assert flat([Ref("a"), Ref("b")]) == (list, ("a", "b"))
    assert flat((Ref("a"),)) == (tuple, ("a",))
    for general in ([], [Ref("a"), 1], Pair(Ref("a"), Ref("b")), Blocks([Ref("a")]), {"a": 1}):
        assert flat(general) is None


def test_assemble_with_a_short_per_batch_value_fails_as_the_general_path_does():
    inputs = _inputs(3)
    with pytest.raises(IndexError):
        blocks.Assemble([Ref("a"), Ref("b")], frozenset("ab"), 4, wrap)(**inputs)


def test_helpers_hand_their_wrap_to_assemble():
    made = blocks.helpers(wrap).Assemble([Ref("a")], frozenset("a"), 2)
    assert made.wrap is wrap


# ----------------------------------------------------------------------------- the loader
def test_batches_of_makes_what_the_dataclass_makes():
    seeds = [torch.tensor([1, 2]), torch.tensor([3])]
    outs = [[1], (2,)]
    for flag in (True, False):
        got = batches_of(seeds, 7, outs, flag)
        want = [
            Batch(seeds=s, index=7 + b, out=o, seeds_are_nodes=flag)
            for b, (s, o) in enumerate(zip(seeds, outs))
        ]
        assert [type(g) for g in got] == [Batch, Batch]
        assert [list(vars(g)) for g in got] == [list(vars(w)) for w in want]
        for g, w in zip(got, want):
            assert all(vars(g)[k] is vars(w)[k] for k in vars(w))
            assert g == w


def _epoch(loader) -> list:
    return [
        (b.index, b.seeds.tolist(), [[t.tolist() for t in m.edges()] for m in b.out], b.n_id)
        for b in loader
    ]


def test_every_hand_out_loop_yields_the_same_batches():
    """Super-batched epochs with and without a progress bar, with rows gathered in step
    (unpipelined) or not: the same mini-batches, in order, as one at a time."""
    A, x, _ = gs.datasets.planted_partition(300, num_classes=3, seed=0)
    fn = gs.compile(functools.partial(graphsage, fanouts=(3, 2)))
    seeds = torch.arange(0, 300, 3)

    def loader(**kw):
        return gs.DataLoader(A, fn, seeds, 8, seed=4, **kw)

    want = _epoch(loader())
    assert len(want) == 13
    for kw in ({}, {"progress": True}):
        got = _epoch(loader(super_batch=4, **kw))
        assert [g[:3] for g in got] == [w[:3] for w in want] and all(g[3] is None for g in got)
    for kw in ({}, {"progress": True}):
        gathered = list(loader(super_batch=4, features=x, pipeline=False, **kw))
        assert [b.index for b in gathered] == list(range(13))
        for b, w in zip(gathered, want):
            assert b.seeds.tolist() == w[1] and torch.equal(b.x, x[b.n_id])
            assert torch.equal(b.n_id[: len(b.seeds)], b.seeds)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_the_gpu_s_split_hands_out_views_of_one_decoded_tensor_per_field():
    """On a GPU (the split kernels decode every field once): each batch's fields are ranges,
    batch after batch, of one tensor per field (views to autograd but for
    :data:`OWN_PIECES`), equal to the batch's own matrix."""
    n, copies = 200, 5
    own = _batches(n, copies, values=True, eids=True)
    cpu = blocks.join_matrices(own, n)
    M = CSC(cpu.num_nodes, *(None if t is None else t.cuda() for t in list(vars(cpu).values())[1:]))
    got = blocks.split_matrix(M, blocks.bounds(M, n, copies), n, copies)
    assert type(got) is list and len(got) == copies
    for field in FIELDS[1:]:
        views = [getattr(p, field) for p in got]
        base = views[0].untyped_storage().data_ptr()
        view = field not in OWN_PIECES
        assert all(v.is_cuda and (v._base is not None) == view for v in views), field
        assert all(v.untyped_storage().data_ptr() == base for v in views), field
        for b, (v, p) in enumerate(zip(views, own)):
            assert torch.equal(v.cpu(), getattr(p, field)), (b, field)
