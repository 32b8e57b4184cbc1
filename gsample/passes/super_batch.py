"""Super-batching: one run of a program samples N mini-batches (docs/architecture.md §3 and §4).

``super_batch(N, n)`` makes a pass that rewrites a sampler's (optimised) program into
one that takes the N mini-batches' seeds at once and returns a list of N outputs, each
equal (same samples, same tensors) to the program's output for that mini-batch alone.
It is not in ``gsample.passes.PIPELINE``: it is part of lowering, and
``gs.DataLoader(..., super_batch=N)`` applies it to an optimised program.

Block-diagonal ids. The N batches become one graph ``diag(A, ..., A)`` of ``N * n``
nodes: node ``v`` of batch ``b`` is ``b * n + v``. A column slice of the graph at encoded
columns gives each edge the row of its column's batch, so every later sparse op (per-row
reductions, ``unique``, ``compact``, ``all_nodes``, row slices) works per batch by itself
and runs *once* for the N batches. Each batch's columns, rows and edges stay contiguous
and in batch order; ``all_nodes`` (columns first, then rows) is regrouped by batch.

Values have one of three forms: *graph-level* (the graph, ``CACHED`` values, constants,
tensor arguments, and pure code on those only: shared, computed once), *encoded* (the
result of a sparse op, or the seeds: one value for the N batches) and *per batch* (a
list of N values: what dense code returns). The op definitions' alignments
(``gsample.ir.Align``) say how each tensor input and result lines up with the op's matrix;
the rewrite never matches op names. Rules (the run-time helpers it puts into the program,
``helpers``: ``gsample.runtime.block_diagonal``'s):

* a sparse op on an encoded matrix runs as is; a per-batch tensor input is joined
  (ids encoded, values concatenated), a graph-level one tiled (one copy per batch);
* a sparse op on the graph itself with a frontier (a ``"col_ids"`` input) is the
  block-diagonal graph's op: a random one gets ``attrs["batches"] = (N, n)``
  (``BatchKeys``: batch ``b`` draws with mini-batch ``first + b``'s key and each column's
  position within its batch; a walk's rows, one per frontier node, come out encoded and
  grouped by batch); a pure one the op table marks ``batched`` takes the encoded frontier
  (and its row ids, encoded) itself with ``attrs["batches"] = (N, n)``: ``A[rows, cols]``,
  ShaDow's induced subgraph, runs once for all batches with the work of their own slices
  (never a column slice of the block-diagonal graph, nor an array of ``N * n`` entries per
  row); another pure one (``A[:, cols]``) slices the decoded columns and re-encodes the
  slice;
* a random op on the graph itself (a graph-level matrix: ``A``, ``A.T``, a value cached
  per graph) without a frontier (GraphSAINT-node's draws from every node) runs once per
  batch: the op stays itself (its op and ordinal), ``attrs["per_batch"]`` names its
  per-batch inputs (encoded ones split, per-batch ones as they are, graph-level ones
  shared) and ``attrs["batches"] = (N, n)`` gives it ``BatchKeys``; the lowering (and the
  interpreter) run the backend's implementation of the op for batch ``b`` with
  mini-batch ``first + b``'s op key (``blocks.PerBatchDraw``), each batch's inputs checked
  as its own call checks them. Its result is per batch, as dense code's;
* dense code (opaque torch code) runs once per batch, on each input's batch-``b`` part,
  decoded to exactly what the mini-batch program would see. So does a pure sparse op
  the encoding cannot run once: a whole-graph op with per-batch inputs (``A[rows, :]``),
  or an edge operand computed per batch (it may be a scalar, whose type promotion is
  the batch's own); its per-batch matrices are joined (encoded) where a sparse op reads
  them. Two kinds run once for all batches, with each batch's own bits: exact
  elementwise code on a vector over the graph's rows, per-batch scalars and constants
  (``blocks.Elementwise``: LADIES' ``p / p.sum()``), and a gather of such a vector (or a
  graph-level one) at ids a sparse op aligned with its matrix (``blocks.gather``:
  ``p[s.row_ids]``);
* a tuple result's elements line up as the op table says: ``"paired"`` ones with the
  tuple's first element (its ids: ``first_reached``'s slots and carried times are split
  where its nodes are), a ``"state"`` is only read by a later call of the op (never split:
  a program that returns it is refused);
* the output is split into the N batches' outputs.

Several matrix arguments are encoded alike (node ``v`` of batch ``b`` is ``b * n + v`` in
each), so each must have the graph's ``n`` nodes (``node_counts``; a heterogeneous graph's
relations share one ``N``). Refused, with a ``ValueError`` naming ``super_batch``: a sampler
whose random draws depend on tensor arguments (model weights, bandit biases: state that
may change between mini-batches) unless ``fixed_state`` (a draw on the whole graph too:
``A.collective_sample(k, node_probs=v)`` with ``v`` an argument); dense code that writes in
place; a matrix argument with another node count (or several matrix arguments without
``node_counts``); an op whose alignments the op table does not give.

Example (GraphSAGE, N = 2)::

    %seeds = input() {name='seeds'}                        ids b * n + v
    %s0 = slice_individual_sample(A=%A, cols=%seeds) {k=25, ordinal=0, batches=(2, n)}
    %f = all_nodes(A=%s0) {batches=(2, n)}                 columns then rows, per batch
    %s1 = slice_individual_sample(A=%A, cols=%f) {k=10, ordinal=1, batches=(2, n)}
    %b0 = dense(0=%s0) {fn=bounds}
    %p0 = dense(0=%s0, 1=%b0) {fn=split}                   the 2 batches' blocks
    ...
    %out = dense(0=%p0, 1=%p1) {fn=assemble_batches}       [out of batch 0, of batch 1]
    %output = output(0=%out)

GraphSAINT-node, a draw on the whole graph (N = 3)::

    %p = cached(graph=%A) {program=..}                     (n,): shared by the batches
    %AT = cached(graph=%A) {program=..}                    A.T
    %d = collective_sample(A=%AT, node_probs=%p) {k=6000, replace=True, ordinal=0,
                           batches=(3, n), per_batch=frozenset()}   [batch 0's, 1's, 2's]
    %j = dense(0=%d) {fn=join_matrices}                    one encoded matrix
    %nodes = row(A=%j)                                     ids b * n + v, batch by batch
    ...

and LADIES's bias, dense code between sparse ops::

    %p = slice_reduce(A=%A2, cols=%seeds) {op='sum', axis=1, batches=(2, n)}
                                                           (N * n,): every batch's rows
    %pb = dense(0=%p) {fn=split}                           N views of n values
    %t = dense(0=%pb) {fn=per_batch(.sum())}               each batch's own sum
    %q = dense(0=%p, 1=%t) {fn=batched(truediv)}           p / p.sum(): once, (N * n,)
    %s = slice_collective_sample(A=%A, cols=%seeds, node_probs=%q) {k=4000, batches=(2, n)}
    %r = row_ids(A=%s)                                     ids b * n + v
    %w = dense(0=%q, 1=%r) {fn=gather}                     p[s.row_ids]: once
"""

