"""The structure-reads pass: all_nodes / row_ids / col_ids / row / column of a value map
(edge map, broadcast, SDDMM, fused map) read the map's input; samples unchanged."""

import functools

import helpers
from helpers import random_seeds as seeds

import gsample as gs
from gsample.ir import Op
from gsample.passes.structure_reads import structure_reads


def mapped_frontiers(A, seeds):
    blocks = []
    for k in (5, 3):
        s = A[:, seeds].individual_sample(k)
        w = (s * 2.0).div(s.sum(axis=0), axis=0)  # values only
        blocks.append((w, w.row_ids, w.col_ids))
        seeds = w.all_nodes()
    return blocks


def test_structure_readers_skip_value_maps():
    A = gs.datasets.rmat(2000, 30000, seed=1, weighted=True)
    program = gs.compile(mapped_frontiers).program(A, seeds())
    readers = [n for n in program.nodes if n.info.structure_only]
    assert {n.op for n in readers} >= {Op.ALL_NODES, Op.ROW_IDS, Op.COL_IDS}
    for n in readers:
        assert n.input("A").info.edges is None, (n, n.input("A"))
    again = structure_reads(program.copy())
    assert not again.changed
    assert [(n.name, {k: v.name for k, v in n.inputs.items()}) for n in again.graph.nodes] == [
        (n.name, {k: v.name for k, v in n.inputs.items()}) for n in program.nodes
    ]
    helpers.check_compiled_equals_eager(mapped_frontiers, A, seeds(), calls=2, distinct=True)
    lad = helpers.example("ladies")
    fn = functools.partial(lad.ladies, layers=(60, 60))
    helpers.check_compiled_equals_eager(fn, lad.normalize(A), seeds(), calls=2)
