"""``gsample.formats.derived``: the facts a program keeps with the matrices it returns live
as long as each matrix and belong to that object alone (not to a pickle or copy of it)."""

import copy
import gc
import pickle
import weakref

import torch

import gsample as gs
from gsample.formats import derived
from gsample.formats.csc import CSC
from gsample.ir import Op


def a_csc() -> CSC:
    return CSC.of(4, torch.tensor([0, 1, 2]), torch.tensor([3, 1]), col_ids=torch.tensor([0, 2]))


def test_a_sparse_format_keeps_its_facts_itself_and_they_die_with_it():
    A, nodes = a_csc(), torch.tensor([0, 2, 3, 1])
    derived.remember(A, Op.ALL_NODES, nodes)
    derived.remember(A, derived.COLUMNS, derived.SEEDS)
    assert derived.recall(A, Op.ALL_NODES) is nodes
    assert derived.recall(A, derived.COLUMNS) is derived.SEEDS
    assert derived.recall(a_csc(), Op.ALL_NODES) is None  # an equal matrix is another one
    assert A not in derived._KEPT  # in the instance's dictionary, not the weak table
    assert derived.FACTS in vars(A)
    facts = vars(A)[derived.FACTS]
    gone = []
    weakref.finalize(A, gone.append, True)
    del A
    gc.collect()
    assert gone == [True]  # nothing the facts hold keeps the matrix alive
    assert facts[Op.ALL_NODES] is nodes


def test_a_pickle_or_copy_holds_the_fields_not_the_facts():
    A, nodes = a_csc(), torch.tensor([0, 2, 3, 1])
    derived.remember(A, Op.ALL_NODES, nodes)
    for other in (pickle.loads(pickle.dumps(A)), copy.copy(A), copy.deepcopy(A)):
        assert derived.recall(other, Op.ALL_NODES) is None
        assert other.num_nodes == A.num_nodes
        assert torch.equal(other.indptr, A.indptr) and torch.equal(other.rows, A.rows)
        assert torch.equal(other.col_ids, A.col_ids) and other.row_ids is None
    assert derived.recall(A, Op.ALL_NODES) is nodes  # the original keeps its own


def test_other_objects_use_the_weak_table():
    """A ``gs.Matrix``: its dictionary is not the library's to fill."""
    M = gs.Matrix.from_csc(torch.tensor([0, 1, 2]), torch.tensor([1, 0]))
    nodes = torch.tensor([1, 0])
    derived.remember(M, Op.ALL_NODES, nodes)
    assert derived.FACTS not in vars(M)
    assert M in derived._KEPT and derived.recall(M, Op.ALL_NODES) is nodes
    assert derived.recall(None, Op.ALL_NODES) is None  # not weakly referenceable: none
    derived.remember(None, Op.ALL_NODES, nodes)  # and nothing kept, no error


def _facts(A) -> dict | None:
    """Everything :func:`derived.recall` finds on ``A``, or None (nothing kept)."""
    got = {op: derived.recall(A, op) for op in (Op.ALL_NODES, derived.COLUMNS)}
    return {op: v for op, v in got.items() if v is not None} or None


def test_remember_each_keeps_what_a_remember_per_fact_keeps():
    """``remember_each`` (a super-batch's facts, one write per fresh block) leaves every
    matrix as a :func:`derived.remember` per fact and matrix would: fresh sparse formats,
    ones with facts already (merged, later values winning), other objects (the weak table),
    values None left out (no facts at all where every one is None), in the facts' order."""
    nodes = [torch.tensor([b]) for b in range(5)]

    def matrices():
        ms = [a_csc(), a_csc(), a_csc(), a_csc()]
        derived.remember(ms[1], Op.ALL_NODES, torch.tensor([9]))  # facts already
        derived.remember(ms[1], derived.COLUMNS, derived.SEEDS)
        M = gs.Matrix.from_csc(torch.tensor([0, 1, 2]), torch.tensor([1, 0]))
        return [*ms, M]  # M: not a sparse format (the weak table)

    ops = [derived.COLUMNS, Op.ALL_NODES]
    columns = [
        [derived.SEEDS, None, nodes[2], None, nodes[4]],
        [nodes[0], nodes[1], None, None, None],
    ]
    one, each = matrices(), matrices()
    for op, values in zip(ops, columns):
        for m, v in zip(one, values):
            if v is not None:
                derived.remember(m, op, v)
    derived.remember_each(each, ops, columns)
    for a, b in zip(one, each):
        assert _facts(a) == _facts(b) or _facts(a) is _facts(b) is None
        if isinstance(a, CSC):
            assert (derived.FACTS in vars(a)) == (derived.FACTS in vars(b))
            if derived.FACTS in vars(a):
                assert list(vars(a)[derived.FACTS]) == list(vars(b)[derived.FACTS])
    assert derived.FACTS not in vars(each[3])  # every value None: nothing kept
    assert derived.recall(each[1], Op.ALL_NODES) is nodes[1]  # merged: the later value
    assert derived.recall(each[4], derived.COLUMNS) is nodes[4]


def test_bind_seeds_binds_only_where_the_seeds_were_marked():
    """``bind_seeds``: each output's blocks marked ``SEEDS`` (by the first output's places)
    keep that mini-batch's seeds; other blocks, other facts and outputs shorter than the
    first are left as they were; a single matrix is an output too."""
    seeds = [torch.tensor([b]) for b in range(3)]
    outs = [[a_csc(), a_csc()], (a_csc(), a_csc()), [a_csc()]]
    for out in outs:
        derived.remember(out[0], derived.COLUMNS, derived.SEEDS)
    derived.remember(outs[0][1], derived.COLUMNS, seeds[2])
    derived.remember(outs[1][1], derived.COLUMNS, derived.SEEDS)  # not a place of the first
    derived.bind_seeds(outs, seeds)
    assert [derived.recall(out[0], derived.COLUMNS) for out in outs] == seeds
    assert derived.recall(outs[0][1], derived.COLUMNS) is seeds[2]
    assert derived.recall(outs[1][1], derived.COLUMNS) is derived.SEEDS
    single = a_csc()
    derived.remember(single, derived.COLUMNS, derived.SEEDS)
    M = gs.Matrix.from_csc(torch.tensor([0, 1, 2]), torch.tensor([1, 0]))
    derived.bind_seeds([single, M], seeds[:2])  # the first a CSC: places [0]; M has none
    assert derived.recall(single, derived.COLUMNS) is seeds[0]
    assert derived.recall(M, derived.COLUMNS) is None
    derived.bind_seeds([], [])  # nothing to bind
