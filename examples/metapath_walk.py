"""Metapath walks on a heterogeneous graph (docs/catalogue.md #7), with a restart variant.

The graph is a generated academic network (:func:`academic_graph`): authors write papers,
papers appear in venues, each relation with its reverse. A metapath walk takes one step per
edge type of its metapath, so every position of a walk has a node type: the walks of
metapath2vec (Dong et al., 2017) along paper -> author -> paper (co-authorship) or paper ->
venue -> paper. In the restart variant a step that would land on a paper goes back to the
walk's root paper with probability ``restart_prob`` (PinSAGE-style importance walks).

Walks follow gsample's direction: a step goes from a node to an in-neighbour (a row of its
column), so the step paper -> author reads the relation ``("author", "writes", "paper")``.
``gs.HeteroGraph.metapath_walk(..., direction="out")`` takes metapaths written forward
instead, as PyG's ``MetaPath2Vec`` and DGL's ``random_walk`` do.

Run it from the repository root (after ``pip install -e .``)::

    python examples/metapath_walk.py
    python examples/metapath_walk.py --restart 0.3 --traversals 10 --eager
"""

import argparse
import functools
import time

import torch

import gsample as gs
from gsample.hetero import metapath_walk

WRITES = ("author", "writes", "paper")
WRITTEN_BY = ("paper", "written_by", "author")
PUBLISHED_IN = ("paper", "published_in", "venue")
PUBLISHES = ("venue", "publishes", "paper")


def academic_graph(
    num_authors=20_000, num_papers=50_000, num_venues=200, seed=0, device="cpu"
) -> gs.HeteroGraph:
    """A reproducible authors-papers-venues graph with skewed productivity.

    Every paper has 1 to 4 distinct authors (up to 4 draws, repeats merged) and one venue. Authors
    and venues are drawn with Zipf-like weights ``1 / (rank + 10)`` (a few prolific authors, a few
    large venues), so degrees are skewed as in real bibliographic graphs.

    Parameters
    ----------
    num_authors, num_papers, num_venues : int
        Node counts per type.
    seed : int
        The graph is a function of the arguments and ``seed``.
    device : str or torch.device

    Returns
    -------
    gs.HeteroGraph
        Node types ``author``, ``paper``, ``venue``; edge types ``writes`` (author ->
        paper), ``written_by`` (its reverse), ``published_in`` (paper -> venue) and
        ``publishes`` (its reverse). Edge ``i`` of a reverse relation is edge ``i`` of
        its forward one, reversed.

    Examples
    --------
    >>> H = academic_graph(200, 500, 10)
    >>> H.node_types
    ['author', 'paper', 'venue']
    """
    g = torch.Generator().manual_seed(seed)
    w_author = 1.0 / (torch.arange(num_authors, dtype=torch.float64) + 10)
    w_author = w_author[torch.randperm(num_authors, generator=g)]  # hubs spread out
    per_paper = torch.randint(1, 5, (num_papers,), generator=g)
    picks = torch.multinomial(w_author, num_papers * 4, replacement=True, generator=g)
    picks = picks.reshape(num_papers, 4)
    keep = torch.arange(4).expand(num_papers, 4) < per_paper[:, None]
    papers = torch.arange(num_papers)[:, None].expand(num_papers, 4)
    pairs = torch.unique(torch.stack([picks[keep], papers[keep]]), dim=1)  # distinct authors
    w_venue = 1.0 / (torch.arange(num_venues, dtype=torch.float64) + 10)
    venue = torch.multinomial(w_venue, num_papers, replacement=True, generator=g)
    pv = torch.stack([torch.arange(num_papers), venue])
    H = gs.HeteroGraph(
        {WRITES: pairs, WRITTEN_BY: pairs.flip(0), PUBLISHED_IN: pv, PUBLISHES: pv.flip(0)},
        num_nodes={"author": num_authors, "paper": num_papers, "venue": num_venues},
    )
    return H.to(device)