from __future__ import annotations

import operator
from types import SimpleNamespace

import torch

from gsample.base import validate as V
from gsample.formats.derived import COLUMNS
from gsample.ir import Align, Effect, Graph, Kind, Node, Op, Ref
from gsample.ir.visit import NodeVisitor
from gsample.passes.gather_nodes import column_source, structure_root
from gsample.passes.result import PassResult

GRAPH, ENC, LIST = "graph-level", "encoded", "per-batch"
#: an alignment as ``blocks.split`` names it ("col_ids" / "row_ids": ids that become the
#: result's columns / rows, which the encoding joins or tiles as ids)
_SPEC = {
    Align.ROWS: "rows",
    Align.COLS: "cols",
    Align.EDGES: "edges",
    Align.ROW_IDS: "rows ids",
    Align.COL_IDS: "cols ids",
    Align.EDGE_IDS: "edges ids",
    Align.ROW_SET: "ids",
    Align.NODE_SET: "set",
    Align.NEW_COLS: "col_ids",
    Align.NEW_ROWS: "row_ids",
    Align.WALKS: "walks",
    Align.ENTRIES: "entries",
    Align.PAIRED: "paired",
    Align.STATE: "state",
    Align.SCALAR: "scalar",
}


def super_batch(
    copies: int,
    num_nodes: int,
    seeds: str = "seeds",
    fixed_state: bool = False,
    node_counts: dict | None = None,
    *,
    helpers: SimpleNamespace | None = None,
):
    """The super-batching pass for ``copies`` mini-batches of a graph of ``num_nodes`` nodes.

    Parameters
    ----------
    copies : int
        N, mini-batches per run (``>= 1``).
    num_nodes : int
        n, the graph's node count (ids of batch ``b`` are ``b * n + v``).
    seeds : str
        Name of the program's per-batch input (the seeds); every other tensor input is
        the same for all batches.
    fixed_state : bool
        The caller's word that tensor inputs feeding random ops do not change between
        mini-batches (else such a program is refused).
    node_counts : dict, optional
        Node count of each ``gs.Matrix`` argument, by name: a sampler with several matrix
        arguments is rewritten only when every one has ``num_nodes`` nodes (each is then
        encoded as the graph is); without it, such a sampler is refused.
    helpers : namespace
        The run-time helpers the rewritten program calls, by name (``helpers.split``,
        ``helpers.Assemble``, ...: ``gsample.runtime.block_helpers()``, the runtime's; a
        pass imports no runtime). They are put into ``DENSE`` nodes as their
        ``fn``.

    Returns
    -------
    callable
        ``Graph -> PassResult``: the rewritten program returns a list of ``copies``
        outputs.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> from gsample.passes import optimize
    >>> from gsample.runtime import block_helpers
    >>> program = graphsage.program(A, seeds)
    >>> sb = super_batch(4, A.num_nodes, helpers=block_helpers())
    >>> graph = optimize(program, [sb])
    """
    copies, num_nodes = V.count(copies, "super_batch"), V.count(num_nodes, "num_nodes")
    if copies == 0:
        raise ValueError("super_batch: must be >= 1")
    if helpers is None:
        raise TypeError(
            "helpers: the super-batch rewrite needs the runtime's helpers "
            "(helpers=gsample.runtime.block_helpers())"
        )

    def super_batch(graph: Graph) -> PassResult:
        rewrite = _Rewrite(graph, copies, num_nodes, seeds, fixed_state, node_counts, helpers)
        return PassResult(rewrite.run(), True)  # every program is rewritten, or refused

    return super_batch


