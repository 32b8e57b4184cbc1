"""Graphs to sample from: generators (R-MAT, planted partitions, the anchor-shaped
papers-like and products-like) and readers of files (SNAP edge lists, Cora, any CSC / COO
on disk as a memory map)."""

from gsample.datasets.anchors import (
    ANCHOR_GRAPHS,
    AnchorGraph,
    anchor_graph,
    anchor_seeds,
    uniform_seeds,
)
from gsample.datasets.coo import load_coo
from gsample.datasets.ondisk import load_csc, save_csc
from gsample.datasets.profile import degree_profile
from gsample.datasets.synthetic import cora, default_data_path, planted_partition, read_snap, rmat
from gsample.datasets.undirected import undirected_rmat

__all__ = [
    "ANCHOR_GRAPHS",
    "AnchorGraph",
    "anchor_graph",
    "anchor_seeds",
    "cora",
    "default_data_path",
    "degree_profile",
    "load_coo",
    "load_csc",
    "planted_partition",
    "read_snap",
    "rmat",
    "save_csc",
    "undirected_rmat",
    "uniform_seeds",
]
