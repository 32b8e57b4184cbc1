"""Recommendation on a bipartite user-item graph: a heterogeneous GraphSAGE trained with
``gsample.pyg.LinkNeighborLoader`` on triplets (a user, an item it took, items it did not).

The data is synthetic, with planted tastes: users and items belong to ``--groups`` hidden
groups, a user takes mostly items of its own group (popular ones more often), and both kinds
of node carry only a noisy hint of their group as features. A PyG ``HeteroData`` holds
``("user", "rates", "item")`` and its reverse; a random fifth of the interactions is held
out. The loader samples both endpoints' neighbourhoods over the training interactions, with
``neg_sampling=gsample.pyg.NegativeSampling("triplet", amount=..., strict=True)``: ``amount``
items per positive that its user has not taken (gsample draws them, on the graph's device;
PyG's own ``NegativeSampling`` would allow the user's items too). ``batch["user"].src_index``,
``batch["item"].dst_pos_index`` and ``batch["item"].dst_neg_index`` index the batch's users
and items. The model, ``to_hetero`` of a 2-layer GraphSAGE, learns with the BPR loss; it then
ranks every item for every user (the training interactions excluded) and the script prints
recall@k on the held-out interactions, beside the recall of recommending the most popular
items and of chance::

    python examples/recommendation.py
    python examples/recommendation.py --full        # 4x the users and items, more epochs
"""

import argparse
import time

import torch
import torch.nn.functional as F
from torch_geometric.data import HeteroData
from torch_geometric.nn import SAGEConv, to_hetero

import gsample.pyg

RATES = ("user", "rates", "item")


