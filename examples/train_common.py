"""What the training examples share: blocks to per-layer ``edge_index``, a DGL-style model over
them (PyG's ``SAGEConv`` or ``GraphConv``), a split, an epoch loop and full-batch evaluation.

``examples/demo.py``, ``train_graphsage.py`` and ``train_ladies.py`` import it as
``train_common`` (their folder is on ``sys.path`` when they run as scripts).

The model reads a mini-batch DGL-style: one ``edge_index`` per block, in local ids of
``batch.n_id`` (the loader's node order: seeds first, and each block's columns a prefix of
it, see ``gsample.loader.features.batch_nodes``). Layer ``j`` of an ``L``-layer model runs on block
``L - 1 - j`` (the input layer on the outermost hop) and computes the first ``C`` rows of
``h``, the block's columns; the last layer's rows are the seeds'. ``Batch.to_pyg()`` gives one
joined ``edge_index`` with PyG's hop semantics instead (and ``num_sampled_nodes`` for
``trim_to_layer``): a PyG-style model could train on that with no helper at all.
"""

import copy
import itertools
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphConv, SAGEConv


@dataclass
class Layer:
    """One block as a PyG layer reads it (local ids in ``batch.n_id``).

    Attributes
    ----------
    edge_index : LongTensor, shape (2, E)
        ``[source, destination]``: a sampled edge ``row -> column``.
    num_dst : int
        The block's columns, ``n_id[:num_dst]``: the rows this layer computes.
    edge_weight : Tensor, shape (E,), or None
        The block's values (LADIES / FastGCN importance weights).
    """

    edge_index: torch.Tensor
    num_dst: int
    edge_weight: torch.Tensor = None


def block_layers(batch, check: bool = True):
    """The layers of a DGL-style mini-batch, input layer first (``batch.out[::-1]``).

    Parameters
    ----------
    batch : gs.Batch
        With ``n_id`` (a loader given ``features`` or ``labels``) and blocks whose columns
        are a prefix of ``n_id`` (GraphSAGE, LADIES, FastGCN as in ``examples/``).
    check : bool
        Check that prefix (one read-back per block on a GPU); a training loop over a
        sampler that makes its frontiers with ``all_nodes()`` (columns first) may skip it,
        so the host queues the next step without waiting.

    Returns
    -------
    list of Layer
        ``layers[j]`` for model layer ``j``; ``layers[-1].num_dst == len(batch.seeds)``.

    Examples
    --------
    >>> layers = block_layers(batch)
    >>> h = model(batch.x, layers)           # (len(batch.seeds), classes)
    """
    n_id = batch.n_id
    order = torch.argsort(n_id)
    sorted_ids = n_id[order]

    def local(ids):
        return order[torch.searchsorted(sorted_ids, ids)]

    layers = []
    for block in reversed(batch.out):
        csc = block.csc
        cols = csc.global_cols()
        if check and not torch.equal(n_id[: cols.numel()], cols):
            raise ValueError(
                "batch.out: a block's columns are not a prefix of batch.n_id "
                "(a DGL-style sampler is needed; use batch.to_pyg() otherwise)"
            )
        src = local(csc.global_rows(csc.rows))
        dst = csc.edge_cols()
        weight = None if csc.values is None else csc.value_tensor()
        layers.append(Layer(torch.stack([src, dst]), cols.numel(), weight))
    return layers


class Net(torch.nn.Module):
    """A DGL-style GNN of PyG layers: ``SAGEConv`` (mean) or ``GraphConv`` (weighted sum).

    Parameters
    ----------
    in_dim, hidden, out_dim : int
    num_layers : int
    conv : {"sage", "graph"}
        ``"graph"`` takes edge weights (LADIES' column-normalised importance weights: a
        weighted mean).
    dropout : float

    Examples
    --------
    >>> model = Net(32, 64, 8)
    >>> logits = model(batch.x, block_layers(batch))          # sampled mini-batch
    >>> logits = model.full(x, edge_index)                    # every node, whole graph
    """

    def __init__(self, in_dim, hidden, out_dim, num_layers=2, conv="sage", dropout=0.5):
        super().__init__()
        dims = [in_dim] + [hidden] * (num_layers - 1) + [out_dim]
        make = (
            (lambda i, o: SAGEConv(i, o))
            if conv == "sage"
            else (lambda i, o: GraphConv(i, o, aggr="add"))
        )
        self.convs = torch.nn.ModuleList(make(i, o) for i, o in itertools.pairwise(dims))
        self.weighted = conv != "sage"
        self.dropout = dropout

    def _conv(self, conv, h_src, h_dst, edge_index, weight):
        size = (h_src.size(0), h_dst.size(0))
        if self.weighted:
            return conv((h_src, h_dst), edge_index, edge_weight=weight, size=size)
        return conv((h_src, h_dst), edge_index, size=size)

    def _act(self, h, last):
        return h if last else F.dropout(F.relu(h), self.dropout, self.training)

    def forward(self, x, layers):
        h = x
        for j, (conv, layer) in enumerate(zip(self.convs, layers)):
            h = self._act(
                self._conv(conv, h, h[: layer.num_dst], layer.edge_index, layer.edge_weight),
                j == len(self.convs) - 1,
            )
        return h

    def full(self, x, edge_index, edge_weight=None):
        """Every node's output on the whole graph (evaluation, and the full-batch model)."""
        h = x
        for j, conv in enumerate(self.convs):
            h = self._act(self._conv(conv, h, h, edge_index, edge_weight), j == len(self.convs) - 1)
        return h


