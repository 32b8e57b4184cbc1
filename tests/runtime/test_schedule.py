"""runtime.schedule.sink: pure sparse ops' steps (and their checks) wait until the next
read-back or their first reader; nothing else moves; LADIES's normalisation of a layer
runs after the next layer's device part is queued."""

import functools

import torch
from helpers import example

import gsample as gs
from gsample.ir import Op
from gsample.runtime import Options, lower
from gsample.runtime.program import Instruction
from gsample.runtime.schedule import movable, sink


class _Node:
    def __init__(self, op):
        self.op = op

    @property
    def info(self):
        from gsample.ir import info

        return info(self.op)


def _step(name, op, args, out, syncs=False, graph_safe=False, check=False):
    from gsample.runtime.steps import Check

    label = f"check {name}" if check else name
    fn = Check(None, (), {}, (), ()) if check else (lambda *a: None)
    return Instruction(
        fn, tuple(args), out, label, node=_Node(op), syncs=syncs, graph_safe=graph_safe
    )


def test_sink_moves_pure_steps_to_the_next_read_back_or_reader():
    a = _step("map", Op.EDGE_BROADCAST, [0], 1)  # movable
    chk = _step("map2", Op.EDGE_BROADCAST, [1], 2, check=True)  # its check: moves with it
    b = _step("map2", Op.EDGE_BROADCAST, [2], 3)
    nodes = _step("all_nodes", Op.ALL_NODES, [0], 4, graph_safe=True)  # stays
    dev = _step("device part", Op.SLICE_COLLECTIVE_SAMPLE, [4], 5, graph_safe=True)
    use = _step("reader", Op.ROW_IDS, [3], 6, syncs=True)  # movable, reads b
    read = _step("finish", Op.SLICE_COLLECTIVE_SAMPLE, [5], 7, syncs=True)
    out = sink([a, chk, b, nodes, dev, use, read])
    assert [s.label for s in out] == [
        "all_nodes",
        "device part",
        "map",
        "check map2",
        "map2",
        "reader",
        "finish",
    ]
    assert all(movable(s) for s in (a, chk, b, use))
    assert not any(movable(s) for s in (nodes, dev, read))
    dense = Instruction(lambda *a: None, (3,), 8, "dense", node=_Node(Op.DENSE))
    out = sink([a, chk, b, dense, read])  # a reader places what it reads
    assert [s.label for s in out] == ["map", "check map2", "map2", "dense", "finish"]


def test_ladies_normalises_a_layer_while_the_next_layer_runs():
    lad = example("ladies")
    A = lad.normalize(gs.datasets.rmat(1000, 10000, seed=0))
    f = gs.compile(functools.partial(lad.ladies, layers=(40, 40, 40)), backend="cuda")
    p = lower(f.program(A, torch.arange(64)), "cuda", Options(), "cuda:0")
    labels = [s.label for s in p.steps]
    parts = [i for i, lab in enumerate(labels) if lab.endswith("device part")]
    finishes = [i for i, lab in enumerate(labels) if lab.endswith("read back, finish")]
    for layer in (1, 2):  # layer l - 1's weighting and normalisation, after l's launch
        between = [p.steps[i] for i in range(parts[layer] + 1, finishes[layer])]
        assert [s.node.op for s in between if not s.label.startswith("check ")] == [
            Op.FUSED_EDGE_NORMALIZE
        ]
    # the CPU runs every op where it is issued: its program keeps the traced order
    on_cpu = lower(f.program(A, torch.arange(64)), "torch", Options(), "cpu")
    ops = [s.node.op for s in on_cpu.steps if s.node is not None]
    first = ops.index(Op.FUSED_EDGE_NORMALIZE)
    assert first < ops.index(Op.SLICE_REDUCE, first) or Op.SLICE_REDUCE not in ops[first:]
    assert first < ops.index(Op.ALL_NODES)
