"""``gs.DataLoader`` and its mini-batches: the loader (:mod:`~gsample.loader.dataloader`),
``gs.Batch`` (:mod:`~gsample.loader.batch`), features and labels of a batch's nodes
(:mod:`~gsample.loader.features`) and the pipelined sample / gather / train overlap
(:mod:`~gsample.loader.pipeline`). Samplers run through the compiler's public API."""

from gsample.loader.batch import Batch
from gsample.loader.dataloader import DataLoader
from gsample.loader.features import FeatureStore

__all__ = ["Batch", "DataLoader", "FeatureStore"]
