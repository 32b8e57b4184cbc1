"""Super-batching on a partitioned graph: ``gs.DataLoader(P, sampler, seeds, 512,
super_batch=N)`` with ``P`` a :class:`~gsample.distributed.partition.PartitionedMatrix`.

A partitioned graph's operators run eagerly and exchange their frontier with all-to-alls, a
few collectives per operator and mini-batch. A super-batch runs the sampler *once* for N
consecutive mini-batches of the rank (a *round*, :func:`sample_round`), so that each
exchange carries the N mini-batches' frontiers at once:

* the sampler is called as ``sampler(P, seeds)`` with ``seeds`` a :class:`PerBatch`, one
  tensor per mini-batch;
* ``P[:, cols]`` and ``P.random_walk(seeds, ...)`` join the mini-batches' columns (walkers)
  one mini-batch after the other, each column keyed as single-device super-batching keys it
  (docs/architecture.md §3; :class:`gsample.base.random.BatchKeys` /
  :class:`~gsample.base.random.ColumnKeys`: its mini-batch's key ``op_key(seed, op ordinal,
  batch index)`` and its position *within its mini-batch's frontier*), exchange once for all
  N, and return a :class:`PerBatch` of the mini-batches' results (``gs.Matrix`` samples,
  slice values, walks), split back;
* everything else the sampler does with per-batch values (``s.all_nodes()``, torch code,
  arithmetic, indexing) runs once per mini-batch on that mini-batch's values, with the
  mini-batch's random stream (its index, its op ordinals);
* the output is split into the N mini-batches' outputs.

Each mini-batch's output is then the one it gives alone, bit for bit (the draws have the
same keys, and a weighted draw with replacement by inverse CDF starts each mini-batch's
running sum at 0: ``select_in_columns``), and a round makes the collectives of *one*
mini-batch (walks and node2vec's rounds of attempts included) for N.

The operators are the partitioned graph's (node-wise sampling, uniform or weighted, with
or without replacement, ``.values`` and scalar edge maps of a slice, walks: uniform,
weighted, node2vec, with stop / restart / jump); the others raise their
``NotImplementedError`` as one by one. What cannot be super-batched is refused with a
``ValueError`` naming ``super_batch``, at the same point of the sampler on every rank (the
refusals depend on the code, not on the values), so no rank is left in a collective: Python
control flow on a per-batch value (``bool``, ``int``, ``float``, ``in``, ``len`` of or
iterating over anything but tuples: a round's values differ between its mini-batches), a
per-batch ``k``, ``replace``, ``method``, walk length, walk parameters or walk weights, and
torch code writing in place into a tensor the mini-batches share. Tuples (``s.edges()``, a
shape) unpack when every mini-batch's has the same length (a tuple whose length depends on
the data, ``x.split(k)``, may be refused on one rank only: unpack fixed-length tuples).
A round that raises otherwise is sampled again one by one by the loader, on every rank
together (a check of the ranks' data fails on every rank: ``together``), so the failing
mini-batch raises its own error; if none does, the loader raises a ``ValueError`` naming
``super_batch``. The loader (``gsample.loader``) also refuses ``super_batch="auto"`` (each
rank would time its own sizes; the ranks must run the same rounds) and samplers given
tensors without ``fixed_state=True``, as single-device super-batching does; every rank has
the same number of mini-batches (:func:`gsample.distributed.split.rank_batches` pads the
epoch), hence the same rounds, which :func:`agree` checks with the ranks' N when the loader
is made.
"""

from __future__ import annotations

import itertools
import operator
import threading

import torch
import torch.distributed as dist

from gsample.base import validate as V
from gsample.base.random import MASK64, BatchKeys, ColumnKeys, batch_scope, op_key, stream_state
from gsample.distributed.partition_frontier import Frontier
from gsample.distributed.partition_sampling import together
from gsample.formats.csc import CSC, segment_ptr
from gsample.matrix.sparse import Matrix

_active = threading.local()


def active_round() -> Round | None:
    """The super-batch round this thread is sampling, or None (also while one mini-batch's
    part of it runs)."""
    return getattr(_active, "run", None)


#: why the sampler's code meets per-batch values (the end of the refusals' messages)
_WHY = (
    "; on a partitioned graph a super-batch runs the sampler once for its N mini-batches, "
    "on values that hold one value per mini-batch (gsample.distributed.partition_batches "
    "says what runs); sample this sampler without super_batch"
)


