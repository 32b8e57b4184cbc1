"""gsample/backend/torch/blocks.py: the helpers a super-batched program joins, tiles and
splits its values with (exercised end to end by tests/test_super_batch.py)."""
import pytest
import torch

import gsample as gs
from gsample.backend.torch import extract, select
from gsample.runtime import blocks
from gsample.formats.layouts import convert


def test_tile_encodes_one_copy_of_graph_level_ids_per_batch():
    ids = torch.tensor([3, 1, 9], dtype=torch.int64)
    got = blocks.tile(ids, 10, 3, True, "rows")
    assert torch.equal(got, torch.tensor([3, 1, 9, 13, 11, 19, 23, 21, 29]))
    assert got.dtype == ids.dtype
    w = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert torch.equal(blocks.tile(w, 10, 2, False, "w"), torch.cat([w, w]))
    assert blocks.tile(2.5, 10, 4, False, "s") == 2.5
    with pytest.raises(IndexError, match="rows: node id 10 is out of range"):
        blocks.tile(torch.tensor([10]), 10, 3, True, "rows")     # not a node of the graph


@pytest.mark.parametrize("layout", ["csr", "csr-compact", "coo"])
def test_bounds_of_every_layout_are_those_of_its_csc(layout):
    """Per batch: where its columns, rows and edges start, whatever the layout (CSR and COO
    count each batch's edges, CSC reads its column pointer)."""
    n = 200
    A = gs.datasets.rmat(n, 3000, seed=5).csc
    parts = [select.collective_sample(extract.slice_cols(A, torch.arange(b, 60 + 7 * b, 3)),
                                      15 + 5 * b, False, 100 + b) for b in range(4)]
    M = blocks.join_matrices(parts, n)
    want = blocks.bounds(M, n, 4)
    assert want.edges == [sum(p.nnz for p in parts[:b]) for b in range(5)]
    assert want.cols == [sum(p.num_cols for p in parts[:b]) for b in range(5)]
    got = blocks.bounds(convert(M, layout), n, 4)
    assert (got.cols, got.rows, got.edges) == (want.cols, want.rows, want.edges)
