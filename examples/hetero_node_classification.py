"""Heterogeneous node classification: papers and authors, trained on mini-batches from
``gsample.pyg.NeighborLoader`` on a PyG ``HeteroData``.

The data is synthetic, with planted labels: papers and authors belong to ``--classes``
hidden fields; a paper is written by ``3`` authors (of its field with probability
``--homophily``, else any) and cites ``5`` papers (likewise). A paper's own features say
little of its field (its field's centroid under heavy noise), an author's say more. The model,
``to_hetero`` of a 2-layer GraphSAGE over ``("author", "writes", "paper")``, ``("paper",
"cites", "paper")`` and their reverses (``T.ToUndirected()``), classifies papers from their
sampled 2-hop neighbourhoods: the loader's ``input_nodes=("paper", ids)`` are the seeds,
``batch["paper"].batch_size`` of them first in ``batch["paper"]``. The script prints the test
accuracy next to an MLP's on the paper's own features and chance::

    python examples/hetero_node_classification.py
    python examples/hetero_node_classification.py --full      # 10x the papers, more epochs
"""

import argparse
import time

import torch
import torch.nn.functional as F
import torch_geometric.transforms as T
from torch_geometric.data import HeteroData
from torch_geometric.nn import SAGEConv, to_hetero

import gsample.pyg


def planted_fields(args):
    """A ``HeteroData`` of papers and authors with planted fields (see the module's text).

    Returns
    -------
    HeteroData
        ``data["paper"].x`` (P, F), ``data["paper"].y`` (P,) in ``[0, C)``, ``data["author"].x``
        (A, F); edge types ``("author", "writes", "paper")`` and ``("paper", "cites",
        "paper")``; ``data["paper"].train_mask`` / ``test_mask`` (a random 50/50 split).
    """
    g = torch.Generator().manual_seed(args.seed)
    c, p, a = args.classes, args.papers, args.papers // 2
    paper_y = torch.randint(0, c, (p,), generator=g)
    author_y = torch.randint(0, c, (a,), generator=g)

    def link(dst_y, src_y, per_node):
        """``per_node`` sources per destination, of its class w.p. ``homophily``."""
        dst = torch.arange(dst_y.numel()).repeat_interleave(per_node)
        members = torch.argsort(src_y)  # sources grouped by class
        start = torch.searchsorted(src_y[members], torch.arange(c))
        size = torch.bincount(src_y, minlength=c)
        y = dst_y[dst]
        pick = (torch.rand(dst.numel(), generator=g) * size[y]).long().clamp(max=size[y] - 1)
        same = members[start[y] + pick]
        anyone = torch.randint(0, src_y.numel(), (dst.numel(),), generator=g)
        src = torch.where(torch.rand(dst.numel(), generator=g) < args.homophily, same, anyone)
        return torch.unique(torch.stack([src, dst]), dim=1)

    centroid = torch.randn(c, args.features, generator=g)
    data = HeteroData()
    data["paper"].x = centroid[paper_y] + 4.0 * torch.randn(p, args.features, generator=g)
    data["paper"].y = paper_y
    data["author"].x = centroid[author_y] + 1.5 * torch.randn(a, args.features, generator=g)
    data["author", "writes", "paper"].edge_index = link(paper_y, author_y, 3)
    data["paper", "cites", "paper"].edge_index = link(paper_y, paper_y, 5)
    train = torch.rand(p, generator=g) < 0.5
    data["paper"].train_mask, data["paper"].test_mask = train, ~train
    # reverse edges, so that authors hear from their papers too
    return T.ToUndirected()(data)


class SAGE(torch.nn.Module):
    def __init__(self, hidden, out):
        super().__init__()
        self.conv1, self.conv2 = SAGEConv((-1, -1), hidden), SAGEConv((-1, -1), out)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


def loader(data, mask, args, shuffle):
    return gsample.pyg.NeighborLoader(
        data,
        num_neighbors=args.fanouts,  # per hop, for every edge type
        input_nodes=("paper", mask),
        batch_size=args.batch_size,
        shuffle=shuffle,
        seed=args.seed,
    )


def features_alone(data, args):
    """Test accuracy of an MLP on the papers' own features (no graph)."""
    x, y = data["paper"].x, data["paper"].y
    train, test = data["paper"].train_mask, data["paper"].test_mask
    mlp = torch.nn.Sequential(
        torch.nn.Linear(x.shape[1], args.hidden),
        torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.classes),
    )
    opt = torch.optim.Adam(mlp.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(200):
        opt.zero_grad()
        F.cross_entropy(mlp(x[train]), y[train]).backward()
        opt.step()
    with torch.no_grad():
        return float((mlp(x[test]).argmax(-1) == y[test]).float().mean())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--papers", type=int, default=3_000)
    p.add_argument("--classes", type=int, default=4)
    p.add_argument("--features", type=int, default=16)
    p.add_argument("--homophily", type=float, default=0.7)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 5])
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--full", action="store_true", help="10x the papers, 10 epochs")
    args = p.parse_args(argv)
    if args.full:
        args.papers, args.epochs = 10 * args.papers, 10
    torch.manual_seed(args.seed)

    data = planted_fields(args)
    print(
        f"{data['paper'].num_nodes:,} papers, {data['author'].num_nodes:,} authors, "
        f"{args.classes} fields; edge types {', '.join(r for _, r, _ in data.edge_types)}"
    )
    model = to_hetero(SAGE(args.hidden, args.classes), data.metadata(), aggr="sum")
    with torch.no_grad():  # the lazy layers learn their input sizes
        model(data.x_dict, data.edge_index_dict)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train = loader(data, data["paper"].train_mask, args, shuffle=True)
    for epoch in range(args.epochs):
        model.train()
        start, total, n = time.perf_counter(), 0.0, 0
        for batch in train:
            opt.zero_grad()
            b = batch["paper"].batch_size  # the seeds come first
            out = model(batch.x_dict, batch.edge_index_dict)["paper"][:b]
            loss = F.cross_entropy(out, batch["paper"].y[:b])
            loss.backward()
            opt.step()
            total, n = total + loss.item(), n + 1
        print(f"epoch {epoch}: loss {total / n:.4f} ({time.perf_counter() - start:.1f} s)")

    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in loader(data, data["paper"].test_mask, args, shuffle=False):
            b = batch["paper"].batch_size
            pred = model(batch.x_dict, batch.edge_index_dict)["paper"][:b].argmax(-1)
            correct += int((pred == batch["paper"].y[:b]).sum())
            total += b
    result = {"gnn": correct / total, "features_alone": features_alone(data, args)}
    print(
        f"test accuracy: GNN {result['gnn']:.3f}, MLP on paper features "
        f"{result['features_alone']:.3f}, chance {1 / args.classes:.3f}"
    )
    return result


if __name__ == "__main__":
    main()