def refusal(what: str) -> ValueError:
    """The ``ValueError`` ``"super_batch: " + what`` of something a partitioned super-batch
    cannot run (raised on every rank alike: the loader raises it as it is, without
    re-sampling one by one)."""
    error = ValueError(f"super_batch: {what}")
    error.gsample_refusal = True
    return error


def is_refusal(error: BaseException) -> bool:
    return getattr(error, "gsample_refusal", False)


class Round:
    """N mini-batches of a rank sampled together: their global indices and random streams.

    Attributes
    ----------
    A : PartitionedMatrix
    seed : int
        The epoch's seed (as ``batch_scope`` takes it).
    indices : tuple of int
        The mini-batches' global indices (consecutive but for the padding's wrap-around).
    ordinals : list of int
        Each mini-batch's next op ordinal (its own stream: code run per batch may take a
        different number of them).
    """

    def __init__(self, A, seed: int, indices):
        self.A, self.seed, self.indices = A, seed & MASK64, tuple(int(i) for i in indices)
        self.ordinals = [0] * len(self.indices)

    @property
    def copies(self) -> int:
        return len(self.indices)

    def each(self, items) -> PerBatch:
        return PerBatch(list(items), self)

    # ------------------------------------------------------------------ keys
    def keys(self) -> BatchKeys:
        """One random op's keys: mini-batch ``b`` takes its next ordinal."""
        keys = tuple(op_key(self.seed, o, i) for o, i in zip(self.ordinals, self.indices))
        self.ordinals = [o + 1 for o in self.ordinals]
        return BatchKeys(keys, self.A.num_nodes)

    def column_keys(self, cols: torch.Tensor, ptr: list) -> ColumnKeys:
        """The keys of one random op over the joined frontier ``cols`` (mini-batch ``b``'s
        columns ``ptr[b]:ptr[b + 1]``): each column its mini-batch's key and its position
        within its mini-batch."""
        counts = torch.tensor(
            [c1 - c0 for c0, c1 in itertools.pairwise(ptr)], dtype=torch.int64, device=cols.device
        )
        batch = torch.repeat_interleave(
            torch.arange(self.copies, device=cols.device), counts, output_size=cols.numel()
        )
        return self.keys().columns(cols, batch, list(ptr))

    # ------------------------------------------------------------------ joining, splitting
    def shared(self, **named) -> None:
        """Refuse per-batch values where an operator takes one value for the round."""
        for name, value in named.items():
            if isinstance(value, PerBatch):
                raise refusal(
                    f"{name}: one value per mini-batch; a partitioned graph's "
                    f"operators take the same {name} for the mini-batches of a "
                    f"round{_WHY}"
                )

    def join_ids(self, ids, name: str, A):
        """Node ids for the round's operator: one per mini-batch (a :class:`PerBatch`) or
        the same for all. Returns ``(ids joined, ptr)``, ``ptr`` the mini-batches' bounds;
        each mini-batch's ids converted as its own call converts them (the range checked
        once; a mini-batch of no id, a hop that reached no new node, has none in the join)."""
        items = ids._items if isinstance(ids, PerBatch) else [ids] * self.copies
        parts = [
            V.ids(
                [x] if isinstance(x, int) and not isinstance(x, bool) else x,
                name,
                A.num_nodes,
                A.device,
                check_range=False,
            )
            for x in items
        ]
        ptr = [0]
        for p in parts:
            ptr.append(ptr[-1] + p.numel())
        joined = V.ids(torch.cat(parts), name, A.num_nodes, A.device)
        return joined, ptr

    def join_edges(self, probs, deg: torch.Tensor, ptr: list) -> torch.Tensor:
        """One probability per edge of each mini-batch's slice (a :class:`PerBatch`, or one
        tensor for all), checked per mini-batch as its own call checks them, joined."""
        starts = segment_ptr(deg)[torch.tensor(ptr, device=deg.device)].tolist()
        items = probs._items if isinstance(probs, PerBatch) else [probs] * self.copies
        parts = [
            V.probabilities(p, "probs", e1 - e0, deg.device, "edge", values=False)
            for p, e0, e1 in zip(items, starts[:-1], starts[1:])
        ]
        if len({p.dtype for p in parts}) > 1:
            raise ValueError(
                "super_batch: probs: the mini-batches' probabilities have "
                f"different dtypes ({sorted({str(p.dtype) for p in parts})})"
            )
        return torch.cat(parts)

    def split_matrix(self, csc: CSC, ptr: list) -> PerBatch:
        """A sample of the joined frontier as the mini-batches' samples (``gs.Matrix``)."""
        ends = csc.indptr[torch.tensor(ptr, device=csc.indptr.device)].tolist()
        out = []
        for c0, c1, e0, e1 in zip(ptr[:-1], ptr[1:], ends[:-1], ends[1:]):
            out.append(
                Matrix(
                    CSC(
                        csc.num_nodes,
                        csc.indptr[c0 : c1 + 1] - e0,
                        csc.rows[e0:e1],
                        col_ids=csc.col_ids[c0:c1],
                        values=None if csc.values is None else csc.values[e0:e1],
                        eids=None if csc.eids is None else csc.eids[e0:e1],
                    )
                )
            )
        return self.each(out)

    def split_edges(self, values: torch.Tensor, deg: torch.Tensor, ptr: list) -> PerBatch:
        """Values of the joined slice's edges as the mini-batches' slices' values."""
        ends = segment_ptr(deg)[torch.tensor(ptr, device=deg.device)].tolist()
        return self.each(values[e0:e1] for e0, e1 in itertools.pairwise(ends))

    def split_rows(self, t: torch.Tensor, ptr: list) -> PerBatch:
        return self.each(t[r0:r1] for r0, r1 in itertools.pairwise(ptr))

    # ------------------------------------------------------------------ per-batch code
    def map(self, fn, args=(), kwargs=None) -> PerBatch:
        """``fn`` once per mini-batch, on its part of ``args`` / ``kwargs``, with its random
        stream (its index, its op ordinals) and no round active."""
        s = stream_state()
        saved, outer = (s.ordinal, s.batch_index), active_round()
        _active.run = None
        out = []
        try:
            for b, index in enumerate(self.indices):
                s.ordinal, s.batch_index = self.ordinals[b], index
                out.append(fn(*_pick(args, b), **_pick(kwargs or {}, b)))
                self.ordinals[b] = s.ordinal
        finally:
            s.ordinal, s.batch_index = saved
            _active.run = outer
        return PerBatch(out, self)