def split(y, train=0.6, val=0.2, seed=0):
    """A random split of the nodes, stratified by class: ``(train, val, test)`` ids."""
    g = torch.Generator().manual_seed(seed)
    parts = ([], [], [])
    for c in torch.unique(y.cpu()):
        ids = torch.nonzero(y.cpu() == c).flatten()
        ids = ids[torch.randperm(ids.numel(), generator=g)]
        a, b = int(train * ids.numel()), int((train + val) * ids.numel())
        for part, chunk in zip(parts, (ids[:a], ids[a:b], ids[b:])):
            part.append(chunk)
    return tuple(torch.sort(torch.cat(p)).values.to(y.device) for p in parts)


def graph_edges(A):
    """``(edge_index, values)`` of a whole gs.Matrix, ``row -> column``."""
    r, c, _ = A.edges()
    return torch.stack([r, c]), (None if A.csc.values is None else A.csc.value_tensor())


def accuracy(logits, y):
    return float((logits.argmax(-1) == y).float().mean())


@torch.no_grad()
def evaluate(model, x, edge_index, y, ids, edge_weight=None):
    """Accuracy of ``model`` on nodes ``ids``, run full-batch on the whole graph."""
    model.eval()
    return accuracy(model.full(x, edge_index, edge_weight)[ids], y[ids])


class Clock:
    """Spans of training steps: CUDA events on the current stream (summed once, at the end:
    no host sync per step, so the host queues the next step while the GPU runs this one),
    or wall time on a CPU."""

    def __init__(self, cuda: bool):
        self.cuda, self.spans, self.seconds = cuda, [], 0.0

    def start(self):
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            return e
        return time.perf_counter()

    def stop(self, begun) -> None:
        if self.cuda:
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            self.spans.append((begun, e))
        else:
            self.seconds += time.perf_counter() - begun

    def total(self) -> float:
        """Seconds in all spans (on a GPU: call after a synchronise)."""
        return self.seconds + sum(a.elapsed_time(b) for a, b in self.spans) / 1e3


def step(model, optimizer, batch, check: bool = True) -> torch.Tensor:
    """One training step on a gathered mini-batch; the loss (a device scalar: no sync).

    ``check`` is :func:`block_layers`'s (skip it for samplers whose frontiers are
    ``all_nodes()``: a read-back per block)."""
    B = batch.seeds.numel()
    optimizer.zero_grad()
    out = model(batch.x, block_layers(batch, check=check))
    loss = F.cross_entropy(out[:B].float(), batch.y[:B])
    loss.backward()
    optimizer.step()
    return loss.detach()


class ModelOnly:
    """The model's own time: ``model`` (a copy, with a fresh Adam: ``model`` is kept)
    trained on mini-batches ``ready`` sampled and gathered beforehand, the baseline a
    loader's epoch is set against (same model, dtype and device). Made once (two warm-up
    steps: Adam's state, the allocator's blocks); each call times one pass over ``ready``,
    so a benchmark can interleave passes with its epochs and take a median (one pass timed
    apart from the epochs moves with the GPU's clocks and the host's load).

    Examples
    --------
    >>> timer = ModelOnly(model, 0.01, ready, check=False)
    >>> per_batch = statistics.median(timer() for _ in range(3))   # seconds a mini-batch
    """

    def __init__(self, model, lr: float, ready: list, check: bool = True):
        self.model = copy.deepcopy(model)
        self.model.train()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.ready, self.check = ready, check
        self.cuda = ready[0].x.is_cuda
        for batch in ready[:2]:
            step(self.model, self.optimizer, batch, check)
        if self.cuda:
            torch.cuda.synchronize()

    def __call__(self) -> float:
        """Seconds per mini-batch of one pass over the ready mini-batches."""
        start = time.perf_counter()
        for batch in self.ready:
            step(self.model, self.optimizer, batch, self.check)
        if self.cuda:
            torch.cuda.synchronize()
        return (time.perf_counter() - start) / len(self.ready)


def model_only(model, lr: float, ready: list, check: bool = True) -> float:
    """Seconds per mini-batch of one :class:`ModelOnly` pass over ``ready``."""
    return ModelOnly(model, lr, ready, check)()


