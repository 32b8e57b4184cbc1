"""runtime.schedule.sink: pure sparse ops' steps (and their checks) wait until the next
read-back or their first reader; nothing else moves; LADIES's normalisation of a layer
runs after the next layer's device part is queued. runtime.schedule.hoist: a tail's
read-backs before its host work, with what they read, never past a slot they would clobber;
a super-batch's splits after all of its bounds."""

import functools

import torch
from helpers import example

import gsample as gs
from gsample.ir import Op
from gsample.runtime import Options, lower
from gsample.runtime.program import Instruction
from gsample.runtime.schedule import hoist, movable, sink


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


def _dense(name, args, out, syncs=False):
    return Instruction(lambda *a: None, tuple(args), out, name, node=_Node(Op.DENSE), syncs=syncs)


def test_hoist_moves_a_tail_s_read_backs_ahead_of_its_host_work():
    region = _step("region", Op.SLICE_INDIVIDUAL_SAMPLE, [0], 1, graph_safe=True)
    trim1, bounds1 = _dense("trim1", [1], 1, True), _dense("bounds1", [1], 2, True)
    split1 = _dense("split1", [1, 2], 3)
    prep = _dense("prep", [1], 4)  # host work a read-back reads: moves with it
    bounds2 = _dense("bounds2", [4], 5, True)
    split2 = _dense("split2", [4, 5], 6)
    final = _dense("finish", [3, 6], 7, True)
    steps = [region, trim1, bounds1, split1, prep, bounds2, split2, final]
    got = [s.label for s in hoist(steps)]
    assert got == ["region", "trim1", "bounds1", "prep", "bounds2", "split1", "split2", "finish"]
    assert [s.label for s in hoist([region, split1, final])] == ["region", "split1", "finish"]
    # a read-back that would overwrite a slot a step it passes reads stays, and so does
    # every step after it
    clobber = _dense("clobber", [1], 3, True)  # writes split1's output slot
    bounds3 = _dense("bounds3", [1], 8, True)
    got = [s.label for s in hoist([region, trim1, split1, clobber, bounds3, final])]
    assert got == ["region", "trim1", "split1", "clobber", "bounds3", "finish"]


def test_a_super_batch_s_splits_follow_all_of_its_bounds():
    """GraphSAGE super-batched on the CUDA backend (lowered here): every bounds read-back
    comes before the first split, so a call settles (``Program.settles``) before any of its
    host work and splits all of its outputs while the next call's graph runs."""
    sb = gs.compile(example("graphsage").graphsage).super_batched(
        (gs.datasets.rmat(200, 2000, seed=0), torch.arange(10)), {"fanouts": (5, 3)}, seeds="seeds"
    )
    p = lower(sb.program(4)[0], "cuda", Options(), "cuda:0")
    labels = [s.label for s in p.steps]
    bounds = [i for i, x in enumerate(labels) if x == "dense bounds"]
    splits = [i for i, x in enumerate(labels) if x == "dense split"]
    assert len(bounds) == len(splits) == 2 and max(bounds) < min(splits), labels
    assert p.settles == max(bounds) + 1, labels