def _pick(x, b: int):
    """Mini-batch ``b``'s part of ``x``: :class:`PerBatch` values inside lists, tuples and
    dicts replaced by their ``b``-th value."""
    if isinstance(x, PerBatch):
        return x._items[b]
    if type(x) in (list, tuple):
        return type(x)(_pick(v, b) for v in x)
    if type(x) is dict:
        return {k: _pick(v, b) for k, v in x.items()}
    return x


def _split(x, b: int):
    """Mini-batch ``b``'s output from a round's output (:func:`_pick`, into named tuples and
    frontiers too)."""
    if isinstance(x, PerBatch):
        return x._items[b]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*(_split(v, b) for v in x))
    if isinstance(x, (list, tuple)):
        return type(x)(_split(v, b) for v in x)
    if isinstance(x, dict):
        return type(x)((k, _split(v, b)) for k, v in x.items())
    if isinstance(x, Frontier) and x._batches is not None:
        ptr = x._batches[1]
        return Frontier(x.A, x.cols[ptr[b] : ptr[b + 1]], x._maps)
    return x


def _round_of(x) -> Round | None:
    if isinstance(x, PerBatch):
        return x._run
    if isinstance(x, (list, tuple)):
        for v in x:
            r = _round_of(v)
            if r is not None:
                return r
    elif isinstance(x, dict):
        return _round_of(list(x.values()))
    return None


#: in-place operators: on a value shared by the mini-batches they would run N times
_IN_PLACE = frozenset(
    f"__i{op}__"
    for op in (
        "add",
        "sub",
        "mul",
        "truediv",
        "floordiv",
        "mod",
        "pow",
        "and",
        "or",
        "xor",
        "lshift",
        "rshift",
        "matmul",
    )
) | {"__setitem__"}


def _writes_in_place(func) -> bool:
    name = getattr(func, "__name__", "")
    return name in _IN_PLACE or (name.endswith("_") and not name.endswith("__"))