def train_epoch(model, loader, optimizer, log=None, log_every=0, check: bool = True):
    """One epoch over a ``gs.DataLoader`` made with ``features`` and ``labels``.

    Parameters
    ----------
    log : callable, optional
        With ``log_every > 0``: called as ``log(f"batch {i} / {n}")`` after every
        ``log_every``-th mini-batch (progress of a long epoch).
    check : bool
        :func:`block_layers`'s check of each mini-batch's blocks.

    Returns
    -------
    dict
        ``epoch`` (wall seconds, the device synchronised at the end only), ``train``
        (seconds in forward / backward / step: CUDA-event spans on a GPU, so training
        overlaps what the loader's stages queue), ``sample`` and ``gather`` (the loader's
        stage times: with ``pipeline`` they overlap training), ``loss`` (mean over
        mini-batches).
    """
    model.train()
    cuda = loader.A.device.type == "cuda"
    clock, losses = Clock(cuda), []
    start = time.perf_counter()
    every = log_every if log is not None and log_every > 0 else 0
    for i, batch in enumerate(loader, 1):
        t = clock.start()
        losses.append(step(model, optimizer, batch, check))
        clock.stop(t)
        if every and i % every == 0:
            log(f"batch {i} / {len(loader)}")
    if cuda:
        torch.cuda.synchronize()
    return {
        "epoch": time.perf_counter() - start,
        "train": clock.total(),
        "sample": loader.sample_seconds,
        "gather": loader.gather_seconds,
        "loss": float(torch.stack(losses).float().mean()) if losses else float("nan"),
    }


def train_full_batch(
    model,
    x,
    edge_index,
    y,
    train_ids,
    val_ids,
    epochs,
    lr=0.01,
    weight_decay=5e-4,
    edge_weight=None,
):
    """Train ``model`` full-batch (PyG's usual way); returns the state with the best
    validation accuracy loaded, and that accuracy."""
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, state = -1.0, None
    for _ in range(epochs):
        model.train()
        optimizer.zero_grad()
        out = model.full(x, edge_index, edge_weight)
        F.cross_entropy(out[train_ids], y[train_ids]).backward()
        optimizer.step()
        acc = evaluate(model, x, edge_index, y, val_ids, edge_weight)
        if acc > best:
            best, state = acc, {k: v.clone() for k, v in model.state_dict().items()}
    model.load_state_dict(state)
    return best


def run(
    A,
    x,
    y,
    sampler,
    *,
    conv="sage",
    epochs=30,
    full_epochs=200,
    batch_size=256,
    hidden=64,
    lr=0.01,
    weight_decay=5e-4,
    pipeline=True,
    seed=0,
    full_weight=None,
    baseline=True,
    log=print,
):
    """Train a 2-layer model with ``sampler`` mini-batches and, with ``baseline``, the same
    model full-batch, on one split of ``y``; print one line per epoch and the results.

    Parameters
    ----------
    A : gs.Matrix
        The graph the sampler samples (LADIES: the normalised one).
    x, y : Tensor
        Features (N, F) and classes (N,), on any device (the loader gathers them).
    sampler : callable
        ``sampler(A, seeds) -> blocks``, DGL-style (a compiled one samples faster).
    conv : {"sage", "graph"}
        See :class:`Net`; ``full_weight`` (shape (E,), ``A.edges()`` order) weights the
        whole graph's edges for evaluation and the full-batch model.
    epochs, full_epochs : int
        Epochs of the sampled and of the full-batch model (each keeps its best validation
        epoch).

    Returns
    -------
    dict
        ``sampled`` and ``full`` test accuracies, the sampled model's ``epochs`` (per epoch
        ``epoch``, ``train``, ``sample``, ``gather`` seconds, ``loss``, ``val``).
    """
    import gsample as gs

    torch.manual_seed(seed)
    gs.manual_seed(seed)
    train_ids, val_ids, test_ids = split(y, seed=seed)
    x_dev, y_dev = x.to(A.device), y.to(A.device)
    edge_index, _ = graph_edges(A)
    loader = gs.DataLoader(
        A,
        sampler,
        train_ids.to(A.device),
        batch_size,
        seed=seed,
        features=x,
        labels=y,
        pipeline=pipeline,
    )
    classes = int(y.max()) + 1
    model = Net(x.shape[1], hidden, classes, conv=conv).to(A.device)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best, state, stats = -1.0, None, []
    for e in range(epochs):
        s = train_epoch(model, loader, optimizer)
        s["val"] = evaluate(model, x_dev, edge_index, y_dev, val_ids, full_weight)
        stats.append(s)
        if s["val"] > best:
            best, state = s["val"], {k: v.clone() for k, v in model.state_dict().items()}
        log(
            f"  epoch {e:2d}: sampling {s['sample']:.3f} s, gathering {s['gather']:.3f} s, "
            f"training {s['train']:.3f} s, epoch {s['epoch']:.3f} s; loss {s['loss']:.3f}, "
            f"val acc {s['val']:.3f}"
        )
    model.load_state_dict(state)
    result = {
        "sampled": evaluate(model, x_dev, edge_index, y_dev, test_ids, full_weight),
        "epochs": stats,
        "loader": loader,
    }
    if baseline:
        torch.manual_seed(seed)
        full = Net(x.shape[1], hidden, classes, conv=conv).to(A.device)
        train_full_batch(
            full,
            x_dev,
            edge_index,
            y_dev,
            train_ids,
            val_ids,
            full_epochs,
            lr,
            weight_decay,
            full_weight,
        )
        result["full"] = evaluate(full, x_dev, edge_index, y_dev, test_ids, full_weight)
    return result
