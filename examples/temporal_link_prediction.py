"""Temporal link prediction: train on the past, predict the future, never sample the future.

A graph of timestamped messages (SNAP's CollegeMsg when present, else a synthetic one of
planted contacts) is split at a time: the model trains on the messages before it and is
evaluated on the messages after it. ``gsample.pyg.LinkNeighborLoader`` gives each supervision
edge ``u -> v`` at time ``t`` the seed time ``t - 1`` (``edge_label_time``) and samples with
``time_attr="edge_time"``: both endpoints' neighbourhoods hold only messages sent strictly
before ``t``, so neither training nor evaluation ever looks at the message it predicts, or at
a later one. Negatives (``neg_sampling="binary"``, one random pair per positive) carry their
positive's time. The model is a 2-layer GraphSAGE over learned node embeddings, scoring a pair
by the dot product of its endpoints' representations; the script prints the test AUC (0.5 is
chance)::

    python examples/temporal_link_prediction.py              # CollegeMsg, else synthetic
    python examples/temporal_link_prediction.py --data synthetic
    python examples/temporal_link_prediction.py --full       # every message, 10 epochs

CollegeMsg is read from ``$GSAMPLE_DATA`` or ``../shared/data`` beside the repository
(``gs.datasets.default_data_path``); nothing is downloaded.
"""

import argparse
import itertools
import os
import time

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import SAGEConv

import gsample as gs
import gsample.pyg


def synthetic_messages(num_nodes=600, num_messages=24_000, num_contacts=6, seed=0):
    """A temporal message graph whose future follows from its past.

    Every node has ``num_contacts`` fixed contacts, drawn inside its community (one of
    ``num_nodes // 50``); a message goes from a node chosen by a skewed activity to one of its
    contacts (70 %), another member of its community (20 %) or anyone (10 %). Times are
    sorted integers, so the i-th message is the i-th sent.

    Returns
    -------
    edge_index : LongTensor, shape (2, M)
    edge_time : LongTensor, shape (M,)
        Non-decreasing.
    """
    g = torch.Generator().manual_seed(seed)
    n, size = num_nodes, 50
    community = torch.arange(n) // size
    base = community * size
    contacts = base[:, None] + torch.randint(0, size, (n, num_contacts), generator=g)
    activity = torch.rand(n, generator=g) ** 3  # a few nodes send most messages
    src = torch.multinomial(activity, num_messages, replacement=True, generator=g)
    kind = torch.rand(num_messages, generator=g)
    contact = contacts[src, torch.randint(0, num_contacts, (num_messages,), generator=g)]
    member = base[src] + torch.randint(0, size, (num_messages,), generator=g)
    anyone = torch.randint(0, n, (num_messages,), generator=g)
    dst = torch.where(kind < 0.7, contact, torch.where(kind < 0.9, member, anyone))
    keep = src != dst
    t = torch.sort(torch.randint(0, 10**7, (num_messages,), generator=g)).values
    return torch.stack([src, dst])[:, keep], t[keep]


def load(args):
    """``(edge_index, edge_time, num_nodes, name)``: the messages in time order."""
    path = args.path or gs.datasets.default_data_path("CollegeMsg.txt.gz")
    if args.data == "collegemsg" or (args.data == "auto" and os.path.exists(path)):
        A = gs.datasets.read_snap(path)  # SRC DST UNIXTS; edge ids are line positions
        r, c, e = A.edges()
        edge_index = torch.empty(2, e.numel(), dtype=torch.int64)
        edge_index[0, e], edge_index[1, e] = r, c
        return edge_index, A.edge_time, A.num_nodes, "CollegeMsg"
    n = 3_000 if args.full else 600
    ei, t = synthetic_messages(n, 40 * n, seed=args.seed)
    return ei, t, n, "synthetic messages"


class Encoder(torch.nn.Module):
    """Learned node embeddings, then two SAGE layers (messages flow ``edge_index[0] -> [1]``)."""

    def __init__(self, num_nodes, dim):
        super().__init__()
        self.emb = torch.nn.Embedding(num_nodes, dim)
        self.conv1, self.conv2 = SAGEConv(dim, dim), SAGEConv(dim, dim)

    def forward(self, n_id, edge_index):
        h = F.relu(self.conv1(self.emb(n_id), edge_index))
        return self.conv2(h, edge_index)


