"""Every implementation a backend registers takes its op as the op table declares it.

The runtime calls an implementation with the node's inputs and attributes by the names its
:class:`gsample.ir.OpDef` gives them (``gsample.runtime.lower._bind`` binds them to the
function's parameters in order), plus ``key`` for a random op. A parameter the table does
not know, a missing one or a default that differs from the attribute's is a bug this test
names before a sampler meets it. The CUDA backend's registrations are collected without a
GPU (its modules import without CuPy; nothing is launched).
"""

from __future__ import annotations

import inspect
import pkgutil

import pytest

import gsample.backend.cuda as cuda_pkg
import gsample.backend.torch as torch_pkg
from gsample.backend import Backend, cuda_impl, get_backend, torch_impl
from gsample.ir import METHODS, OPS, Effect, Op

REGISTRATIONS = [
    pytest.param(reg, r, id=f"{reg.backend}.{r.op.value}.{r.fn.__qualname__}")
    for reg in (torch_impl, cuda_impl)
    for r in reg.registrations
]


def _names(op: Op) -> set:
    """What the runtime may pass an implementation of ``op``."""
    d = OPS[op]
    return set(d.input_names()) | set(d.attrs) | ({"key"} if d.effect is Effect.RANDOM else set())


@pytest.mark.parametrize(("reg", "r"), REGISTRATIONS)
def test_an_implementation_takes_its_ops_inputs_and_attributes(reg, r):
    d, options = OPS[r.op], dict(r.options)
    params = inspect.signature(r.fn).parameters
    names = _names(r.op)
    for p in params.values():
        if p.kind is p.VAR_KEYWORD:  # a variadic op's numbered operands
            assert d.is_variadic, f"{p.name}: **{p.name} but {r.op.value} takes no operands"
            continue
        # the runtime binds by position in the function's order: no keyword-only parameters
        assert p.kind is p.POSITIONAL_OR_KEYWORD, f"{p.name}: {p.kind.description}"
        if p.name not in names:  # the implementation's own knob: never passed by the runtime
            assert p.default is not p.empty, f"{p.name}: not an input or attribute of {d.op}"
    without = set(options.get("without", ()))
    missing = {n for n in names if n not in params} - without
    assert not missing, f"does not take {sorted(missing)} (nor declares them in without=)"
    if d.is_variadic:
        assert any(p.kind is p.VAR_KEYWORD for p in params.values()), "no **operands"
    for a in d.attributes:
        p = params.get(a.name)
        if p is not None and p.default is not p.empty and a.default is not None:
            assert p.default == a.default, f"{a.name}: default {p.default!r} != {a.default!r}"
    for i in d.inputs:  # an optional input may be absent from the node
        p = params.get(i.name)
        if i.optional and p is not None:
            assert p.default is None, f"{i.name}: optional, so its default must be None"


@pytest.mark.parametrize("op", [op for op, d in OPS.items() if d.check is not None])
def test_an_ops_check_takes_its_inputs(op):
    """``OpDef.check`` is called with the op's inputs and attributes by name (and
    ``trusted``, ``in_kernel``): it names the required inputs and takes the rest."""
    params = inspect.signature(OPS[op].check).parameters
    assert any(p.kind is p.VAR_KEYWORD for p in params.values())
    assert set(OPS[op].required_inputs()) - {"A"} <= set(params) | {
        p.name for p in params.values() if p.kind is p.VAR_KEYWORD
    }


@pytest.mark.parametrize("name", sorted(METHODS))
def test_a_matrix_methods_parameters_are_its_ops(name):
    """The tracer turns a method's parameters into the op's inputs and attributes by name
    (``Capture.params`` renames): each must be one."""
    import gsample as gs

    d = OPS[METHODS[name]]
    params = list(inspect.signature(getattr(gs.Matrix, name)).parameters)[1:]
    for p in params:
        key = d.capture.params.get(p, p)
        assert d.input(key) is not None or d.attribute(key) is not None, (name, p)


def test_every_backend_module_registers_through_its_decorator_only():
    """One registration path: no ``register(backend)`` functions or op tables in the
    backends' modules."""
    for pkg in (torch_pkg, cuda_pkg):
        for info in pkgutil.iter_modules(pkg.__path__):
            module = __import__(f"{pkg.__name__}.{info.name}", fromlist=["_"])
            assert not callable(getattr(module, "register", None)), module.__name__
            assert not hasattr(module, "IMPLS"), module.__name__
        assert not hasattr(pkg, "IMPLS")
    # and what the decorators recorded is what the backends run
    for reg in (torch_impl, cuda_impl):
        be = get_backend(reg.backend)
        registered = {
            (r.op, lay, dict(r.options).get("sync_free", False))
            for r in reg.registrations
            for lay in r.layouts
        }
        running = {(op, lay, False) for op, lay in be.impls} | {
            (op, lay, True) for op, lay in be.sync_free_impls
        }
        assert registered == running


def test_a_registration_says_what_it_means():
    class Probe(Backend):
        name = "probe"

    with pytest.raises(TypeError, match="unknown options"):
        torch_impl(Op.ROW, sync_fre=True)
    be = Probe()
    be.register(Op.ROW, ("csc",), lambda A: A)
    with pytest.raises(ValueError, match="row on 'csc' is registered twice"):
        be.register(Op.ROW, ("csc",), lambda A: A)
    be.register(Op.ROW, ("csc",), lambda A: A, sync_free=True)  # another table
