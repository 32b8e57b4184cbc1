"""Dense indexing in a sampler's own code, bounded before it runs.

A sampler may index its own tensors with ids (``node_time[seeds]``, ``x.index_select(0,
nodes)``, ``feat.gather(0, idx)``, ``t[idx] = v``). Its code runs as ``DENSE`` steps, outside
every op's checks; on the GPU an out-of-range id there would be a device-side assert that
leaves the process's CUDA context unusable. So each integer index of such a call is checked
against the size of the dimension it indexes, the check's flag is deferred like an op's
(``gsample.base.validate.fail_if``: the call raises an ``IndexError`` naming the index at the
program's read-back), and where the flag is deferred the index is clamped first, so that
the kernel never reads or writes through an id nobody bounded. The next call is unharmed.

An index that is not an integer tensor (a slice, an int, a bool mask, a list) is left to
torch, which checks it on the host. ``getitem`` allows ``[-size, size)`` as torch does; the
``(dim, index)`` functions (``index_select``, ``gather``, ``scatter``, ...) ``[0, size)``.
"""

from __future__ import annotations

import operator

import torch

from gsample.base import validate as V
from gsample.base.readback import NotCapturable
from gsample.ir import Kind, Op, Ref, map_template

#: the calls whose ``args[1]`` indexes ``args[0]`` (the method form: ``args[0]`` is self)
_SUBSCRIPT = frozenset({operator.getitem, operator.setitem, ("method", "__setitem__")})
#: the calls taking ``(input, dim, index, ...)``: the index bounds dimension ``dim`` of input
_DIM_INDEX = frozenset(
    {
        "index_select",
        "index_add",
        "index_add_",
        "index_copy",
        "index_copy_",
        "index_fill",
        "index_fill_",
        "index_reduce",
        "index_reduce_",
        "gather",
        "scatter",
        "scatter_",
        "scatter_add",
        "scatter_add_",
        "scatter_reduce",
        "scatter_reduce_",
    }
)


def _torch_name(fn) -> str | None:
    """The name ``fn`` has in ``torch`` among the indexing functions: torch's own, or what
    ``torch.<name>`` is now (PyG replaces ``torch.index_select`` with a wrapper of its own)."""
    for name in (*_DIM_INDEX, "take"):
        if fn is getattr(torch, name, None) or fn is getattr(
            torch._C._VariableFunctions, name, None
        ):
            return name
    return None


def kind(fn) -> str | None:
    """``"subscript"``, ``"dim"`` or ``"take"`` for an indexing call ``fn`` (a dense node's
    ``fn``: a function, or ``("method", name)``), else None."""
    try:
        if fn in _SUBSCRIPT:
            return "subscript"
    except TypeError:  # an unhashable callable: a user's own
        return None
    name = fn[1] if isinstance(fn, tuple) else _torch_name(fn)
    if name in _DIM_INDEX:
        return "dim"
    if name == "take":
        return "take"
    return None


def index_names(fn, template, inputs: dict) -> str:
    """What an error calls the index of dense call ``fn``: the program inputs (sampler
    arguments) its template's index part reads, else ``"index"``. ``inputs``: the dense
    node's inputs (template name -> IR node)."""
    args, kwargs = template
    k = kind(fn)
    part = (
        args[1:2]
        if k in ("subscript", "take")
        else (args[2:3] if len(args) > 2 else (kwargs.get("index"),))
    )
    found: list = []

    def visit(x):
        if isinstance(x, Ref):
            node = inputs[x.name]
            name = node.attrs.get("name") if node.op is Op.INPUT else None
            if name and name not in found:
                found.append(name)
        elif isinstance(x, (tuple, list)):
            for y in x:
                visit(y)

    visit(part)
    return ", ".join(found) or "index"


def capturable(fn, template, inputs: dict) -> bool:
    """Whether indexing call ``fn`` may run inside a CUDA graph: the ``(dim, index)``
    functions always (their index never leaves the device); a subscript when each index it
    takes is ids an op made or the sampler was given (not a mask or a 0-dim value of its own
    code, which torch reads on the host), beside ints, slices, ``None`` and ``...``. One
    that turns out to read on the host anyway refuses the capture (``NotCapturable``) and
    its region runs eagerly."""
    if kind(fn) != "subscript":
        return True

    def ids(x) -> bool:
        if isinstance(x, Ref):
            node = inputs[x.name]
            return node.op is Op.INPUT or (node.op is not Op.DENSE and node.kind is Kind.TENSOR)
        if isinstance(x, tuple):
            return all(ids(y) for y in x)
        return x is None or x is Ellipsis or isinstance(x, (int, slice))

    return ids(template[0][1])