#: dense code that runs once over a super-batch's values (:class:`Elementwise`): IEEE
#: arithmetic exact per element, whose result does not depend on where the element sits
#: (vectorised or not, CPU or GPU), so one call over ``N * n`` values gives every batch's
#: own bits (not transcendental functions: a CPU's vector and scalar code round apart)
EXACT_ELEMENTWISE = frozenset(
    {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.neg,
        operator.pos,
        operator.abs,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.eq,
        operator.ne,
        torch.add,
        torch.sub,
        torch.mul,
        torch.div,
        torch.true_divide,
        torch.where,
        torch.clamp,
        torch.clamp_min,
        torch.clamp_max,
        torch.minimum,
        torch.maximum,
        torch.sqrt,
        torch.abs,
        torch.neg,
    }
)
EXACT_METHODS = frozenset(
    {
        "add",
        "sub",
        "mul",
        "div",
        "true_divide",
        "clamp",
        "clamp_min",
        "clamp_max",
        "minimum",
        "maximum",
        "sqrt",
        "abs",
        "neg",
        "where",
    }
)  # (operators trace to operator.*)
#: keywords that make an exact function inexact or not elementwise (``a + alpha * b`` is
#: fused on a CPU's vector path only; ``out=`` writes in place)
_INEXACT_KWARGS = frozenset({"alpha", "rounding_mode", "out"})
#: full reductions: a 0-dim tensor per batch when called with no argument but the tensor
FULL_REDUCTIONS = frozenset({"sum", "mean", "max", "min", "amax", "amin", "prod"})


def exact_elementwise(fn, template) -> bool:
    """Whether dense code ``fn`` (a traced function or ``("method", name)``) called as
    ``template`` is in :data:`EXACT_ELEMENTWISE` / :data:`EXACT_METHODS`."""
    exact = fn[1] in EXACT_METHODS if isinstance(fn, tuple) else fn in EXACT_ELEMENTWISE
    return exact and not (_INEXACT_KWARGS & set(template[1]))


def full_reduction(fn, template) -> bool:
    """Whether ``fn`` called as ``template`` is a tensor method reducing all its elements
    (``p.sum()``): a 0-dim tensor."""
    return (
        isinstance(fn, tuple)
        and fn[1] in FULL_REDUCTIONS
        and len(template[0]) == 1
        and not template[1]
    )


#: ops that are not sparse ops of the graph (their results leave, or stay dense)
_NOT_SPARSE = (Op.INPUT, Op.CONSTANT, Op.DENSE, Op.GETITEM, Op.CACHED, Op.OUTPUT)


def stateful_inputs(graph: Graph, seeds: str = "seeds") -> list:
    """Names of the tensor inputs (and tensor constants) the program's random ops read (or
    its sparse ops that read values computed from their draws), directly or through any
    computation: state that may change between mini-batches.

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def weighted(A, seeds, W):                # draws weighted by a tensor argument
    ...     sub = A[:, seeds]
    ...     return sub.individual_sample(5, probs=W[sub.row_ids].sum(1).exp() * sub)
    >>> A, seeds, W = gs.datasets.rmat(100, 500, seed=0), torch.arange(8), torch.randn(100, 4)
    >>> stateful_inputs(weighted.program(A, seeds, W))
    ['W']
    """
    # the random ops, and the sparse ops that read what was computed from their draws (the
    # block of the rows an MVS sampler keeps: its draws compared with probabilities from a
    # tensor argument); values computed from a sample that only leave the program (features
    # gathered for its rows) are not state
    drawn, roots = set(), []
    for n in graph.nodes:  # (nodes are in program order)
        reads_draw = any(v in drawn for v in n.inputs.values())
        if n.is_random or reads_draw:
            drawn.add(n)
        if n.is_random or (reads_draw and n.op not in _NOT_SPARSE):
            roots.append(n)
    reach, stack = set(), roots
    while stack:
        n = stack.pop()
        if n not in reach:
            reach.add(n)
            stack.extend(n.inputs.values())
    out = []
    for n in graph.nodes:
        if n not in reach:
            continue
        if n.op is Op.INPUT and n.kind is Kind.TENSOR and n.attrs["name"] != seeds:
            out.append(n.attrs["name"])
        # a captured tensor (here or in a graph-level program) may be updated in place too
        consts = n.attrs["program"].nodes if n.op is Op.CACHED else [n]
        out += [
            f"a tensor constant (%{c.name})"
            for c in consts
            if c.op is Op.CONSTANT and isinstance(c.attrs["value"], torch.Tensor)
        ]
    return out


