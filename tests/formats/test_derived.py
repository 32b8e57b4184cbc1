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