def planted_interactions(num_users, num_items, groups=8, per_user=20, own=0.85, seed=0):
    """Users, items and their interactions, with planted tastes.

    User ``u`` of group ``g`` takes ``per_user`` items on average: with probability ``own``
    one of group ``g`` (drawn by a Zipf-like popularity within the group), else any item.
    Repeats are dropped.

    Returns
    -------
    edge_index : LongTensor, shape (2, E)
        ``[user, item]`` of every interaction, unique.
    user_group : LongTensor, shape (U,)
    item_group : LongTensor, shape (I,)
    """
    g = torch.Generator().manual_seed(seed)
    user_group = torch.randint(0, groups, (num_users,), generator=g)
    item_group = torch.randint(0, groups, (num_items,), generator=g)
    popularity = (
        1.0 / torch.arange(1, num_items + 1).float()[torch.randperm(num_items, generator=g)]
    )
    m = num_users * per_user
    user = torch.randint(0, num_users, (m,), generator=g)
    # an item of the user's group: popularity restricted to that group
    in_group = popularity * (item_group[None, :] == torch.arange(groups)[:, None])
    pick = torch.empty(m, dtype=torch.int64)
    for k in range(groups):
        mine = user_group[user] == k
        pick[mine] = torch.multinomial(in_group[k], int(mine.sum()), True, generator=g)
    anyone = torch.randint(0, num_items, (m,), generator=g)
    item = torch.where(torch.rand(m, generator=g) < own, pick, anyone)
    key = torch.unique(user * num_items + item)
    return torch.stack([key // num_items, key % num_items]), user_group, item_group


def build(args):
    """``(train HeteroData, held-out [user, item] pairs)``: features are noisy group hints."""
    g = torch.Generator().manual_seed(args.seed + 1)
    edges, user_group, item_group = planted_interactions(
        args.users, args.items, args.groups, seed=args.seed
    )
    held = torch.rand(edges.shape[1], generator=g) < 0.2
    centroid = torch.randn(args.groups, args.dim, generator=g)

    def hint(group):
        return centroid[group] + args.noise * torch.randn(group.numel(), args.dim, generator=g)

    data = HeteroData()
    data["user"].x, data["item"].x = hint(user_group), hint(item_group)
    data[RATES].edge_index = edges[:, ~held]
    data["item", "rev_rates", "user"].edge_index = edges[:, ~held].flip(0)
    return data, edges[:, held]


class SAGE(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.conv1, self.conv2 = SAGEConv((-1, -1), hidden), SAGEConv((-1, -1), hidden)

    def forward(self, x, edge_index):
        return self.conv2(F.relu(self.conv1(x, edge_index)), edge_index)


class Recommender(torch.nn.Module):
    """``to_hetero`` GraphSAGE for users and items, plus a learned bias per item (its
    popularity: a mean aggregation cannot see how many users took an item)."""

    def __init__(self, data, hidden):
        super().__init__()
        self.gnn = to_hetero(SAGE(hidden), data.metadata(), aggr="sum")
        self.bias = torch.nn.Embedding(data["item"].num_nodes, 1)
        torch.nn.init.zeros_(self.bias.weight)
        with torch.no_grad():  # the lazy layers learn their input sizes
            self.gnn(data.x_dict, data.edge_index_dict)

    def forward(self, x_dict, edge_index_dict, item_id):
        """``(user h, item h, item bias)`` of a batch's (or the graph's) nodes."""
        h = self.gnn(x_dict, edge_index_dict)
        return h["user"], h["item"], self.bias(item_id).squeeze(-1)


def bpr_loss(model, batch):
    """BPR: each positive item should outscore each of its user's negatives."""
    user, item, bias = model(batch.x_dict, batch.edge_index_dict, batch["item"].n_id)
    user = user[batch["user"].src_index]  # (L, d)
    pos, neg = batch["item"].dst_pos_index, batch["item"].dst_neg_index  # (L,), (L, amount)
    pos_score = (user * item[pos]).sum(-1) + bias[pos]  # (L,)
    neg_score = (user[:, None] * item[neg]).sum(-1) + bias[neg]  # (L, amount)
    return -F.logsigmoid(pos_score[:, None] - neg_score).mean()


def recall_at_k(score, train, test, k):
    """Mean over users with held-out items of the share of them in the user's top ``k``
    (``score`` of shape (U, I); training interactions are never recommended)."""
    score = score.clone()
    score[train[0], train[1]] = float("-inf")
    top = score.topk(k, dim=1).indices
    hit = torch.zeros_like(score, dtype=torch.bool)
    hit[test[0], test[1]] = True
    hits = hit.gather(1, top).sum(1).float()
    wanted = torch.bincount(test[0], minlength=score.shape[0]).float()
    users = wanted > 0
    return float((hits[users] / wanted[users]).mean())


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--users", type=int, default=1_000)
    p.add_argument("--items", type=int, default=500)
    p.add_argument("--groups", type=int, default=8)
    p.add_argument("--dim", type=int, default=16, help="feature size")
    p.add_argument("--noise", type=float, default=2.0, help="features' noise (std)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 5])
    p.add_argument("--negatives", type=int, default=4, help="per positive (triplet amount)")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--k", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--full", action="store_true", help="4x the users and items, 10 epochs")
    args = p.parse_args(argv)
    if args.full:
        args.users, args.items, args.epochs = 4 * args.users, 4 * args.items, 10
    torch.manual_seed(args.seed)

    data, test = build(args)
    train = data[RATES].edge_index
    print(
        f"{args.users:,} users, {args.items:,} items, {args.groups} tastes; "
        f"{train.shape[1]:,} training interactions, {test.shape[1]:,} held out"
    )
    loader = gsample.pyg.LinkNeighborLoader(
        data,
        num_neighbors=args.fanouts,
        edge_label_index=(RATES, train),
        # items the user has not taken (strict: never one of its training interactions)
        neg_sampling=gsample.pyg.NegativeSampling("triplet", amount=args.negatives, strict=True),
        batch_size=args.batch_size,
        shuffle=True,
        seed=args.seed,
    )
    model = Recommender(data, args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)
    for epoch in range(args.epochs):
        model.train()
        start, total, n = time.perf_counter(), 0.0, 0
        for batch in loader:
            opt.zero_grad()
            loss = bpr_loss(model, batch)
            loss.backward()
            opt.step()
            total, n = total + loss.item(), n + 1
        print(f"epoch {epoch}: BPR loss {total / n:.4f} ({time.perf_counter() - start:.1f} s)")

    model.eval()
    with torch.no_grad():  # every user and item at once, over the training interactions
        user, item, bias = model(data.x_dict, data.edge_index_dict, torch.arange(args.items))
    score = user @ item.T + bias
    popular = torch.bincount(train[1], minlength=args.items).float().expand_as(score)
    chance = torch.rand(score.shape, generator=torch.Generator().manual_seed(args.seed))
    result = {
        name: recall_at_k(s, train, test, args.k)
        for name, s in (("gnn", score), ("popular", popular), ("chance", chance))
    }
    print(
        f"recall@{args.k} on held-out interactions: GNN {result['gnn']:.3f}, most popular "
        f"{result['popular']:.3f}, chance {result['chance']:.3f}"
    )
    return result


if __name__ == "__main__":
    main()
