"""GCN-BS: bandit neighbour sampling (Liu et al., NeurIPS 2020), written in the gsample DSL.

"Bandit Samplers for Training Graph Neural Networks" treats each node's choice
of in-neighbours as an adversarial multi-armed bandit (EXP3): every edge
``(v, u)`` has a weight ``w_vu``; node ``u`` draws ``k`` in-neighbours *with
replacement* from

    q_vu = (1 - eta) * w_vu / sum_v' w_v'u  +  eta / n(u)

(``n(u)`` its in-degree, ``eta`` the exploration share), and after the training
step the drawn arms are rewarded and their weights updated,
``w_vu <- w_vu * exp(delta * r_vu / (q_vu * n(u)))``. For a GCN the reward is the
drop in the estimator's variance, ``r_vu = alpha_vu^2 ||h_v||^2 / (k q_vu^2)``.
Thanos (Zhang et al., NeurIPS 2021) keeps the same sampler and changes the
update (a biased, bounded reward and periodic re-initialisation of the weights,
Rexp3): both live outside the sampler, in plain torch code between mini-batches.

The weights are a tensor ``bias`` of one value per edge of the graph (indexed by
edge id) that the sampler takes as an argument (``functools.partial``, as
``pass_sampler.py`` takes its weights); :func:`bandit_update` changes it in place
after each batch. docs/architecture.md §7, entry 15.

``gs.DataLoader`` and such state: a sampler given tensors through
``functools.partial`` samples in the caller's thread, in step with the loop, so
batch ``i + 1`` is drawn after the update of batch ``i`` (``fixed_state=False``,
the default). ``super_batch`` samples several mini-batches before the first
training step and is refused unless ``fixed_state=True``, which declares that the
bias does not change while the loader runs: true only when the updates are
applied between epochs, not after each batch.

Run it from the repository root (after ``pip install -e .``)::

    python examples/gcn_bs.py                          # an R-MAT graph
    python examples/gcn_bs.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, seed_nodes

import gsample as gs


def gcn_bs(A, seeds, bias, fanouts=(10, 10), eta=0.4):
    """Sample one block per layer from the bandit's current edge weights.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph; its values are the aggregation weights ``alpha`` (1 when none).
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    bias : Tensor, shape (E,)
        The bandit weights ``w``, one per edge of ``A``, indexed by original edge id
        (``A.edges()[2]``); positive and finite. Start from ``torch.ones(E)``.
    fanouts : sequence of int
        Draws per node at each layer, with replacement.
    eta : float
        Exploration share, ``0 < eta <= 1``: every in-edge keeps a probability of at
        least ``eta / n(u)``.

    Returns
    -------
    list of gs.Matrix
        ``blocks[l]`` has shape ``(N, C_l)``: columns are layer ``l``'s frontier
        (``C_0 = B``); every column with in-edges holds exactly ``fanouts[l]`` drawn
        edges (repeats possible), and a drawn edge's value is its draw probability
        ``q_vu`` (what :func:`bandit_update` and an importance-weighted aggregator
        ``alpha / (k q)`` need). ``blocks[l + 1]``'s columns are ``blocks[l].all_nodes()``.
    """
    blocks = []
    for k in fanouts:
        sub = A[:, seeds]
        ones = sub**0  # 1 on every edge
        w = ones * bias[sub.edges()[2]]  # w_vu on the frontier's edges
        q = (1 - eta) * w.div(w.sum(axis=0), axis=0) + ones.div(ones.sum(axis=0), axis=0) * eta
        s = q.individual_sample(k, probs=q, replace=True)  # values: q of the drawn edges
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new
    return blocks


def bandit_update(bias, A, blocks, h, fanouts=(10, 10), delta=1e-3):
    """GCN-BS's EXP3 update of ``bias`` in place, from one batch's blocks.

    Parameters
    ----------
    bias : Tensor, shape (E,)
        The weights the sampler read (updated in place).
    A : gs.Matrix
        The graph (its values are ``alpha``; 1 when unweighted).
    blocks : list of gs.Matrix
        What :func:`gcn_bs` returned for the batch (values ``q``).
    h : Tensor, shape (N, F)
        The embeddings the rewards read (a model's hidden states; here any node
        representation).
    fanouts : sequence of int
        The sampler's fanouts (``k`` of each block).
    delta : float
        The bandit's learning rate.

    Notes
    -----
    Each draw of edge ``(v, u)`` adds ``delta * r / (q n(u))`` to ``log w_vu``, with the
    GCN reward ``r = alpha^2 ||h_v||^2 / (k q^2)``; the exponent is clipped at 10 per
    batch (the reward is unbounded as ``q -> 0``: the instability that Thanos's
    bounded reward removes).
    """
    alpha = A.values
    if alpha is not None:  # alpha by original edge id
        alpha = alpha[torch.argsort(A.edges()[2])].double()
    degree = (A**0).sum(axis=0)  # n(u)
    norm2 = (h.double() ** 2).sum(1)
    for s, k in zip(blocks, fanouts):
        src, dst, eid = s.edges()
        q = s.values.double()
        a = 1.0 if alpha is None else alpha[eid]
        reward = a**2 * norm2[src] / (k * q**2)
        step = torch.zeros(bias.numel(), dtype=torch.float64, device=bias.device)
        step.index_add_(0, eid, delta * reward / (q * degree[dst].double()))
        bias.mul_(torch.exp(step.clamp(max=10.0)).to(bias.dtype))
    if bias.max() > 1e20:  # keep in range: q is scale-free
        bias.div_(bias.max()).clamp_(min=1e-30)


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[10, 10])
    p.add_argument("--eta", type=float, default=0.4)
    p.add_argument("--num-features", type=int, default=16)
    args = p.parse_args(argv)
    A = load_graph(args)
    bias = torch.ones(A.num_edges)  # EXP3 starts uniform
    h = torch.randn(A.num_nodes, args.num_features, generator=torch.Generator().manual_seed(0))
    h = h / h.norm(dim=1, keepdim=True)  # stand-in embeddings, unit norm
    sampler = functools.partial(gcn_bs, bias=bias, fanouts=args.fanouts, eta=args.eta)
    gs.manual_seed(0)
    seeds = seed_nodes(A.num_nodes, args.batch_size * args.batches)
    loader = gs.DataLoader(A, sampler, seeds, args.batch_size)  # in step with the updates
    drawn = torch.zeros(A.num_edges, dtype=torch.bool)
    for batch in loader:
        # a training step would run here on batch.out and give h; the reward reads it
        bandit_update(bias, A, batch.out, h, args.fanouts)
        for b in batch.out:
            drawn[b.edges()[2]] = True
        spread = torch.log(bias.max() / bias.min())
        print(
            f"batch {batch.index}: {sum(b.num_edges for b in batch.out)} sampled edges, "
            f"{int(drawn.sum())} distinct edges rewarded so far, "
            f"log(max / min weight) {spread:.2f}"
        )


if __name__ == "__main__":
    main()