def paper_author_paper(writes, seeds, written_by, traversals=1, restart_prob=0.0):
    """Co-authorship walks: paper -> author -> paper, ``traversals`` times.

    A sampler in gsample's DSL: the relations are arguments of their own, so
    ``gs.compile(paper_author_paper)`` compiles it (one ``random_walk`` per step).

    Parameters
    ----------
    writes : gs.Matrix, shape (N, N)
        ``H["author", "writes", "paper"]``: a paper's column holds its authors.
    seeds : LongTensor, shape (B,)
        Paper ids.
    written_by : gs.Matrix, shape (N, N)
        ``H["paper", "written_by", "author"]``: an author's column holds their papers
        (after ``seeds``, so that ``gs.DataLoader(writes, partial(paper_author_paper,
        written_by=...), ...)`` can call ``sampler(A, seeds)``).
    traversals : int
        Times the metapath is followed; walks have ``2 * traversals`` steps.
    restart_prob : float
        Probability that an author -> paper step goes back to the root paper instead.

    Returns
    -------
    LongTensor, shape (B, 2 * traversals + 1)
        Papers in even columns, authors in odd ones; ``-1`` after a stop (a paper
        without authors).

    Examples
    --------
    >>> walks = gs.compile(paper_author_paper)(H[WRITES], papers, H[WRITTEN_BY], 3)
    >>> walks[:, 0::2]            # papers
    """
    return metapath_walk(
        [writes, written_by] * traversals, seeds, restart_prob=[0.0, restart_prob] * traversals
    )


def visit_counts(walks, num_nodes, columns):
    """How often each node appears in ``walks[:, columns]`` (past column 0), shape (n,)."""
    nodes = walks[:, columns]
    nodes = nodes[nodes >= 0]
    return torch.bincount(nodes, minlength=num_nodes)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--authors", type=int, default=20_000)
    p.add_argument("--papers", type=int, default=50_000)
    p.add_argument("--venues", type=int, default=200)
    p.add_argument("--traversals", type=int, default=5, help="paper -> author -> paper rounds")
    p.add_argument("--restart", type=float, default=0.3, help="restart probability")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=10)
    p.add_argument("--eager", action="store_true", help="run the sampler uncompiled")
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)

    H = academic_graph(args.authors, args.papers, args.venues, device=args.device)
    print(H)
    fn = paper_author_paper if args.eager else gs.compile(paper_author_paper)
    seeds = torch.randperm(args.papers, generator=torch.Generator().manual_seed(0))
    seeds = seeds[: args.batch_size * args.batches].to(args.device)
    for restart in (0.0, args.restart):
        # the loader calls sampler(A, seeds): the other relation goes in by keyword (the
        # relations share one node count, so super_batch=N would work too)
        sampler = functools.partial(
            fn, written_by=H[WRITTEN_BY], traversals=args.traversals, restart_prob=restart
        )
        loader = gs.DataLoader(H[WRITES], sampler, seeds, args.batch_size, seed=0)
        start, steps, stopped = time.perf_counter(), 0, 0
        for batch in loader:
            steps += int((batch.out[:, 1:] >= 0).sum())
            stopped += int((batch.out[:, -1] < 0).sum())
        if H.device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - start
        print(
            f"paper-author-paper x{args.traversals}, restart {restart}: "
            f"{seeds.numel()} walks, {steps} steps, {stopped} stopped, "
            f"{steps / elapsed:,.0f} steps/s"
        )

    # one walk of a mixed metapath through the graph's own API: paper -> author -> paper ->
    # venue -> paper, with restarts to the root on the steps that reach a paper
    gs.manual_seed(0)
    mp = [WRITES, WRITTEN_BY, PUBLISHES, PUBLISHED_IN]
    walks = H.metapath_walk(seeds[:8], mp, restart_prob=args.restart)
    print("types:", " -> ".join(H.path_types(mp)))
    print(walks)
    # written forward (PyG / DGL's convention) along the reverse relations: the reverse of
    # written_by is writes, edge for edge and in the same order, so the walks are identical
    gs.manual_seed(0)
    fwd = H.metapath_walk(
        seeds[:8],
        [WRITTEN_BY, WRITES, PUBLISHED_IN, PUBLISHES],
        restart_prob=args.restart,
        direction="out",
    )
    print(
        "direction='out' on the forward metapath gives the same walks:",
        bool(torch.equal(fwd, walks)),
    )

    # importance by restart walks (PinSAGE-style): the papers most visited from one seed
    root = seeds[:1].repeat(2000)
    gs.manual_seed(1)
    walks = fn(H[WRITES], root, H[WRITTEN_BY], traversals=3, restart_prob=0.5)
    counts = visit_counts(walks, args.papers, slice(2, None, 2))
    counts[seeds[0]] = 0
    top = torch.topk(counts, 5)
    print(
        f"paper {int(seeds[0])}: most visited papers {top.indices.tolist()} "
        f"({top.values.tolist()} visits)"
    )


if __name__ == "__main__":
    main()
