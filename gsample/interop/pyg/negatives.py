"""Negatives for link prediction: PyG's ``edge_sample`` with gsample's negatives, the link
loaders' glue (:func:`edge_sample`, :func:`hetero_edge_sample`, :func:`sampler_for`).

The negatives are drawn on the graph's device under gsample's stream by
:class:`NegativeSampler` (:mod:`gsample.interop.pyg.negative_draws`: the laws, uniform and
weighted, strict and temporal); their arguments, PyG's ``NegativeSampling`` with ``strict``
among them, are :mod:`gsample.interop.pyg.negative_arguments`'. The names of both that the
loaders and ``gsample.pyg`` use are re-exported here (their import path).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from gsample.interop.pyg.negative_arguments import NegativeSampling, check_amount, check_mode
from gsample.interop.pyg.negative_draws import Negatives, NegativeSampler, negative_sample

#: the op ordinal of a link loader's negatives in its mini-batch's stream: beyond any
#: sampler program's random ops, so the negatives never share a key with a neighbour draw
NEGATIVE_ORDINAL = 1 << 32


# ----------------------------------------------------------------------------- PyG
def sampler_for(
    neg_sampling, graph, num_nodes: int | tuple[int, int] | None = None, node_time=None
):
    """The :class:`NegativeSampler` of a PyG ``NegativeSampling`` (ours or PyG's) on
    ``graph``: its weights (named ``neg_sampling.src_weight`` / ``.dst_weight`` in errors)
    and ``strict`` (False for PyG's own class)."""
    try:
        return NegativeSampler(
            graph,
            num_nodes,
            src_weight=neg_sampling.src_weight,
            dst_weight=neg_sampling.dst_weight,
            strict=bool(getattr(neg_sampling, "strict", False)),
            node_time=node_time,
        )
    except (TypeError, ValueError) as e:
        text = str(e)
        for name in ("src_weight", "dst_weight", "strict"):
            if text.startswith(name + ":"):
                raise type(e)(f"neg_sampling.{text}") from None
        raise


# ----------------------------------------------------------------------------- PyG's edge_sample
def _with_negatives(src, dst, label, time, negatives, neg_sampling, key, disjoint, checked=False):
    """PyG's ``edge_sample`` step shared by the homogeneous and typed layouts: the positives
    with their negatives appended (binary: pairs and 0 labels; triplet: destinations), and
    the times of the sources and destinations; returns ``(src, dst, label, src_time,
    dst_time, mode, amount)``. ``checked``: the positives' ids are known to be in range."""
    out_device = src.device
    num_pos = src.numel()
    src_time = dst_time = time
    if time is not None and not disjoint:  # PyG's rule: temporal link sampling is disjoint
        raise ValueError("index: edge_label_time needs disjoint sampling (PyG's edge_sample)")
    mode = None if neg_sampling is None else check_mode(neg_sampling.mode)
    amount = 0
    if mode is not None:
        if negatives is None:
            raise ValueError("negatives: a NegativeSampler is needed with neg_sampling")
        amount = check_amount(neg_sampling.amount, mode)
        neg = negatives(src, dst, mode, amount, time=time, key=key, checked=checked)
        neg_src, neg_dst, neg_time = neg.flat()
        if neg_src.device != out_device:  # one copy (a host sync on a GPU), not one each
            moved = torch.stack([neg_src, neg_dst]).to(out_device)
            neg_src, neg_dst = moved[0], moved[1]
            neg_time = None if neg_time is None else neg_time.to(out_device)
        if mode == "binary":
            src = torch.cat([src, neg_src])
            dst = torch.cat([dst, neg_dst])
            if label is None:
                label = torch.ones(num_pos, device=out_device)
            zeros = label.new_zeros((neg_dst.numel(),) + label.shape[1:])
            label = torch.cat([label, zeros])
            if time is not None:
                src_time = dst_time = torch.cat([time, neg_time])
        else:
            if label is not None:
                raise ValueError("index: edge_label must be None with triplet negatives")
            dst = torch.cat([dst, neg_dst])
            if time is not None:
                dst_time = torch.cat([time, neg_time])
    return src, dst, label, src_time, dst_time, mode, amount


@dataclass(frozen=True)
class EdgeSeeds:
    """A link mini-batch's seeds, laid out as PyG's ``edge_sample`` lays them out, with what
    :func:`edge_output` needs to give the sample PyG's ``metadata`` (:func:`edge_seeds`).

    Attributes
    ----------
    seed : LongTensor, shape (S,)
        The nodes to sample from: binary ``[src, src_neg, dst, dst_neg]``, triplet ``[src,
        dst, dst_neg]``; unique (sorted) unless ``disjoint``.
    seed_time : Tensor, shape (S,), optional
        Each seed's time (temporal link sampling).
    inverse : LongTensor
        Each endpoint's position in ``seed`` (``[src..., dst...]`` order).
    input_id, label, src_time : Tensor or None
        The positives' ids, labels (negatives' zeros appended in binary mode) and times.
    num_pos : int
        Positives in the mini-batch.
    mode : str or None
        ``"binary"``, ``"triplet"`` or None (no negatives).
    amount : int or float
        Negatives per positive.
    disjoint : bool
        PyG's disjoint layout.
    """

    seed: torch.Tensor
    seed_time: torch.Tensor | None
    inverse: torch.Tensor
    input_id: torch.Tensor | None
    label: torch.Tensor | None
    src_time: torch.Tensor | None
    num_pos: int
    mode: str | None
    amount: int | float
    disjoint: bool


def edge_seeds(
    index,
    negatives: NegativeSampler | None,
    neg_sampling=None,
    key: int | None = None,
    disjoint: bool = False,
    checked: bool = False,
) -> EdgeSeeds:
    """The first half of :func:`edge_sample`: the mini-batch's negatives drawn (with
    ``key``) and its seeds laid out, before anything is sampled from them. A loader that
    samples several mini-batches at once draws each one's negatives with its own key here,
    then samples all their seeds together and finishes each with :func:`edge_output`.

    Parameters
    ----------
    index, negatives, neg_sampling, key, disjoint
        As :func:`edge_sample`'s.
    checked : bool
        ``index``'s node ids were range-checked already (a loader checks its supervision
        edges once, when it is made): the negatives' draw does not check them again.

    Returns
    -------
    EdgeSeeds

    Examples
    --------
    >>> import torch, gsample as gs
    >>> from torch_geometric.sampler import EdgeSamplerInput
    >>> from gsample.interop.pyg.data import pyg_sample, to_sampler_output
    >>> from gsample.interop.pyg.negative_arguments import NegativeSampling
    >>> from gsample.interop.pyg.neighbor_loader import neighbor_sample
    >>> A = gs.datasets.rmat(100, 500, seed=0)
    >>> edge_index, N = torch.stack(A.edges()[:2]), A.num_nodes
    >>> index = EdgeSamplerInput(None, edge_index[0, :8], edge_index[1, :8])   # 8 positives
    >>> plan = edge_seeds(index, NegativeSampler(edge_index, N), NegativeSampling("binary"),
    ...                   key=0)
    >>> def sample_fn(seed, seed_time):               # one hop of 5 neighbours
    ...     return to_sampler_output(pyg_sample(neighbor_sample(A, seed, (5,)), seed))
    >>> out = edge_output(plan, sample_fn(plan.seed, plan.seed_time))
    >>> out.metadata[1].shape                         # edge_label_index: (2, 2 * B)
    torch.Size([2, 16])
    """
    input_id, src, dst = index.input_id, index.row, index.col
    label, time = index.label, index.time
    num_pos = src.numel()
    src, dst, label, src_time, dst_time, mode, amount = _with_negatives(
        src, dst, label, time, negatives, neg_sampling, key, disjoint, checked
    )
    seed = torch.cat([src, dst])
    if disjoint:
        inverse = torch.arange(seed.numel(), device=seed.device)
    else:
        seed, inverse = seed.unique(return_inverse=True)
    seed_time = None if time is None else torch.cat([src_time, dst_time])
    return EdgeSeeds(
        seed, seed_time, inverse, input_id, label, src_time, num_pos, mode, amount, disjoint
    )


def edge_output(plan: EdgeSeeds, out):
    """The second half of :func:`edge_sample`: ``out``, the ``SamplerOutput`` of
    ``plan.seed``, given PyG's ``metadata`` (and, disjoint, ``batch`` modulo the
    positives); returns ``out``."""
    num_pos, inverse = plan.num_pos, plan.inverse
    if plan.disjoint:
        out.batch = out.batch % num_pos
    if plan.mode != "triplet":
        out.metadata = (plan.input_id, inverse.view(2, -1), plan.label, plan.src_time)
        return out
    src_index = inverse[:num_pos]
    dst_pos_index = inverse[num_pos : 2 * num_pos]
    dst_neg_index = inverse[2 * num_pos :].view(plan.amount, num_pos).t().contiguous()
    out.metadata = (
        plan.input_id,
        src_index,
        dst_pos_index,
        dst_neg_index.squeeze(-1),
        plan.src_time,
    )
    return out


def edge_sample(
    index,
    sample_fn: Callable,
    negatives: NegativeSampler | None,
    neg_sampling=None,
    key: int | None = None,
    disjoint: bool = False,
):
    """PyG's ``edge_sample`` (homogeneous) with the negatives drawn by ``negatives``.

    The seeds are the positives' endpoints and the negatives', laid out as PyG's: binary,
    ``[src, src_neg, dst, dst_neg]``; triplet, ``[src, dst, dst_neg]`` (negative ``j`` of
    positive ``i`` at ``j * B + i``); unique unless ``disjoint``. ``sample_fn(seed,
    seed_time)`` samples them and returns a ``SamplerOutput``, whose ``metadata`` becomes
    PyG's: binary (or no negatives) ``(input_id, edge_label_index, edge_label,
    edge_label_time)``, triplet ``(input_id, src_index, dst_pos_index, dst_neg_index,
    src_time)``, ``dst_neg_index`` of shape ``(B,)`` for ``amount == 1`` and ``(B, amount)``
    otherwise, and ``edge_label``: the given labels (ones when None, float) then zeros.
    It is :func:`edge_seeds`, ``sample_fn``, then :func:`edge_output`.

    Parameters
    ----------
    index : torch_geometric.sampler.EdgeSamplerInput
        The mini-batch's positives (``row``, ``col``, ``label``, ``time``, ``input_id``).
    sample_fn : callable
        ``sample_fn(seed, seed_time) -> SamplerOutput`` (seeds on ``index``'s device).
    negatives : NegativeSampler or None
        Draws the negatives (on its graph's device); None only without ``neg_sampling``.
    neg_sampling : NegativeSampling, optional
        PyG's (or :class:`NegativeSampling`): ``mode`` and ``amount``.
    key : int, optional
        The negatives' op key (default the next of gsample's stream).
    disjoint : bool
        PyG's disjoint layout: seeds not deduplicated, ``out.batch`` taken modulo ``B``.

    Returns
    -------
    SamplerOutput
        ``sample_fn``'s, with PyG's ``metadata``.
    """
    plan = edge_seeds(index, negatives, neg_sampling, key, disjoint)
    return edge_output(plan, sample_fn(plan.seed, plan.seed_time))


def hetero_edge_sample(
    index,
    sample_fn: Callable,
    negatives: NegativeSampler | None,
    neg_sampling=None,
    key: int | None = None,
    disjoint: bool = False,
):
    """PyG's ``edge_sample`` for a heterogeneous edge type, with the negatives drawn by
    ``negatives`` (the typed sampler of ``index.input_type``: sources of its source type,
    destinations of its destination type).

    The layout is PyG's. Binary: the seeds of the source type are ``[src, src_neg]`` and of
    the destination type ``[dst, dst_neg]``; triplet: ``src`` and ``[dst, dst_neg]`` (negative
    ``j`` of positive ``i`` at ``j * B + i``). When both types are one, its seeds are the two
    lists joined (sources first). Unique per type unless ``disjoint``; disjoint seeds are
    numbered consecutively in that order (the source type's first) and ``out.batch`` of every
    type is taken modulo ``B``. ``metadata``: binary (or no negatives) ``(input_id,
    edge_label_index, edge_label, edge_label_time)``, triplet ``(input_id, src_index,
    dst_pos_index, dst_neg_index, src_time)``, as :func:`edge_sample`.

    Parameters
    ----------
    index : torch_geometric.sampler.EdgeSamplerInput
        The mini-batch's positives, with ``input_type`` (the edge type).
    sample_fn : callable
        ``sample_fn(seed_dict, seed_time_dict) -> HeteroSamplerOutput``.
    negatives : NegativeSampler or None
        Draws the negatives; None only without ``neg_sampling``.
    neg_sampling : NegativeSampling, optional
    key : int, optional
        The negatives' op key (default the next of gsample's stream).
    disjoint : bool
        One tree per seed (PyG's disjoint layout).

    Returns
    -------
    HeteroSamplerOutput
        ``sample_fn``'s, with PyG's ``metadata``.

    Examples
    --------
    >>> import torch
    >>> from torch_geometric.data import HeteroData
    >>> from torch_geometric.sampler import EdgeSamplerInput
    >>> from gsample.base.random import batch_scope
    >>> from gsample.interop.pyg.hetero_loader import HeteroBatches
    >>> from gsample.interop.pyg.negative_arguments import NegativeSampling
    >>> data = HeteroData()
    >>> data["user"].num_nodes, data["movie"].num_nodes = 20, 30
    >>> ei = torch.stack([torch.arange(100) % 20, torch.arange(100) * 7 % 30])
    >>> data["user", "rates", "movie"].edge_index = ei
    >>> data["movie", "rated_by", "user"].edge_index = ei.flip(0)
    >>> sample_fn = HeteroBatches(data, [5]).sample   # one hop of 5 neighbours per relation
    >>> index = EdgeSamplerInput(None, ei[0, :8], ei[1, :8], input_type=("user", "rates", "movie"))
    >>> with batch_scope(0, 0):                    # epoch seed 0, mini-batch 0
    ...     out = hetero_edge_sample(index, sample_fn, NegativeSampler(ei, (20, 30)),
    ...                              NegativeSampling("binary"), key=0)
    >>> out.metadata[1].shape                      # edge_label_index: (2, 2 * B)
    torch.Size([2, 16])
    """
    input_id, src, dst = index.input_id, index.row, index.col
    label, time = index.label, index.time
    src_type, _, dst_type = index.input_type
    out_device = src.device
    num_pos = src.numel()
    src, dst, label, src_time, dst_time, mode, amount = _with_negatives(
        src, dst, label, time, negatives, neg_sampling, key, disjoint
    )
    num_src, num_dst = src.numel(), dst.numel()
    seed_time = None
    if src_type != dst_type:
        inverse_src = torch.arange(num_src, device=out_device)
        inverse_dst = torch.arange(num_dst, device=out_device)
        if not disjoint:
            src, inverse_src = src.unique(return_inverse=True)
            dst, inverse_dst = dst.unique(return_inverse=True)
        seed = {src_type: src, dst_type: dst}
        if time is not None:
            seed_time = {src_type: src_time, dst_type: dst_time}
    else:
        joined = torch.cat([src, dst])
        inverse = torch.arange(joined.numel(), device=out_device)
        if not disjoint:
            joined, inverse = joined.unique(return_inverse=True)
        seed = {src_type: joined}
        if time is not None:
            seed_time = {src_type: torch.cat([src_time, dst_time])}
        inverse_src, inverse_dst = inverse[:num_src], inverse[num_src:]
    out = sample_fn(seed, seed_time)
    if disjoint:
        out.batch = {t: b % num_pos for t, b in out.batch.items()}
    if mode != "triplet":
        edge_label_index = torch.stack([inverse_src, inverse_dst])
        out.metadata = (input_id, edge_label_index, label, src_time)
        return out
    src_index = inverse_src[:num_pos]
    dst_pos_index = inverse_dst[:num_pos]
    dst_neg_index = inverse_dst[num_pos:].view(amount, num_pos).t().contiguous()
    out.metadata = (input_id, src_index, dst_pos_index, dst_neg_index.squeeze(-1), src_time)
    return out


__all__ = [
    "NEGATIVE_ORDINAL",
    "EdgeSeeds",
    "NegativeSampler",
    "NegativeSampling",
    "Negatives",
    "check_amount",
    "check_mode",
    "edge_output",
    "edge_sample",
    "edge_seeds",
    "hetero_edge_sample",
    "negative_sample",
    "sampler_for",
]
