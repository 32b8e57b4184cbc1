"""Graphs to sample from: generators (R-MAT, planted partitions) and readers of files
(SNAP edge lists, Cora)."""

from gsample.datasets.synthetic import cora, default_data_path, planted_partition, read_snap, rmat

__all__ = ["cora", "default_data_path", "planted_partition", "read_snap", "rmat"]
