"""Compiler passes, each ``Graph -> Graph`` in a file of its own, run in ``PIPELINE`` order.

The pipeline is built by the compiler issue (``@gsample.compile``): DCE, effect-aware CSE,
pre-processing, extract-select fusion and edge-map fusion. Passes read op properties from
``gsample.ir.OP_TABLE``; none matches on op names.
"""

#: the passes, in order; each entry is (pass function, why it runs at that point)
PIPELINE: list = []
