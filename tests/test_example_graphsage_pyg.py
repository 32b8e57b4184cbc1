"""``examples/graphsage_pyg.py``: PyG's hop semantics (each node sampled once, at the hop after
the one that first reached it), checked against the graph's edge table; compiled equals
eager; the script runs."""

import pytest
import torch
from helpers import example

import gsample as gs


def edge_table(A):
    r, c, e = A.edges()
    src, dst = torch.empty_like(r), torch.empty_like(c)
    src[e], dst[e] = r, c
    return src, dst


@pytest.mark.parametrize("fanouts", [(5, 3), (10, 5, 2)])
def test_structure(small_graph, device, fanouts):
    A = small_graph.to(device)
    seeds = torch.randperm(2000, generator=torch.Generator().manual_seed(4))[:50].to(device)
    gs.manual_seed(0)
    blocks = example("graphsage_pyg").graphsage_pyg(A, seeds, fanouts)
    src_of, dst_of = edge_table(A)
    deg = torch.bincount(dst_of, minlength=2000)
    seen = seeds
    assert torch.equal(blocks[0].col_ids, seeds)
    for h, (m, k) in enumerate(zip(blocks, fanouts)):
        r, c, e = m.edges()
        assert torch.equal(src_of[e], r) and torch.equal(dst_of[e], c)
        cols = m.col_ids
        counts = torch.bincount(m.csc.edge_cols(), minlength=cols.numel())
        assert torch.equal(counts, deg[cols].clamp(max=k))
        assert e.unique().numel() == e.numel()  # without replacement
        if h + 1 < len(blocks):
            nxt = blocks[h + 1].col_ids
            reached = r.unique()
            assert torch.equal(nxt, reached[~torch.isin(reached, seen)])  # new only
            assert not bool(torch.isin(nxt, seen).any())
            seen = torch.cat([seen, nxt])


def test_compiled_equals_eager(small_graph):
    fn = example("graphsage_pyg").graphsage_pyg
    seeds = torch.arange(0, 2000, 31)
    gs.manual_seed(3)
    eager = fn(small_graph, seeds, (6, 4))
    gs.manual_seed(3)
    compiled = gs.compile(fn)(small_graph, seeds, (6, 4))
    for a, b in zip(eager, compiled, strict=True):
        assert torch.equal(a.edges()[2], b.edges()[2]) and torch.equal(a.col_ids, b.col_ids)


def test_main_runs(capsys):
    example("graphsage_pyg").main(
        ["--num-nodes", "3000", "--num-edges", "30000", "--batches", "2", "--batch-size", "64"]
    )
    assert "graphsage_pyg: 2 batches of 64 seeds" in capsys.readouterr().out