def scores(model, batch):
    """The logit of every pair of ``batch.edge_label_index`` (local ids in ``batch.n_id``)."""
    h = model(batch.n_id, batch.edge_index)
    src, dst = batch.edge_label_index
    return (h[src] * h[dst]).sum(-1)


def auc(score, label):
    """The ROC AUC: the chance that a random positive outscores a random negative (ties 1/2)."""
    neg = torch.sort(score[label == 0]).values
    pos = score[label == 1]
    below = torch.searchsorted(neg, pos, side="left")  # negatives under each positive
    at_most = torch.searchsorted(neg, pos, side="right")  # ... plus the tied ones
    return float((below + at_most).double().sum() / (2 * pos.numel() * neg.numel()))


def graph(edge_index, edge_time, num_nodes):
    """The loader's ``Data``: the messages, then their reverses (with the same times), so
    that each endpoint hears from the nodes it wrote to as well as from those that wrote to
    it. Message ``i`` is edge ``i``."""
    return Data(
        edge_index=torch.cat([edge_index, edge_index.flip(0)], 1),
        edge_time=torch.cat([edge_time, edge_time]),
        num_nodes=num_nodes,
    )


def loader(data, index, args, shuffle):
    """Supervision edges ``index`` (ids of messages in ``data``), each predicted from the
    messages sent strictly before it."""
    return gsample.pyg.LinkNeighborLoader(
        data,
        num_neighbors=args.fanouts,
        edge_label_index=data.edge_index[:, index],
        edge_label_time=data.edge_time[index] - 1,  # before the message: not its own hint
        time_attr="edge_time",  # an edge-level time: only edges of time <= the seed's
        temporal_strategy=args.strategy,
        neg_sampling="binary",  # one random pair per positive, at the positive's time
        batch_size=args.batch_size,
        shuffle=shuffle,
        seed=args.seed,
    )


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", choices=["auto", "collegemsg", "synthetic"], default="auto")
    p.add_argument("--path", default=None, help="CollegeMsg.txt.gz (default: ../shared/data)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--train-edges", type=int, default=8_192, help="per epoch (--full: all)")
    p.add_argument("--test-edges", type=int, default=4_096)
    p.add_argument("--split", type=float, default=0.8, help="share of messages before the cut")
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 5])
    p.add_argument(
        "--strategy",
        choices=["uniform", "last"],
        default="last",
        help="uniformly among the allowed messages, or the most recent",
    )
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--full", action="store_true", help="every message, 10 epochs (synthetic: 5x the nodes)"
    )
    return p


def main(argv=None):
    args = parser().parse_args(argv)
    torch.manual_seed(args.seed)  # the model's initial weights and the loader's shuffle
    edge_index, edge_time, num_nodes, name = load(args)
    data = graph(edge_index, edge_time, num_nodes)
    m = edge_index.shape[1]
    cut = int(edge_time[int(args.split * m)])  # the split time
    past = torch.nonzero(edge_time < cut).flatten()
    future = torch.nonzero(edge_time >= cut).flatten()
    g = torch.Generator().manual_seed(args.seed)
    if args.full:
        args.epochs = max(args.epochs, 10)
    else:
        future = future[torch.randperm(future.numel(), generator=g)[: args.test_edges]]
    print(
        f"{name}: {num_nodes:,} nodes, {m:,} messages; train on {past.numel():,} before "
        f"t = {cut}, test on {future.numel():,} after"
    )

    model = Encoder(num_nodes, args.dim)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    train = loader(data, past, args, shuffle=True)
    per_epoch = len(train) if args.full else -(-args.train_edges // args.batch_size)
    for epoch in range(args.epochs):
        model.train()
        start, total, n = time.perf_counter(), 0.0, 0
        for batch in itertools.islice(train, per_epoch):  # a fresh shuffle every epoch
            opt.zero_grad()
            loss = F.binary_cross_entropy_with_logits(scores(model, batch), batch.edge_label)
            loss.backward()
            opt.step()
            total, n = total + loss.item(), n + 1
        print(f"epoch {epoch}: loss {total / n:.4f} ({time.perf_counter() - start:.1f} s)")

    model.eval()
    out, labels = [], []
    with torch.no_grad():
        for batch in loader(data, future, args, shuffle=False):
            out.append(scores(model, batch))
            labels.append(batch.edge_label)
    result = {"auc": auc(torch.cat(out), torch.cat(labels)), "data": name}
    print(f"test AUC on the future: {result['auc']:.3f} (chance 0.5)")
    return result


if __name__ == "__main__":
    main()