def _binary(op, reflected: bool = False):
    def method(self, other):
        args = (other, self) if reflected else (self, other)
        return self._run.map(op, args)

    method.__name__ = f"__{'r' if reflected else ''}{op.__name__.strip('_')}__"
    return method


def _in_place(op):
    def method(self, other):
        self._items = self._run.map(op, (self, other))._items
        return self

    return method


class PerBatch:
    """One value per mini-batch of a partitioned super-batch round (the sampler's seeds,
    what the graph's operators return, and what code computes from them).

    Code on it runs once per mini-batch, on that mini-batch's value: method calls and
    attributes (``s.all_nodes()``, ``v.shape``), arithmetic and comparisons, indexing
    (``v[mask]``, ``v[i] = 0``) and torch functions (``torch.cat([a, b])``, through
    ``__torch_function__``), each with the mini-batch's random stream; tuples (``rows, cols,
    eids = s.edges()``, a shape) unpack into one :class:`PerBatch` per element. Python
    control flow on it (``bool``, ``int``, ``float``, ``in``, iterating over or ``len`` of
    anything but tuples) is refused with a ``ValueError`` naming ``super_batch``: the
    mini-batches of a round may differ there. (A tuple whose length depends on the data,
    ``x.split(k)``, is refused where the mini-batches' lengths differ: on one rank, maybe
    not on another; unpack only tuples of a fixed length.)

    Examples
    --------
    In a sampler called as ``sampler(P, seeds)`` by a loader with ``super_batch=2``, ``P``
    a partitioned graph (each rank of a process group; not run here):

    >>> seeds  # doctest: +SKIP
    PerBatch(2 mini-batches: [tensor([...]), tensor([...])])
    >>> s = P[:, seeds].individual_sample(10)   # one exchange for both  # doctest: +SKIP
    >>> s.all_nodes()               # all_nodes of each mini-batch's sample  # doctest: +SKIP
    """

    __slots__ = ("_items", "_run")
    __hash__ = None

    def __init__(self, items: list, run: Round):
        object.__setattr__(self, "_items", items)
        object.__setattr__(self, "_run", run)

    def __repr__(self) -> str:
        return f"PerBatch({len(self._items)} mini-batches: {self._items!r})"

    # ------------------------------------------------------------------ code per mini-batch
    def __getattr__(self, name):
        if name.startswith("__") or name in PerBatch.__slots__:
            raise AttributeError(name)
        return self._run.map(getattr, (self, name))

    def __setattr__(self, name, value):
        if name in PerBatch.__slots__:
            object.__setattr__(self, name, value)
        else:
            self._run.map(setattr, (self, name, value))

    def __call__(self, *args, **kwargs):
        return self._run.map(lambda f, *a, **k: f(*a, **k), (self, *args), kwargs)

    def __getitem__(self, key):
        return self._run.map(operator.getitem, (self, key))

    def __setitem__(self, key, value):
        self._run.map(operator.setitem, (self, key, value))

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        run = _round_of((args, kwargs))
        target = kwargs.get("out", args[0] if args else None)
        if (_writes_in_place(func) or "out" in kwargs) and not isinstance(target, PerBatch):
            raise refusal(
                f"{getattr(func, '__name__', func)}: writes one value per mini-batch "
                f"in place into a tensor the mini-batches share{_WHY}"
            )
        return run.map(func, args, kwargs)

    __add__, __radd__ = _binary(operator.add), _binary(operator.add, True)
    __sub__, __rsub__ = _binary(operator.sub), _binary(operator.sub, True)
    __mul__, __rmul__ = _binary(operator.mul), _binary(operator.mul, True)
    __truediv__, __rtruediv__ = _binary(operator.truediv), _binary(operator.truediv, True)
    __floordiv__, __rfloordiv__ = _binary(operator.floordiv), _binary(operator.floordiv, True)
    __mod__, __rmod__ = _binary(operator.mod), _binary(operator.mod, True)
    __pow__, __rpow__ = _binary(operator.pow), _binary(operator.pow, True)
    __matmul__, __rmatmul__ = _binary(operator.matmul), _binary(operator.matmul, True)
    __and__, __rand__ = _binary(operator.and_), _binary(operator.and_, True)
    __or__, __ror__ = _binary(operator.or_), _binary(operator.or_, True)
    __xor__, __rxor__ = _binary(operator.xor), _binary(operator.xor, True)
    __lshift__, __rlshift__ = _binary(operator.lshift), _binary(operator.lshift, True)
    __rshift__, __rrshift__ = _binary(operator.rshift), _binary(operator.rshift, True)
    __lt__, __le__ = _binary(operator.lt), _binary(operator.le)
    __gt__, __ge__ = _binary(operator.gt), _binary(operator.ge)
    __eq__, __ne__ = _binary(operator.eq), _binary(operator.ne)
    __iadd__, __isub__ = _in_place(operator.iadd), _in_place(operator.isub)
    __imul__, __itruediv__ = _in_place(operator.imul), _in_place(operator.itruediv)
    __ifloordiv__, __imod__ = _in_place(operator.ifloordiv), _in_place(operator.imod)
    __ipow__, __iand__ = _in_place(operator.ipow), _in_place(operator.iand)
    __ior__, __ixor__ = _in_place(operator.ior), _in_place(operator.ixor)

    def __neg__(self):
        return self._run.map(operator.neg, (self,))

    def __pos__(self):
        return self._run.map(operator.pos, (self,))

    def __abs__(self):
        return self._run.map(operator.abs, (self,))

    def __invert__(self):
        return self._run.map(operator.invert, (self,))

    # ------------------------------------------------------------------ refused
    def _refuse(self, what: str):
        raise refusal(
            f"{what} of a per-batch value (Python control flow that depends on the "
            f"mini-batch){_WHY}"
        )

    def __bool__(self):
        self._refuse("bool()")

    def _arity(self, what: str) -> int:
        """The common length of tuples (``s.edges()``, a shape, a torch function's tuple of
        results); anything else is refused."""
        lengths = {len(v) if isinstance(v, tuple) else -1 for v in self._items}
        if len(lengths) != 1 or -1 in lengths:
            self._refuse(what)
        return lengths.pop()

    def __len__(self):
        return self._arity("len()")

    def __iter__(self):
        n = self._arity("iterating over or unpacking")
        return iter([self._run.each(v[i] for v in self._items) for i in range(n)])

    def __contains__(self, item):
        self._refuse("'in'")

    def __int__(self):
        self._refuse("int()")

    def __float__(self):
        self._refuse("float()")

    def __complex__(self):
        self._refuse("complex()")

    def __index__(self):
        self._refuse("using as an index or size (__index__)")


