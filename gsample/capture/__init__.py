"""Capture: a user's sampler function, recorded by torch.fx and turned into gsample IR
(:mod:`~gsample.capture.trace`), the ``gs.walk`` step operator (:mod:`~gsample.capture.walks`)
and the fusion of a walk's traced bodies into one op (:mod:`~gsample.capture.walk_fusion`)."""