def block_facts(graph: Graph, seeds: str = "seeds") -> tuple:
    """What a mini-batch's program knows of the blocks it returns, for the super-batch's
    output to keep with each batch's blocks as the program would (``runtime.lower``'s
    ``kept`` and ``facts``): so a loader sees that a super-batch's blocks chain by identity,
    with no comparison of ids (``gsample.loader.features.batch_nodes``).

    Returns
    -------
    tuple of (str, op, source)
        ``(block, op, source)``: keep, with output input ``block``'s matrix, its
        ``all_nodes`` (``op`` ``Op.ALL_NODES``) or the object its columns were sliced with
        (``op`` ``COLUMNS``); ``source`` is ``("input", name)`` (output input ``name``, a
        hidden one: the loader's ``all_nodes``, ``gather_nodes``), ``("cols", name)``
        (the column ids of output input ``name``'s matrix, the hop sliced with that
        ``all_nodes``) or ``("seeds",)`` (the mini-batch's seeds, which its caller binds:
        ``gsample.formats.derived.bind_seeds``).

    Examples
    --------
    >>> import torch, gsample as gs
    >>> @gs.compile
    ... def graphsage(A, seeds):                   # two GraphSAGE layers
    ...     s1 = A[:, seeds].individual_sample(10)
    ...     return [s1, A[:, s1.all_nodes()].individual_sample(5)]
    >>> A, seeds = gs.datasets.rmat(100, 500, seed=0), torch.arange(8)
    >>> facts = block_facts(graphsage.program(A, seeds))  # GraphSAGE's blocks: outputs "0", "1"
    >>> facts[:2]                                   # block 0's columns: the seeds, block 1's ...
    (('0', 'columns', ('seeds',)), ('1', 'columns', ('cols', '1')))
    >>> facts[2]                                    # ... block 0's all_nodes
    ('0', <Op.ALL_NODES: 'all_nodes'>, ('cols', '1'))
    """
    out = next((n for n in graph.nodes if n.op is Op.OUTPUT), None)
    if out is None:
        return ()
    blocks = {k: v for k, v in out.inputs.items() if v.kind is Kind.MATRIX}
    root = {k: structure_root(v) for k, v in blocks.items()}
    hidden = {  # a returned all_nodes (the loader's): by its matrix's structure
        structure_root(v.inputs["A"]): k
        for k, v in out.inputs.items()
        if v.op is Op.ALL_NODES and v.inputs["A"].kind is Kind.MATRIX
    }
    facts, nodes = [], {}  # nodes: block -> the source of its all_nodes
    for k, m in blocks.items():
        src = column_source(m)
        if src is None:
            continue
        if src.op is Op.INPUT and src.attrs.get("name") == seeds:
            facts.append((k, COLUMNS, ("seeds",)))
        elif src.op is Op.ALL_NODES:
            r = structure_root(src.inputs["A"])
            j = next((j for j in blocks if root[j] is r), None)
            if j is None:
                continue
            value = nodes.setdefault(j, ("input", hidden[r]) if r in hidden else ("cols", k))
            facts.append((k, COLUMNS, value))
    for j, k in ((j, hidden.get(root[j])) for j in blocks):
        if j not in nodes and k is not None:
            nodes[j] = ("input", k)
    facts += [(j, Op.ALL_NODES, value) for j, value in nodes.items()]
    return tuple(facts)


