"""MVS-GNN: minimal-variance node sampling (Cong et al., KDD 2020), written in the gsample DSL.

"Minimal Variance Sampling with Provable Guarantees for Fast Training of Graph
Neural Networks" splits a GNN's gradient variance in two: the embedding
approximation, which MVS-GNN removes with historical embeddings (so each
mini-batch node needs only its one-hop neighbourhood: every in-edge, the
neighbours' stored activations standing in for deeper layers), and the
stochastic-gradient variance, which it minimises by drawing the mini-batch's
nodes with probability proportional to their (approximate, periodically
refreshed) per-node gradient norm ``g_i``. docs/architecture.md §7, entry 17: 1 hop,
probabilities from a per-node gradient-norm tensor, mini-batches of 64.

Here the loader's mini-batch is a pool of candidate nodes (a uniform share of the
training nodes, ``--batch-size`` of them, 512 by default); the sampler keeps about
``batch_size = 64`` of them, more likely the larger their ``g``, and returns the one-hop
block of the chosen nodes. Two laws (``--law``):

* ``without-replacement`` (:func:`mvs`, the default): 64 sequential draws, each
  proportional to ``g`` among the candidates not drawn yet (``collective_sample``'s law,
  docs/architecture.md §3). The importance weights ``1 / (b p_i)`` built from the returned
  ``p_i = g_i / sum g`` are unbiased for draws *with* replacement, only approximately
  for these (``collective_sample(..., replace=True)`` would merge repeated draws and
  lose the repeat counts).
* ``independent`` (:func:`mvs_independent`): minimal variance sampling proper (Ibragimov
  and Gusev, 2019). Each candidate is kept independently with probability
  ``p_i = min(1, g_i / mu)``, the threshold ``mu`` solving ``sum_i min(1, g_i / mu) =
  batch_size`` (all of them when fewer have ``g > 0``); its weight ``1 / p_i`` makes
  the weighted sum unbiased (Horvitz-Thompson), and the number of nodes kept is random
  (``batch_size`` on average). It is written with one keyed uniform per candidate,
  ``A.random_uniform(candidates)``, and a dense comparison ``u < p``: no select op.

The difference from the paper in both: the pool is the loader's mini-batch, not every
training node.

Run it from the repository root (after ``pip install -e .``)::

    python examples/mvs.py                            # an R-MAT graph
    python examples/mvs.py --law independent          # minimal variance sampling proper
    python examples/mvs.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools

import torch
from common import graph_parser, load_graph, run_batches


def mvs(A, candidates, grad_norm, batch_size=64):
    """Draw ``batch_size`` of ``candidates`` by gradient norm; return their one-hop block.

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (its values are the aggregation weights).
    candidates : LongTensor, shape (C,)
        Global ids of the pool to draw from (unique).
    grad_norm : Tensor, shape (N,)
        Per-node gradient norms ``g`` (finite, non-negative; positive on at least
        one candidate with in-edges).
    batch_size : int
        Nodes drawn, without replacement (all candidates with in-edges and
        positive ``g`` when there are fewer).

    Returns
    -------
    block : gs.Matrix, shape (N, b)
        ``A[:, chosen]``: every in-edge of the ``b = min(batch_size, ...)`` chosen
        nodes, with its value. Its columns are the chosen nodes, in the candidates' order.
    chosen : LongTensor, shape (b,)
        The chosen nodes (the block's columns).
    prob : Tensor, shape (b,)
        Each chosen node's single-draw probability ``p_i = g_i / sum_candidates g``:
        weight node ``i``'s loss by ``1 / (b p_i)`` for the importance-sampling
        estimate of the pool's mean gradient (Hansen-Hurwitz; exact for draws with
        replacement, an approximation for these without).

    Notes
    -----
    Candidates without in-edges are never drawn (they have no one-hop block).
    ``grad_norm`` is state that training refreshes: with ``super_batch``,
    ``gs.DataLoader`` needs ``fixed_state=True`` (the norms do not change while the
    loader runs, as between MVS-GNN's snapshots), and without it samples in step
    with the training loop.
    """
    pool = A[:, candidates].T  # rows: the candidates; their in-edges
    g = grad_norm[pool.row_ids]  # one probability per candidate
    chosen = pool.collective_sample(batch_size, node_probs=g).row_ids
    block = A[:, chosen]  # 1 hop: every in-edge of the chosen
    return block, chosen, grad_norm[chosen] / g.sum()


def mvs_independent(A, candidates, grad_norm, batch_size=64):
    """Keep each of ``candidates`` independently, with probability ``min(1, g / mu)``;
    return the one-hop block of those kept (minimal variance sampling).

    Parameters
    ----------
    A : gs.Matrix, shape (N, N)
        The graph (its values are the aggregation weights); the whole graph.
    candidates : LongTensor, shape (C,)
        Global ids of the pool to draw from (unique).
    grad_norm : Tensor, shape (N,)
        Per-node gradient norms ``g`` (finite, non-negative; positive on at least
        one candidate with in-edges).
    batch_size : int
        The expected number of nodes kept, ``K = min(batch_size, P)`` with ``P`` the
        candidates with in-edges and positive ``g``: ``sum_i p_i = K``.

    Returns
    -------
    block : gs.Matrix, shape (N, b)
        ``A[:, chosen]``: every in-edge of the ``b`` nodes kept (``b`` random, ``K`` on
        average), with its value. Its columns are the chosen nodes, in the candidates'
        order.
    chosen : LongTensor, shape (b,)
        The chosen nodes (the block's columns).
    prob : DoubleTensor, shape (b,)
        Each chosen node's inclusion probability ``p_i = min(1, g_i / mu)``, in
        ``(0, 1]``: weight node ``i``'s loss by ``1 / p_i`` for an unbiased estimate of
        the summed gradient of the candidates with ``p > 0`` (Horvitz-Thompson).

    Notes
    -----
    The law (Ibragimov and Gusev, "Minimal Variance Sampling in Stochastic Gradient
    Boosting", NeurIPS 2019): candidate ``i`` is kept when ``u_i < p_i``, with ``u_i`` one
    keyed uniform per candidate (``A.random_uniform``, docs/architecture.md §3: the same uniforms
    eager and compiled, super-batched or not, on the torch and the CUDA backend), so the
    candidates are kept independently and the number kept is random.

    The threshold ``mu`` is exact, computed in float64 with tensor ops only (no Python
    loop, no ``.item()``; it traces as dense code and runs per mini-batch when
    super-batched). With ``s`` the ``g`` sorted in decreasing order and ``T_r =
    s_r + s_{r+1} + ...``, capping the ``r`` largest at probability 1 leaves
    ``mu_r = T_r / (K - r)``; ``r`` is the smallest ``r < K`` with ``s_r (K - r) <= T_r``
    (then ``s_{r-1} > mu_r >= s_r``: exactly the ``r`` largest are capped). The test
    ``s_r (K - r) - T_r`` is non-decreasing in ``r`` and holds at ``r = K - 1``, so ``r``
    is the number of ``r < K`` where it fails. Then ``sum_i p_i = r + T_r / mu_r = K``.
    When ``K = P`` every positive candidate is kept (``p = 1``).

    Candidates without in-edges or with ``g = 0`` get ``p = 0``: never kept (they have no
    one-hop block, or nothing to learn from). Gradient norms all 0 on the candidates with
    in-edges make ``mu`` undefined (``p`` NaN, nothing kept), and a draw that keeps no
    node (probability ``prod_i (1 - p_i) <= exp(-K)``) raises ``ValueError`` (empty
    frontier): gsample's slices refuse one.

    ``grad_norm`` is state that training refreshes: the uniforms do not read it, but the
    comparison after them does and decides the block sliced, so
    ``gs.DataLoader(..., super_batch=N)`` asks for ``fixed_state=True`` (the norms stay
    fixed while the loader runs, as between MVS-GNN's snapshots) and refuses otherwise.
    """
    pool = A[:, candidates].T  # rows: the candidates; their in-edges
    ids = pool.row_ids  # (C,): the candidates, in order
    has_edges = (pool**0).sum(axis=1) > 0  # (C,): in-degree > 0
    g = torch.where(has_edges, grad_norm[ids].to(torch.float64), 0.0)
    p = _keep_probabilities(g, batch_size)  # (C,): min(1, g / mu)
    keep = A.random_uniform(ids) < p  # (C,): independent coins
    chosen = ids[keep]
    block = A[:, chosen]  # 1 hop: every in-edge of the chosen
    return block, chosen, p[keep]


def _keep_probabilities(g, batch_size):
    """``min(1, g / mu)`` with ``sum min(1, g / mu) = min(batch_size, #(g > 0))``, shape of
    ``g`` (float64, non-negative, not all 0); :func:`mvs_independent`'s Notes derive it."""
    s = torch.sort(g, descending=True).values  # (C,): s_0 >= s_1 >= ...
    tail = torch.flip(torch.cumsum(torch.flip(s, [0]), 0), [0])  # T_r = s_r + s_{r+1} + ...
    K = torch.clamp((g > 0).sum(), max=batch_size)  # expected size
    left = K - (torch.cumsum(torch.ones_like(s, dtype=torch.long), 0) - 1)  # K - r
    capped = torch.logical_and(left > 0, s * left > tail).sum()  # r: the largest, p = 1
    mu = tail[capped] / (K - capped)
    return torch.clamp(g / mu, max=1.0)


def main(argv=None):
    p = graph_parser(__doc__, batch_size=512)
    p.add_argument("--mvs-batch", type=int, default=64, help="nodes drawn per pool")
    p.add_argument(
        "--law",
        choices=["without-replacement", "independent"],
        default="without-replacement",
        help="without-replacement: --mvs-batch sequential draws in proportion "
        "to g (mvs); independent: each candidate kept with probability "
        "min(1, g / mu), --mvs-batch on average (mvs_independent)",
    )
    args = p.parse_args(argv)
    A = load_graph(args)
    # stand-in gradient norms: a refreshed snapshot would come from the model
    grad_norm = torch.rand(A.num_nodes, generator=torch.Generator().manual_seed(0)) ** 2
    law = mvs if args.law == "without-replacement" else mvs_independent
    sampler = functools.partial(law, grad_norm=grad_norm, batch_size=args.mvs_batch)
    run_batches("mvs", A, sampler, args)


if __name__ == "__main__":
    main()
