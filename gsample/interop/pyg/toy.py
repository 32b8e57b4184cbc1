"""A PyG ``HeteroData`` that examples build in one line."""

from __future__ import annotations

import torch
from torch_geometric.data import HeteroData


def users_movies() -> HeteroData:
    """A heterogeneous PyG graph: 100 users rate 40 movies, 500 ratings, both directions.

    Rating ``i`` is user ``i % 100`` -> movie ``7 i % 40``, stored as ``("user", "rates",
    "movie")`` and reversed as ``("movie", "rated_by", "user")``.

    Returns
    -------
    HeteroData
        Node types ``"user"`` (100 nodes) and ``"movie"`` (40); two edge types of 500
        edges each (``edge_index``, shape (2, 500)); no features.

    Examples
    --------
    >>> import gsample.pyg
    >>> data = gsample.pyg.users_movies()
    >>> data["user"].num_nodes, data["movie"].num_nodes, data["user", "rates", "movie"].num_edges
    (100, 40, 500)
    """
    data = HeteroData()
    data["user"].num_nodes, data["movie"].num_nodes = 100, 40
    rates = torch.stack([torch.arange(500) % 100, torch.arange(500) * 7 % 40])
    data["user", "rates", "movie"].edge_index = rates
    data["movie", "rated_by", "user"].edge_index = rates.flip(0)
    return data


__all__ = ["users_movies"]
