"""The PyG loader examples train end to end on the CPU at a small size and learn:

* ``examples/temporal_link_prediction.py``: test AUC on the messages after the split time
  well above 0.5 and above the same model without neighbourhoods, on the synthetic messages
  and on CollegeMsg (when ``../shared/data`` has it); its loader never samples the predicted
  message or a later one;
* ``examples/recommendation.py``: recall@20 on held-out interactions well above recommending
  the most popular items, the same model without sampled neighbourhoods, and chance;
* ``examples/hetero_node_classification.py``: test accuracy far above an MLP on the papers'
  own features (the field is in the neighbourhood, which only the loader gives) and chance.

Every run is seeded, so each metric is a fixed number; the margins leave room for other
platforms' floating point, not for a broken loader (which gives chance-level neighbourhoods).
"""

import pytest
import torch
from conftest import DATA
from helpers import example

pytest.importorskip("torch_geometric")

SMALL = ["--epochs", "2", "--train-edges", "4096", "--test-edges", "2048"]


@pytest.mark.parametrize("data", ["synthetic", "collegemsg"])
def test_temporal_link_prediction_learns_the_future(data, capsys):
    """The sampled past neighbourhoods carry the signal: the same model given none (its
    node embeddings alone, ``--fanouts 0 0``) does far worse."""
    path = DATA / "CollegeMsg.txt.gz"
    if data == "collegemsg" and not path.exists():
        pytest.skip("CollegeMsg.txt.gz not present")
    run = example("temporal_link_prediction").main
    args = ["--data", data, "--path", str(path), *SMALL]
    result = run(args)
    assert "test AUC on the future" in capsys.readouterr().out
    assert result["data"] == {"synthetic": "synthetic messages", "collegemsg": "CollegeMsg"}[data]
    alone = run([*args, "--fanouts", "0", "0"])
    assert result["auc"] > 0.75 and result["auc"] > alone["auc"] + 0.1, (result, alone)


def test_auc_is_the_share_of_positive_negative_pairs_in_order():
    auc = example("temporal_link_prediction").auc
    g = torch.Generator().manual_seed(0)
    score = torch.randint(0, 5, (40,), generator=g).float()  # many ties
    label = torch.randint(0, 2, (40,), generator=g)
    pos, neg = score[label == 1], score[label == 0]
    pairs = (pos[:, None] > neg).double() + 0.5 * (pos[:, None] == neg).double()
    assert auc(score, label) == pytest.approx(float(pairs.mean()), abs=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "last"])
def test_temporal_loader_never_samples_the_predicted_message_or_later(strategy):
    """Each tree holds only messages sent strictly before the message its seed predicts."""
    ex = example("temporal_link_prediction")
    args = ex.parser().parse_args(["--data", "synthetic", "--strategy", strategy])
    args.batch_size = 64
    edge_index, edge_time, num_nodes, _ = ex.load(args)
    data = ex.graph(edge_index, edge_time, num_nodes)
    index = torch.arange(15_000, 15_300)  # messages from the middle of the stream
    seen = 0
    for batch in ex.loader(data, index, args, shuffle=False):
        b = batch.input_id.numel()
        predicted = index[batch.input_id]
        assert torch.equal(batch.n_id[batch.edge_label_index[:, :b]], edge_index[:, predicted])
        # binary negatives share their positive's time; batch.batch is the positive's slot
        limit = edge_time[predicted]  # (b,)
        assert torch.equal(batch.edge_label_time, torch.cat([limit, limit]) - 1)
        tree = batch.batch[batch.edge_index[1]]
        assert torch.equal(tree, batch.batch[batch.edge_index[0]])  # trees stay apart
        assert torch.equal(batch.edge_time, data.edge_time[batch.e_id])
        assert bool((batch.edge_time < limit[tree]).all())
        seen += batch.e_id.numel()
    assert seen > 10 * index.numel()  # the trees are not empty: the check means something


def test_recommendation_beats_popularity_and_the_features_alone(capsys):
    run = example("recommendation").main
    result = run([])
    assert "recall@20 on held-out interactions" in capsys.readouterr().out
    assert result["gnn"] > result["popular"] + 0.15, result
    assert result["gnn"] > 5 * result["chance"], result
    alone = run(["--fanouts", "0", "0"])  # no sampled neighbours: each node's features only
    assert result["gnn"] > alone["gnn"] + 0.2, (result, alone)


def test_hetero_node_classification_beats_the_features_alone(capsys):
    result = example("hetero_node_classification").main([])
    assert "test accuracy: GNN" in capsys.readouterr().out
    assert result["gnn"] > result["features_alone"] + 0.3, result
    assert result["gnn"] > 0.8, result  # 4 fields: chance is 0.25
