"""The training examples: ``examples/train_common.py`` (blocks to per-layer ``edge_index``),
``train_graphsage.py`` and ``train_ladies.py`` on Cora (the sampled model within 3 points of
the full-batch PyG model), and ``demo.py`` (the README's first command) in a small size."""

import functools

import pytest
import torch
from conftest import DATA
from helpers import example

import gsample as gs

pytest.importorskip("torch_geometric")


@pytest.mark.parametrize("name", ["graphsage", "ladies"])
def test_block_layers_are_the_blocks_edges(small_graph, name):
    """Each layer's edge_index, mapped through n_id, is its block's edges (row -> column),
    input layer first; the last layer's destinations are the seeds."""
    common = example("train_common")
    A = example("ladies").normalize(small_graph) if name == "ladies" else small_graph
    f = (
        functools.partial(example("graphsage").graphsage, fanouts=(4, 3))
        if name == "graphsage"
        else functools.partial(example("ladies").ladies, layers=(100, 100))
    )
    loader = gs.DataLoader(
        A, f, torch.arange(0, 2000, 13), 40, seed=0, labels=torch.zeros(2000, dtype=torch.int64)
    )
    for batch in loader:
        layers = common.block_layers(batch)
        unchecked = common.block_layers(batch, check=False)  # the same layers, no read-back
        for a, b in zip(layers, unchecked, strict=True):
            assert torch.equal(a.edge_index, b.edge_index) and a.num_dst == b.num_dst
        assert layers[-1].num_dst == batch.seeds.numel()
        for layer, block in zip(layers, reversed(batch.out)):
            r, c, _ = block.edges()
            src, dst = batch.n_id[layer.edge_index]
            assert torch.equal(src, r) and torch.equal(dst, c)
            assert int(layer.edge_index[1].max()) < layer.num_dst
            assert torch.equal(layer.edge_weight, block.csc.value_tensor())  # weighted graph


def test_block_layers_refuse_pyg_style_blocks(small_graph):
    f = functools.partial(example("graphsage_pyg").graphsage_pyg, fanouts=(4, 3))
    batch = next(
        iter(
            gs.DataLoader(
                small_graph, f, torch.arange(64), 64, labels=torch.zeros(2000, dtype=torch.int64)
            )
        )
    )
    with pytest.raises(ValueError, match=r"not a prefix of batch\.n_id"):
        example("train_common").block_layers(batch)


@pytest.mark.parametrize("name", ["train_graphsage", "train_ladies"])
def test_sampled_training_is_within_3_points_of_full_batch_on_cora(name, capsys):
    if not (DATA / "cora.npz").exists():
        pytest.skip("cora.npz not present")
    result = example(name).main(["--quick", "--cora", str(DATA / "cora.npz")])
    out = capsys.readouterr().out
    assert "test accuracy: sampled (gsample)" in out and "sampling" in out
    assert result["full"] > 0.8  # PyG's full-batch model learned Cora
    assert abs(result["sampled"] - result["full"]) <= 0.03, result


def test_training_is_the_same_with_and_without_the_pipeline(capsys):
    """The pipeline changes when batches are made, not what they are: the same losses."""
    runs = [
        example("train_graphsage").main(
            ["--data", "planted", "--epochs", "2", "--full-epochs", "1", *flag]
        )
        for flag in ([], ["--no-pipeline"])
    ]
    assert [e["loss"] for e in runs[0]["epochs"]] == [e["loss"] for e in runs[1]["epochs"]]
    assert runs[0]["sampled"] == runs[1]["sampled"]


def test_demo_trains_and_explains(capsys):
    result = example("demo").main(["--num-nodes", "4000", "--epochs", "3", "--full-epochs", "30"])
    out = capsys.readouterr().out
    from gsample.passes import PIPELINE

    at = [fn.__name__ for fn, _ in PIPELINE].index("fuse_extract_select") + 1
    for text in (
        "epoch  2: sampling",
        "test accuracy: sampled GraphSAGE",
        "== optimised IR",
        f"pass {at}/{len(PIPELINE)} fuse_extract_select: changed",
        "slice_individual_sample",
    ):
        assert text in out
    # the graph carries the classes: the GNN beats the features alone by far
    assert result["sampled"] > result["features_alone"] + 0.15