def sample_round(A, sampler_fn, parts: list, indices: list, epoch_seed: int) -> list:
    """The outputs of ``sampler_fn`` for the mini-batches ``indices`` (seeds ``parts``) of
    an epoch, sampled in one round (every rank calls it, with as many rounds)."""
    run = Round(A, epoch_seed, indices)
    outer = active_round()
    with batch_scope(epoch_seed, run.indices[0]):
        _active.run = run
        try:
            out = sampler_fn(A, PerBatch(list(parts), run))
        finally:
            _active.run = outer
    return [_split(out, b) for b in range(run.copies)]


def agree(A, super_batch, refused: str | None, batches: int) -> None:
    """The loader's checks of ``super_batch=N`` on a partitioned graph, on every rank
    together (made where the loader is: every rank of ``A``'s group must make it): a rank's
    refusal (``refused``: why, or None) raises on every rank, and the ranks must give the
    same N and have the same number of mini-batches (``batches``), hence of rounds."""

    def check():
        if refused is not None:
            raise refusal(refused)

    together(A, check)
    n = super_batch if isinstance(super_batch, int) else 0
    t = torch.tensor([n, -n, batches, -batches], dtype=torch.int64, device=A.device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=A.group)
    hi_n, lo_n, hi_b, lo_b = t.tolist()
    if hi_n != -lo_n:
        raise ValueError(
            f"super_batch: the ranks of a partitioned graph must give the same "
            f"super_batch, got values from {-lo_n} to {hi_n}"
        )
    if hi_b != -lo_b:
        raise ValueError(
            "seeds: the ranks of a partitioned graph must give the same seeds "
            f"(their mini-batches per rank range from {-lo_b} to {hi_b})"
        )


__all__ = [
    "PerBatch",
    "Round",
    "active_round",
    "agree",
    "is_refusal",
    "refusal",
    "sample_round",
]
