"""VR-GCN: control-variate neighbour sampling (Chen, Zhu and Song, ICML 2018), in the gsample DSL.

VR-GCN trains a GCN with only ``D = 2`` sampled in-neighbours per node and layer,
and removes most of the variance that so few samples cause with a control
variate: each layer computes

    h_u = sum_{v in S(u)} (n(u) / |S(u)|) P_uv (h_v - hbar_v)  +  sum_{v in N(u)} P_uv hbar_v

where ``S(u)`` is the sampled neighbour set, ``n(u)`` the in-degree, ``P`` the
propagation matrix and ``hbar`` the stored (historical) activations. The first
sum runs on the sampled block; the second on *every* in-edge of the frontier,
but only reads stored activations, so the receptive field still grows by 2 per
node and layer. The sampler therefore returns, per layer, the sampled block
(values scaled by ``n(u) / |S(u)|``) and the full block ``A[:, frontier]`` (values
``P``), as DGL's VR-GCN example does (``examples/pytorch/vrgcn``: blocks and
history blocks). docs/architecture.md §7, entry 12: fanouts [2, 2].

Run it from the repository root (after ``pip install -e .``)::

    python examples/vrgcn.py                         # an R-MAT graph
    python examples/vrgcn.py --snap ../shared/data/web-NotreDame.txt.gz
"""

import functools
import time

from common import graph_parser, load_graph, seed_nodes

import gsample as gs


def normalize(A):
    """``P = A`` with every column divided by its sum (the mean aggregator; ``D^-1 A``).

    Any propagation matrix works: its values are what the sampler scales.
    """
    return A.div(A.sum(axis=0), axis=0)


def vrgcn(P, seeds, fanouts=(2, 2)):
    """Sample VR-GCN's blocks and history blocks, from the seeds outwards.

    Parameters
    ----------
    P : gs.Matrix, shape (N, N)
        The propagation matrix (e.g. :func:`normalize` of the graph); column ``u``
        holds the in-edges of node ``u``, its values ``P_vu``.
    seeds : LongTensor, shape (B,)
        Global ids of the mini-batch's target nodes.
    fanouts : sequence of int
        In-neighbours sampled per node at each layer (``D`` of the paper), without
        replacement, uniformly.

    Returns
    -------
    blocks : list of gs.Matrix
        ``blocks[l]`` has shape ``(N, C_l)``: its columns are layer ``l``'s frontier
        (``C_0 = B``) and column ``u`` holds ``min(fanouts[l], n(u))`` of ``u``'s
        in-edges with values ``P_vu * n(u) / min(fanouts[l], n(u))`` (so that their
        sum is an unbiased estimate of the full sum). ``blocks[l + 1]``'s columns are
        ``blocks[l].all_nodes()``.
    history : list of gs.Matrix
        ``history[l] = P[:, frontier_l]``, shape ``(N, C_l)``: every in-edge of the
        frontier with its value ``P_vu``, for the ``P hbar`` term.

    Notes
    -----
    The in-degrees ``n(u)`` are computed from the whole graph (``(P ** 0).sum(axis=0)``:
    a compiled sampler computes them once per graph). Uniform sampling, no tensor
    argument: ``super_batch=4`` in ``gs.DataLoader`` samples exactly what one
    mini-batch at a time samples, and the CUDA backend samples the same edges.
    """
    degree = (P**0).sum(axis=0)  # n(u): in-edges of every node
    blocks, history = [], []
    for k in fanouts:
        full = P[:, seeds]
        history.append(full)  # P hbar: every in-edge
        s = full.individual_sample(k)  # S(u): k in-neighbours, uniform
        n = degree[seeds]
        s = s.mul(n / n.clamp(max=k).clamp(min=1), axis=0)  # n(u) / |S(u)|
        blocks.append(s)
        seeds = s.all_nodes()  # frontier first, then new
    return blocks, history


def main(argv=None):
    p = graph_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[2, 2])
    args = p.parse_args(argv)
    P = normalize(load_graph(args))
    sampler = functools.partial(vrgcn, fanouts=args.fanouts)
    gs.manual_seed(0)
    seeds = seed_nodes(P.num_nodes, args.batch_size * args.batches)
    loader = gs.DataLoader(P, sampler, seeds, args.batch_size)
    start, sampled, full = time.perf_counter(), 0, 0
    for batch in loader:
        blocks, history = batch.out
        sampled += sum(b.num_edges for b in blocks)
        full += sum(h.num_edges for h in history)
    elapsed = time.perf_counter() - start
    print(
        f"vrgcn: {len(loader)} batches of {args.batch_size} seeds, {sampled} sampled edges, "
        f"{full} history edges, {(sampled + full) / elapsed:,.0f} edges/s"
    )


if __name__ == "__main__":
    main()
