"""``gs.compile``: capture, optimise and lower a sampler (:mod:`~gsample.compiler.compiled`),
and ``gs.explain``, which shows what that did (:mod:`~gsample.compiler.explain`)."""

from gsample.compiler.compiled import CompiledSampler, compile
from gsample.compiler.explain import explain

__all__ = ["CompiledSampler", "compile", "explain"]