class GuardedIndex:
    """A dense indexing call whose integer indices are bounded first (the module doc).

    Called with the dense node's input values in ``names`` order, as ``_dense_call``'s
    result is. ``label``: the call as the program prints it; ``name``: the index's name in
    an error (``index_names``)."""

    def __init__(self, fn, template, names, name: str, label: str):
        self.fn, self.template, self.name, self.label = fn, template, name, label
        self.kind = kind(fn)
        self.method = fn[1] if isinstance(fn, tuple) else None
        self.index = {k: i for i, k in enumerate(names)}
        args, kwargs = template
        # the common form, ``fn(a, b, ...)`` of the inputs in order: no template to map
        self.flat = (
            not kwargs
            and all(isinstance(a, Ref) for a in args)
            and [a.name for a in args] == list(names)
        )

    def __call__(self, *values):
        if self.flat:
            args, kwargs = list(values), {}
        else:
            args, kwargs = map_template(self.template, lambda ref: values[self.index[ref.name]])
            args = list(args)
        if not isinstance(args[0], torch.Tensor):  # a tuple's item, another object's method
            pass
        elif self.kind == "subscript":
            args[1] = self._subscript(args[0], args[1])
        elif self.kind == "take":
            args[1] = self._bound(args[1], args[0], args[0].numel(), "the flattened input", True)
        elif len(args) > 2 or "index" in kwargs:
            dim = args[1] if len(args) > 1 else kwargs["dim"]
            size = args[0].size(dim)
            if len(args) > 2:
                args[2] = self._bound(args[2], args[0], size, f"dimension {dim}", False)
            else:
                kwargs["index"] = self._bound(
                    kwargs["index"], args[0], size, f"dimension {dim}", False
                )
        if self.method is not None:
            return getattr(args[0], self.method)(*args[1:], **kwargs)
        return self.fn(*args, **kwargs)

    def _subscript(self, x, index):
        if isinstance(index, torch.Tensor):
            self._host_checked(index, x)
            if _mask(index):
                return index
            return self._bound(index, x, x.size(0) if x.dim() else 0, "dimension 0", True)
        if not isinstance(index, tuple):
            return self._host_checked(index, x)

        # the dimension each element indexes: None adds one, Ellipsis stands for the rest
        # (a bool tensor takes as many as it has)
        def width(i):
            if i is None or i is Ellipsis:
                return 0
            return i.dim() if _mask(i) else 1

        out, dim = [], 0
        for j, i in enumerate(index):
            if i is Ellipsis:
                dim = x.dim() - sum(width(r) for r in index[j + 1 :])
            elif isinstance(i, torch.Tensor) and not _mask(i):
                self._host_checked(i, x)
                size = x.size(dim) if dim < x.dim() else 0
                i = self._bound(i, x, size, f"dimension {dim}", True)
            else:
                self._host_checked(i, x)
            out.append(i)
            dim += width(i)
        return tuple(out)

    def _host_checked(self, index, x):
        """An index torch reads or checks on the host (an int, a slice, a list, a mask's
        ``nonzero``, a 0-dim tensor's value): as it is, but not inside a CUDA graph."""
        host = _mask(index) or isinstance(index, list)
        host = host or (isinstance(index, torch.Tensor) and index.dim() == 0)
        if host and _capturing(x):
            raise NotCapturable(f"{self.label}: indexed by a mask, a list or a 0-dim tensor")
        return index

    def _bound(self, index, x, size: int, where: str, negative: bool):
        """``index`` checked against ``size`` (clamped where the check is deferred)."""
        if not isinstance(index, torch.Tensor) or _mask(index):
            return index  # torch checks these on the host
        if index.is_floating_point() or index.is_complex() or index.numel() == 0:
            return index  # torch refuses these on the host, or reads nothing
        if not index.is_cuda and _capturing(x):
            raise NotCapturable(f"{self.label}: an index on {index.device}")  # a copy
        low = -size if negative else 0
        if size == 0:  # nothing to clamp into: the shapes alone say so, with no read-back
            raise IndexError(f"{self.name}: an index into {where} of size 0 ({self.label})")
        lo, hi = torch.aminmax(index)
        V.fail_if(
            (lo < low) | (hi >= size),
            IndexError,
            lambda a, b: (
                f"{self.name}: index {a if a < low else b} is out of range for {where} of "
                f"size {size} ({self.label} in the sampler)"
            ),
            lo,
            hi,
        )
        if V.deferring(index):  # the flag is read later: nothing reads out of bounds now
            index = index.clamp(low, size - 1)
        return index


def _capturing(x) -> bool:
    """Whether a CUDA graph is being captured (for the work on ``x``'s device)."""
    return isinstance(x, torch.Tensor) and x.is_cuda and torch.cuda.is_current_stream_capturing()


def _mask(i) -> bool:
    return isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8)


__all__ = ["GuardedIndex", "capturable", "index_names", "kind"]