class _Rewrite(NodeVisitor):
    """The rewrite of one graph: :meth:`run` visits its nodes in order, one method per node
    kind (:class:`gsample.ir.visit.NodeVisitor`), each giving its node a form (``space``)
    and rewriting it into the super-batch's."""

    def __init__(
        self,
        graph: Graph,
        copies: int,
        n: int,
        seeds: str,
        fixed_state: bool,
        node_counts: dict | None,
        helpers: SimpleNamespace,
    ):
        self.g, self.N, self.n, self.seeds, self.fixed = graph, copies, n, seeds, fixed_state
        self.blocks = helpers
        self.node_counts = node_counts
        self.space: dict = {}  # node -> GRAPH / ENC / LIST
        self.spec: dict = {}  # encoded node -> (split spec or tuple, or "matrix"; matrix)
        self.memo: dict = {}
        # encoded frontier -> a sampled matrix whose columns it is (in order): values per
        # frontier entry split where that matrix's columns are (no read-back of their own)
        self.columns_of: dict = {}
        self.scalars: set = set()  # per-batch values that are a 0-dim tensor in every batch

    # ------------------------------------------------------------------ helpers
    def _helper(
        self, fn, args: list, kwargs: dict, space: str, kind=Kind.ANY, before=None, after=None
    ) -> Node:
        """A DENSE node calling ``fn(*args, **kwargs)`` (args: IR nodes)."""
        if after is not None:
            before = self.g.nodes[self.g.nodes.index(after) + 1]
        inputs = {str(i): a for i, a in enumerate(args)}
        template = (tuple(Ref(k) for k in inputs), kwargs)
        node = self.g.add(Op.DENSE, inputs, {"fn": fn, "template": template}, kind, before=before)
        self.space[node] = space
        return node

    def _memo(self, key, make) -> Node:
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]

    def _split(self, v: Node, before: Node) -> Node:
        """``v``'s N parts (a per-batch list), decoded."""
        spec, M = self.spec[v]
        if spec is None:
            self._refuse(
                f"the op table does not say how the result of {v.op.value} lines up "
                "with its matrix (gsample.ir.ops)"
            )
        if spec == "state":
            self._refuse(
                "the program returns an op's state (first_reached's), which only that op's "
                "next call reads; a super-batched program cannot return it"
            )
        if spec in ("entries", "paired") and M in self.columns_of:
            spec, M = "cols", self.columns_of[M]  # the columns of a matrix split anyway
        args = [v]
        if spec == "walks":
            # the walks' frontier only where it is the super-batch's seeds, whose batches'
            # sizes the host keeps (no read-back); another frontier (a sync-free op's bounded
            # ids) would be trimmed for the split, a read-back of its own before the split's
            if M is not None and M.op is Op.INPUT and M.kind is not Kind.MATRIX:
                args.append(M)
        elif spec in ("entries", "paired"):  # a value per entry of M (encoded ids)
            args.append(M)
        elif M is not None:  # where each batch's rows, columns and edges start in M
            args.append(
                self._memo(
                    ("bounds", M),
                    lambda: self._helper(
                        self.blocks.bounds, [M], {"n": self.n, "copies": self.N}, ENC, before=before
                    ),
                )
            )
        kwargs = {"spec": spec, "n": self.n, "copies": self.N}
        return self._memo(
            ("split", v), lambda: self._helper(self.blocks.split, args, kwargs, LIST, before=before)
        )

    def _encoded(self, v: Node, before: Node, name: str, ids: bool, tile: bool = True) -> Node:
        """``v`` as a sparse op's input of the super-batch: joined, tiled or as it is."""
        space = self.space[v]
        if space is ENC and ids and self.spec.get(v, (None,))[0] in ("entries", "paired"):
            # values per frontier entry read as node ids (t[seeds] of a table of ids)
            frontier = self.spec[v][1]
            enc = self._memo(
                ("encode", v),
                lambda: self._helper(
                    self.blocks.encode_entries,
                    [v, frontier],
                    {"n": self.n, "name": name},
                    ENC,
                    Kind.TENSOR,
                    before=before,
                ),
            )
            self.spec[enc] = ("ids", None)
            return enc
        if space is LIST:
            return self._memo(
                ("join", v, ids),
                lambda: self._helper(
                    self.blocks.join,
                    [v],
                    {"n": self.n, "ids": ids, "name": name},
                    ENC,
                    Kind.TENSOR,
                    before=before,
                ),
            )
        if space is GRAPH and (tile or ids):
            return self._memo(
                ("tile", v, ids),
                lambda: self._helper(
                    self.blocks.tile,
                    [v],
                    {"n": self.n, "copies": self.N, "ids": ids, "name": name},
                    ENC,
                    Kind.TENSOR,
                    before=before,
                ),
            )
        return v

    def _refuse(self, why: str):
        raise ValueError(f"super_batch: {why}")

    # ------------------------------------------------------------------ the rewrite
    def run(self) -> Graph:
        g = self.g
        matrices = [n.attrs["name"] for n in g.nodes if n.op is Op.INPUT and n.kind is Kind.MATRIX]
        if len(matrices) > 1:
            # every matrix is encoded as the graph is (node v of batch b: b * n + v)
            counts = self.node_counts
            if counts is None:
                self._refuse(
                    "samplers with more than one gs.Matrix argument are not supported "
                    "(unless the node count of each is given: node_counts)"
                )
            other = {m: counts.get(m) for m in matrices if counts.get(m) != self.n}
            if other:
                self._refuse(
                    "samplers with more than one gs.Matrix argument are supported only when "
                    f"all have the graph's node count ({self.n}); "
                    + ", ".join(f"{m!r} has {c}" for m, c in other.items())
                )
        if not any(n.op is Op.INPUT and n.attrs["name"] == self.seeds for n in g.nodes):
            self._refuse(f"the program has no input {self.seeds!r} (the seeds)")
        if any(n.writes_in_place for n in g.nodes):
            self._refuse(
                "the sampler has dense code that writes in place; it would run once "
                "per super-batch instead of once per mini-batch"
            )
        state = stateful_inputs(g, self.seeds)
        if state and not self.fixed:
            self._refuse(
                f"the sampler's random draws depend on {', '.join(state)}, tensor arguments "
                "besides the graph and the seeds that may change between mini-batches (model "
                "weights, bandit biases: PASS-style samplers); a super-batch samples its "
                "mini-batches before any update. If they stay fixed while the loader runs, "
                "say so: gs.DataLoader(..., super_batch=4, fixed_state=True)"
            )
        self.facts = block_facts(g, self.seeds)  # read before the rewrite encodes the ops
        for node in list(g.nodes):
            self.visit(node)
        for node in g.nodes:
            node.meta["super_batch"] = self.space[node]
        return g

    # ------------------------------------------------------------------ the nodes, by kind
    def input(self, node: Node):
        per_batch = node.kind is not Kind.MATRIX and node.attrs["name"] == self.seeds
        self.space[node] = ENC if per_batch else GRAPH
        if per_batch:
            self.spec[node] = ("ids", None)

    def constant(self, node: Node):
        self.space[node] = GRAPH

    cached = constant

    def _as_per_batch(self, node: Node, fn, template, inputs: dict):
        """Make ``node`` a DENSE node running ``fn`` once per batch on ``inputs`` (named as
        ``template`` names them: encoded ones split, graph-level ones shared)."""
        per = frozenset(k for k, v in inputs.items() if self.space[v] is not GRAPH)
        node.inputs = {
            k: self._split(v, node) if self.space[v] is ENC else v for k, v in inputs.items()
        }
        node.op, self.space[node] = Op.DENSE, LIST  # kind kept: a sparse reader joins it
        node.attrs = {
            "fn": self.blocks.PerBatch(fn, template, per, self.N),
            "template": ((), {k: Ref(k) for k in node.inputs}),
        }

    def dense(self, node: Node):
        if all(self.space[v] is GRAPH for v in node.inputs.values()):
            self.space[node] = GRAPH
        elif not self._elementwise(node) and not self._gather(node):
            fn, template = node.attrs["fn"], node.attrs["template"]
            inputs = node.inputs
            scalar = exact_elementwise(fn, template) and all(
                v in self.scalars or self._constant(v) for v in inputs.values()
            )
            self._as_per_batch(node, fn, template, inputs)
            if full_reduction(fn, template) and self._rows_or_scalar(inputs):
                self.scalars.add(node)  # p.sum(): a 0-dim tensor per batch
            elif scalar:  # p.sum().clamp(min=...): at once
                per = frozenset(k for k, v in inputs.items() if v in self.scalars)
                node.attrs["fn"] = self.blocks.Scalars(fn, template, per, self.N)
                self.scalars.add(node)

    def _rows_or_scalar(self, inputs: dict) -> bool:
        return all(self._nodes(v) or v in self.scalars for v in inputs.values())

    def _nodes(self, v: Node) -> bool:
        """``v`` is encoded with ``n`` rows per batch (a reduction over the graph's rows)."""
        return self.space[v] is ENC and self.spec.get(v, (None,))[0] == "nodes"

    def _constant(self, v: Node) -> bool:
        """``v`` is a number or a 0-dim tensor, the same for every batch."""
        if v.op is not Op.CONSTANT:
            return False
        c = v.attrs["value"]
        return isinstance(c, (bool, int, float)) or (isinstance(c, torch.Tensor) and c.dim() == 0)

    def _elementwise(self, node: Node) -> bool:
        """Exact elementwise dense code on a vector over the graph's rows, per-batch 0-dim
        tensors and constants (LADIES' ``p / p.sum()``) runs once for all batches
        (``blocks.Elementwise``); its result is encoded as its vector operand is."""
        fn, template = node.attrs["fn"], node.attrs["template"]
        ins = node.inputs
        nodes = frozenset(k for k, v in ins.items() if self._nodes(v))
        if (
            not nodes
            or not exact_elementwise(fn, template)
            or not all(k in nodes or v in self.scalars or self._constant(v) for k, v in ins.items())
        ):
            return False
        scalars = frozenset(k for k, v in ins.items() if v in self.scalars)
        node.attrs = {
            "fn": self.blocks.Elementwise(fn, template, nodes, scalars, self.N, self.n),
            "template": ((), {k: Ref(k) for k in ins}),
        }
        self.space[node] = ENC
        self.spec[node] = ("nodes", None)
        return True

    def _gather(self, node: Node) -> bool:
        """``x[ids]``, ``ids`` the encoded node ids a sparse op aligned with its matrix
        (``s.row_ids``: batch ``b``'s ``b * n + v``) and ``x`` a value over the graph's nodes,
        encoded (``n`` rows per batch) or graph-level: one gather for all batches
        (``blocks.gather``), each batch's part ``x_b[v]`` in batch order, exactly what it
        gathers alone (LADIES' and FastGCN's ``p[s.row_ids]``: no split, no per-batch
        launches, no read-back of the sample's bounds before the next layer). So is a
        gather at the seeds (a seed's time, ``t[seeds]``): a value per seed, split where
        the seeds are."""
        fn, (args, kwargs) = node.attrs["fn"], node.attrs["template"]
        if (
            fn is not operator.getitem
            or kwargs
            or len(args) != 2
            or not all(isinstance(a, Ref) for a in args)
        ):
            return False
        x, ids = (node.inputs[a.name] for a in args)
        spec, M = self.spec.get(ids, (None, None)) if self.space[ids] is ENC else (None, None)
        along, _, what = spec.partition(" ") if isinstance(spec, str) else ("", "", "")
        seeds = ids.op is Op.INPUT and spec == "ids"  # x[seeds]: a value per seed
        if not (self._nodes(x) or self.space[x] is GRAPH) or not (
            seeds or (what == "ids" and M is not None)
        ):
            return False
        node.attrs = {
            "fn": self.blocks.gather,
            "template": (
                (Ref(args[0].name), Ref(args[1].name)),
                {"n": None if self._nodes(x) else self.n},
            ),
        }
        self.space[node] = ENC
        self.spec[node] = ("entries", ids) if seeds else (along, M)
        return True

    def getitem(self, node: Node):
        x = node.input("x")
        self.space[node] = self.space[x]
        if self.space[x] is ENC:
            spec, M = self.spec[x]
            part = spec[node.attrs["index"]]
            if part == "paired":  # lines up with the tuple's first element, its ids
                M = self._memo(("element", x), lambda: self._first_element(x, node))
            self.spec[node] = (part, M)
        elif self.space[x] is LIST:  # a tuple per batch: index each
            self._as_per_batch(
                node, operator.getitem, ((Ref("0"), node.attrs["index"]), {}), {"0": x}
            )

    def _first_element(self, x: Node, before: Node) -> Node:
        """``x[0]``, the ids of an encoded tuple ``x`` (what its "paired" elements line up
        with), as a node of its own."""
        for first in self.g.nodes:  # the program's own x[0], if it reads it
            if first.op is Op.GETITEM and first.inputs["x"] is x and first.attrs["index"] == 0:
                return first
        first = self.g.add(Op.GETITEM, {"x": x}, {"index": 0}, Kind.TENSOR, before=before)
        self.space[first] = ENC
        self.spec[first] = (self.spec[x][0][0], self.spec[x][1])
        return first

    def output(self, node: Node):
        per = frozenset(k for k, v in node.inputs.items() if self.space[v] is not GRAPH)
        inputs = {
            k: self._split(v, node) if self.space[v] is ENC else v for k, v in node.inputs.items()
        }
        asm = self.g.add(
            Op.DENSE,
            inputs,
            {
                "fn": self.blocks.Assemble(node.attrs["template"], per, self.N, facts=self.facts),
                "template": ((), {k: Ref(k) for k in inputs}),
            },
            Kind.ANY,
            before=node,
        )
        self.space[asm] = self.space[node] = LIST
        node.inputs, node.attrs = {"0": asm}, {**node.attrs, "template": Ref("0")}

    def op(self, node: Node):
        ins = node.inputs
        random = node.info.effect is Effect.RANDOM
        if not random and all(self.space[v] is GRAPH for v in ins.values()):
            self.space[node] = GRAPH  # graph-level compute: once
            return
        A = ins.get("A")
        if A is None or A.kind is not Kind.MATRIX:
            self._refuse(f"{node.op.value} cannot be super-batched (no matrix input)")
        where = {k: self._alignment(node, k) for k in ins if k != "A"}
        if self.space[A] is LIST:  # matrices sampled batch by batch
            A = ins["A"] = self._memo(
                ("join", A),
                lambda: self._helper(
                    self.blocks.join_matrices, [A], {"n": self.n}, ENC, Kind.MATRIX, before=node
                ),
            )
            self.spec[A] = ("matrix", A)
        if self.space[A] is GRAPH and self._on_graph(node, where, random):
            return
        if random and self.space[A] is GRAPH:  # no frontier: the whole graph
            return self._draw_per_batch(node)
        # a batch's scalar (0-dim) edge operand meets its own edges only when run per batch
        scalar = any(self.space[ins[k]] is LIST and a == "edges" for k, a in where.items())
        if not random and (self.space[A] is GRAPH or scalar):
            names = {k: str(i) for i, k in enumerate(ins)}  # dense: 0, 1, ...
            return self._as_per_batch(
                node,
                self.blocks.RunOp(node.op, {k: node.attrs[k] for k in node.info.attrs}),
                ((), {k: Ref(i) for k, i in names.items()}),
                {names[k]: v for k, v in ins.items()},
            )
        for k, a in where.items():  # an encoded matrix: run once, as is
            ins[k] = self._encoded(ins[k], node, k, a in ("col_ids", "row_ids"))
        if random or "batches" in node.info.attrs:  # the op decodes the super-batch
            node.attrs["batches"] = (self.N, self.n)
        self.space[node] = ENC
        out = self._alignment(node, None)
        if out == "scalar":  # one value per mini-batch
            return self._per_batch_scalars(node)
        if node.kind is Kind.MATRIX:
            self.spec[node] = ("matrix", node)
        elif out == "set":  # columns then rows, batch by batch
            node.attrs["batches"] = (self.N, self.n)
            self.spec[node] = ("ids", None)
        else:
            self.spec[node] = (out, None if out == "ids" else A)

    def _per_batch_scalars(self, node: Node):
        """An op whose result is one value for its whole matrix (``A.sum()``), run once on
        the super-batch matrix with ``attrs["batches"] = (N, n)``: an ``(N,)`` tensor of the
        mini-batches' values, unbound (``blocks.unbind``) into their 0-dim tensors: per
        batch, as dense code's ``p.sum()`` is, and a scalar the elementwise code after it
        (``p / s``) takes at once for all batches."""
        node.attrs["batches"] = (self.N, self.n)
        per = self._helper(self.blocks.unbind, [node], {}, LIST, Kind.ANY, after=node)
        self.g.replace_uses(node, per)
        per.inputs["0"] = node
        self.scalars.add(per)

    def _draw_per_batch(self, node: Node):
        """A random op on the graph itself without a frontier (GraphSAINT's node draws from
        the whole graph): it runs once per batch, batch ``b`` with mini-batch ``first + b``'s
        key and its inputs as that mini-batch sees them (``blocks.PerBatchDraw``, which the
        lowering and the interpreter build for ``attrs["per_batch"]``: the names of its
        per-batch inputs). Its result is per batch (the rewrite's LIST)."""
        ins = node.inputs
        per = frozenset(k for k, v in ins.items() if self.space[v] is not GRAPH)
        node.inputs = {
            k: self._split(v, node) if self.space[v] is ENC else v for k, v in ins.items()
        }
        node.attrs["batches"] = (self.N, self.n)
        node.attrs["per_batch"] = per
        self.space[node] = LIST

    def _alignment(self, node: Node, name):
        """How input ``name`` (None: the result) lines up with the op's matrix, as a
        ``blocks.split`` spec (the op's definition says it, ``AXIS``/``STEPS`` resolved)."""
        a = node.info.alignment(name, node.attrs)
        if a is None:
            if name is not None:
                self._refuse(
                    f"the op table does not say how input {name!r} of "
                    f"{node.op.value} lines up with its matrix (gsample.ir.ops)"
                )
            return None
        return tuple(_SPEC[x] for x in a) if isinstance(a, tuple) else _SPEC[a]

    def _on_graph(self, node: Node, where: dict, random: bool) -> bool:
        """A sparse op on the graph itself with a frontier: the block-diagonal graph's op.
        False when there is no frontier or (a pure op) its weights are per batch."""
        cols = [k for k, a in where.items() if a == "col_ids"]
        ins = node.inputs
        # a pure op that takes the super-batch itself takes its row ids encoded too
        # (A[rows, cols], ShaDow's induced subgraph: once for all batches, where a column
        # slice of the block-diagonal graph would hold every frontier edge N times over)
        row_ids = {k for k, a in where.items() if a == "row_ids" and node.info.batched}
        # and a value per mini-batch (a scalar input: stacked, (N,), below), which it reads
        # per batch (SLICE_REDUCE's scale, LADIES' totals)
        per_batch = {
            k
            for k, a in where.items()
            if a == "scalar" and node.info.batched and self.space[ins[k]] is LIST
        }
        if not cols or (
            not random
            and any(
                self.space[ins[k]] is not GRAPH
                for k in where
                if k != cols[0] and k not in row_ids and k not in per_batch
            )
        ):
            return False
        c = cols[0]
        enc_cols = ins[c] = self._encoded(ins[c], node, c, True)
        for k in where:  # weights: joined, or shared as they are; row ids encoded
            if k == c:
                continue
            if where[k] == "scalar" and self.space[ins[k]] is LIST:  # one a mini-batch: (N,)
                v = ins[k]
                ins[k] = self._memo(
                    ("stack", v),
                    lambda v=v: self._helper(
                        self.blocks.stack, [v], {}, ENC, Kind.TENSOR, before=node
                    ),
                )
                continue
            ids = k in row_ids
            ins[k] = self._encoded(ins[k], node, k, ids, tile=ids)
        self.space[node] = ENC
        if random or node.info.batched:  # the op takes the encoded frontier itself
            node.attrs["batches"] = (self.N, self.n)
            if node.kind is Kind.MATRIX:
                self.spec[node] = ("matrix", node)
                self.columns_of.setdefault(enc_cols, node)
            elif self._alignment(node, None) == "rows":  # rows of the graph: n per batch
                self.spec[node] = ("nodes", None)
            elif self._alignment(node, None) == "walks":  # a row per frontier node, encoded
                self.spec[node] = ("walks", enc_cols)
            elif self._alignment(node, None) == "entries":  # a value per frontier entry
                self.spec[node] = ("entries", enc_cols)
            elif self._alignment(node, None) == "scalar":  # a value per mini-batch
                self._per_batch_scalars(node)
            else:
                self._refuse(
                    f"the op table does not say how the result of {node.op.value} "
                    "lines up with its matrix as rows of the graph (gsample.ir.ops)"
                )
            return True
        ins[c] = self._helper(
            self.blocks.decode_cols,
            [enc_cols],
            {"n": self.n, "copies": self.N},
            ENC,
            Kind.TENSOR,
            before=node,
        )
        enc = self._helper(
            self.blocks.encode_columns,
            [node, enc_cols],
            {"n": self.n, "copies": self.N},
            ENC,
            Kind.MATRIX,
            after=node,
        )
        self.g.replace_uses(node, enc)
        enc.inputs["0"] = node
        self.spec[enc] = ("matrix", enc)
        return True
