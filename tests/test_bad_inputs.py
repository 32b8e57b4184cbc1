"""Issue 32, item 5 (the CPU residue): every bad input of the public API is a clear Python
exception whose message names the argument, on every path (eager, compiled, loader, CLI).

One battery, one case per line: ``(id, call, exception type, regex)``; the regex names the
argument (or the command-line option). Each call runs with warnings turned into errors,
so an input that PyTorch would take with only a warning (a complex value cast to a real
one) fails the case instead of passing it. The complex cases are run a second time with
the backend instrumented: they are refused before any op runs, so no value is ever cast.
The documented behaviours that are not errors (integer and bool values promote as PyTorch
promotes them) are tested at the end.
"""

import contextlib
import fractions
import functools
import io
import pathlib
import warnings

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from torch_geometric.data import Data, HeteroData

import gsample as gs
from gsample import __main__ as gs_cli
from gsample.bench import cli as bench_cli
from gsample.hetero import metapath_walk

ROOT = pathlib.Path(__file__).resolve().parents[1]
# 0->1, 2->1, 3->1, 1->2, 2->2, 0->3, 4->0; node 5 isolated
EI = torch.tensor([[0, 2, 3, 1, 2, 0, 4], [1, 1, 1, 2, 2, 3, 0]])
N, E = 6, EI.shape[1]
BIG = 2**62
SEEDS = torch.tensor([1, 2])


def graph():
    return gs.Matrix.from_edge_index(EI, num_nodes=N, weight=torch.arange(1.0, E + 1))


def hetero():
    writes = torch.tensor([[0, 0, 1], [0, 1, 1]])  # author -> paper
    return gs.HeteroGraph(
        {("author", "writes", "paper"): writes, ("paper", "written_by", "author"): writes.flip(0)},
        num_nodes={"author": 2, "paper": 3},
    )


MP = [("author", "writes", "paper"), ("paper", "written_by", "author")]


def c64(*shape):
    return torch.ones(*shape, dtype=torch.complex64)


def eager(fn):
    """``fn(A)`` on a fresh graph."""
    return lambda: fn(graph())


def compiled(fn, *args):
    """``gs.compile(fn)(A, seeds, *args)``."""
    return lambda: gs.compile(fn)(graph(), SEEDS, *args)


def loader(fn, **options):
    """An epoch of ``gs.DataLoader`` over a compiled ``fn`` (two mini-batches)."""
    return lambda: list(
        gs.DataLoader(graph(), gs.compile(fn), torch.tensor([1, 2, 3, 0]), batch_size=2, **options)
    )


def argv_error(parse, argv):
    """Run a command line's parser (or its main) on ``argv``; a refusal (argparse prints its
    message and exits, or the command exits with its message) becomes a SystemExit whose
    text is that message, to match."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            parse(argv)
        except SystemExit as e:
            raise SystemExit(err.getvalue() + (e.code if isinstance(e.code, str) else "")) from None
    raise AssertionError(f"{argv} was accepted")


IR = functools.partial(argv_error, gs_cli.build_parser().parse_args)
IR_MAIN = functools.partial(argv_error, gs_cli.main)
BENCH = functools.partial(argv_error, bench_cli.parse)
TARGET = str(ROOT / "examples" / "graphsage.py") + ":graphsage"


def _uniform_k(A, s):
    return A[:, s].collective_sample(BIG, replace=True).row()


def _weighted_k(A, s):
    sub = A[:, s]
    return sub.collective_sample(BIG, node_probs=sub.sum(axis=1), replace=True).row()


def _edge_times(A, s, w):
    return (A[:, s] * w).sum(axis=0)


def _whole_times(A, s, w):
    return (A * w)[:, s].sum(axis=0)


def _bcast(A, s, v):
    return A[:, s].mul(v, 0).sum(axis=0)


def _times_1j(A, s):
    return (A[:, s] * 1j).sum(axis=0)


def _sample_probs(A, s, p):
    return A.individual_sample(1, probs=p).row()


COMPLEX_CASES = [
    # --- constructors: the weights
    (
        "scipy_complex",
        lambda: gs.Matrix.from_scipy(sp.coo_matrix(([1 + 2j], ([0], [1])), shape=(2, 2))),
        TypeError,
        r"^matrix: complex values \(dtype complex128\)",
    ),
    (
        "scipy_complex_csr",
        lambda: gs.Matrix.from_scipy(sp.eye(3, format="csr") * 1j),
        TypeError,
        r"^matrix: complex",
    ),
    (
        "edge_index_weight",
        lambda: gs.Matrix.from_edge_index(EI, weight=c64(E)),
        TypeError,
        r"^weight: complex values \(dtype torch.complex64\)",
    ),
    (
        "edge_index_weight_numpy",
        lambda: gs.Matrix.from_edge_index(EI, weight=np.ones(E) * 1j),
        TypeError,
        r"^weight: complex",
    ),
    (
        "edge_index_weight_list",
        lambda: gs.Matrix.from_edge_index(EI, weight=[1j] * E),
        TypeError,
        r"^weight: complex",
    ),
    (
        "csc_weight",
        lambda: gs.Matrix.from_csc(torch.tensor([0, 1, 2]), torch.tensor([1, 0]), weight=c64(2)),
        TypeError,
        r"^weight: complex",
    ),
    (
        "networkx_weight",
        lambda: gs.Matrix.from_networkx(nx.Graph([(0, 1, {"w": 2j})]), weight="w"),
        TypeError,
        r"^weight: edge \(0, 1\) has w=2j, complex",
    ),
    (
        "pyg_weight",
        lambda: gs.Matrix.from_pyg(Data(edge_index=EI, edge_weight=c64(E), num_nodes=N)),
        TypeError,
        r"^weight \(data\.edge_weight\): complex",
    ),
    (
        "hetero_pyg_weight",
        lambda: gs.HeteroGraph.from_pyg(_hetero_data(c64(2))),
        TypeError,
        r"^weight: complex",
    ),
    # --- edge maps: Python, NumPy and tensor scalars, edge tensors, either side
    *[
        (f"edge_map_{name}", eager(fn), TypeError, r"^other: complex values")
        for name, fn in [
            ("mul", lambda A: A * 1j),
            ("rmul", lambda A: 1j * A),
            ("add", lambda A: A + 1j),
            ("sub", lambda A: A - (1 + 0j)),
            ("rsub", lambda A: 1j - A),
            ("div", lambda A: A / 2j),
            ("rdiv", lambda A: 1j / A),
            ("pow", lambda A: A**1j),
            ("numpy_scalar", lambda A: A * np.complex64(1)),
            ("tensor_0d", lambda A: A * torch.tensor(1j)),
            ("tensor", lambda A: A * c64(E)),
            ("tensor_2d", lambda A: A + c64(E, 3)),
            ("numpy", lambda A: A * (np.ones(E) * 1j)),
            ("list", lambda A: A * [1j] * E),
        ]
    ],
    # --- broadcasts, products
    *[
        (
            f"broadcast_{op}",
            eager(lambda A, op=op: getattr(A, op)(c64(N), 0)),
            TypeError,
            r"^v: complex",
        )
        for op in ("mul", "div", "add", "sub")
    ],
    ("spmm", eager(lambda A: A @ c64(N)), TypeError, r"^D: complex"),
    ("spmm_2d", eager(lambda A: A @ c64(N, 4)), TypeError, r"^D: complex"),
    ("spmm_t", eager(lambda A: A.T @ c64(N)), TypeError, r"^D: complex"),
    ("sddmm_U", eager(lambda A: gs.sddmm(A, c64(N), torch.ones(N))), TypeError, r"^U: complex"),
    (
        "sddmm_V",
        eager(lambda A: gs.sddmm(A, torch.ones(N, 2), c64(N, 2), "mul")),
        TypeError,
        r"^V: complex",
    ),
    # --- probabilities and values of the select and walk ops
    ("probs", eager(lambda A: A.individual_sample(2, probs=c64(E))), TypeError, r"^probs: complex"),
    (
        "probs_replace",
        eager(lambda A: A.individual_sample(2, probs=c64(E), replace=True)),
        TypeError,
        r"^probs: complex",
    ),
    (
        "node_probs",
        eager(lambda A: A.collective_sample(2, node_probs=c64(N))),
        TypeError,
        r"^node_probs: complex",
    ),
    (
        "walk_probs",
        eager(lambda A: A.random_walk(SEEDS, 3, probs=c64(E))),
        TypeError,
        r"^probs: complex",
    ),
    (
        "from_neighbors_values",
        eager(lambda A: A.from_neighbors(torch.tensor([0]), torch.tensor([[1]]), c64(1, 1))),
        TypeError,
        r"^values: complex",
    ),
    # --- compiled samplers: at the program's boundary
    ("compiled_edge_tensor", compiled(_edge_times, c64(5)), TypeError, r"^other: complex"),
    (
        "compiled_whole_graph_edge_tensor",
        compiled(_whole_times, c64(E)),
        TypeError,
        r"^other: complex",
    ),
    ("compiled_python_scalar", compiled(_times_1j), TypeError, r"^other: complex"),
    ("compiled_broadcast", compiled(_bcast, c64(2)), TypeError, r"^v: complex"),
    ("compiled_probs", compiled(_sample_probs, c64(E)), TypeError, r"^probs: complex"),
]


def _hetero_data(weight):
    data = HeteroData()
    data["author"].num_nodes, data["paper"].num_nodes = 2, 3
    data["author", "writes", "paper"].edge_index = torch.tensor([[0, 1], [2, 2]])
    data["author", "writes", "paper"].edge_weight = weight
    return data


SIZE_CASES = [
    # --- k draws with replacement that no memory holds (issue: "Storage size calculation
    # overflowed" from PyTorch before)
    (
        "collective_k",
        eager(lambda A: A.collective_sample(BIG, replace=True)),
        ValueError,
        rf"^k: k = {BIG} row draws with replacement would need about .* bytes",
    ),
    (
        "collective_k_weighted",
        eager(lambda A: A.collective_sample(BIG, node_probs=torch.ones(N), replace=True)),
        ValueError,
        r"^k: k = \d+ row draws",
    ),
    ("collective_k_on_a_slice", eager(lambda A: _uniform_k(A, SEEDS)), ValueError, r"^k: "),
    ("collective_k_compiled", compiled(_uniform_k), ValueError, r"^k: k = \d+ row draws"),
    ("collective_k_compiled_weighted", compiled(_weighted_k), ValueError, r"^k: "),
    ("collective_k_loader", loader(_uniform_k), ValueError, r"^k: "),
    (
        "collective_k_super_batched",
        loader(_uniform_k, super_batch=2),
        ValueError,
        r"^k: (2 mini-batches x )?k = \d+ row draws",
    ),
    (
        "individual_k",
        eager(lambda A: A[:, SEEDS].individual_sample(BIG, replace=True)),
        ValueError,
        r"^k: 2 columns x k = \d+ draws",
    ),
    (
        "individual_k_alias",
        eager(
            lambda A: A[:, SEEDS].individual_sample(
                BIG, probs=torch.ones(5), replace=True, method="alias"
            )
        ),
        ValueError,
        r"^k: ",
    ),
    (
        "hetero_fanout",
        lambda: hetero().sample_neighbors({"paper": torch.tensor([1])}, BIG, replace=True),
        ValueError,
        r"^k: ",
    ),
    # --- walks, graphs
    ("walk_length", eager(lambda A: A.random_walk(SEEDS, BIG)), ValueError, r"^length: "),
    (
        "walk_length_memory",
        eager(lambda A: A.random_walk(torch.zeros(1 << 20, dtype=torch.long), 1 << 20)),
        ValueError,
        r"^length: 1048576 walks of 1048576 steps would need",
    ),
    (
        "edge_index_num_nodes",
        lambda: gs.Matrix.from_edge_index(EI, num_nodes=BIG),
        ValueError,
        r"^num_nodes: a graph of \d+ nodes would need",
    ),
    ("rmat_num_nodes", lambda: gs.datasets.rmat(BIG, 10), ValueError, r"^num_nodes: "),
    ("rmat_num_edges", lambda: gs.datasets.rmat(10, BIG), ValueError, r"^num_edges: "),
    (
        "planted_num_nodes",
        lambda: gs.datasets.planted_partition(2**40, 2),
        ValueError,
        r"^num_nodes: ",
    ),
    (
        "planted_num_features",
        lambda: gs.datasets.planted_partition(100, 2, num_features=2**40),
        ValueError,
        r"^num_features: 100 x \d+ features would need",
    ),
    (
        "planted_avg_degree",
        lambda: gs.datasets.planted_partition(100, 2, avg_degree=1e30),
        ValueError,
        r"^avg_degree: ",
    ),
    (
        "hetero_num_nodes_edge_index",
        lambda: gs.HeteroGraph(
            {("a", "r", "b"): torch.tensor([[0], [0]])}, num_nodes={"a": 2**60, "b": 1}
        ),
        ValueError,
        r"^num_nodes: ",
    ),
    (
        "hetero_num_nodes_matrix",
        lambda: gs.HeteroGraph(
            {("a", "r", "b"): gs.Matrix.from_edge_index(torch.tensor([[0], [0]]))},
            num_nodes={"a": 2**60, "b": 1},
        ),
        ValueError,
        r"^num_nodes: relations over \d+ nodes",
    ),
    (
        "edge_map_int_beyond_int64",
        eager(lambda A: A * 2**70),
        ValueError,
        r"^other: the integer \d+ does not fit in int64",
    ),
    (
        "edge_map_int_beyond_int64_compiled",
        compiled(lambda A, s: A[:, s] * 2**70),
        ValueError,
        r"^other: the integer \d+ does not fit in int64",
    ),
    (
        "gs_walk_length",
        eager(lambda A: gs.walk(lambda A, cur, prev, t: cur, A, SEEDS, BIG)),
        ValueError,
        r"^length: must be < 2\*\*31",
    ),
    (
        "gs_walk_length_memory",
        eager(
            lambda A: gs.walk(
                lambda A, cur, prev, t: cur,
                A,
                torch.zeros(1 << 20, dtype=torch.long),
                (1 << 31) - 1,
            )
        ),
        ValueError,
        r"^length: 1048576 walks of \d+ steps would need",
    ),
]


TYPE_CASES = [
    # --- sample sizes, flags, probabilities
    ("k_float", eager(lambda A: A.individual_sample(2.5)), TypeError, r"^k: must be an int"),
    ("k_numpy_float", eager(lambda A: A.collective_sample(np.float64(2))), TypeError, r"^k: "),
    ("k_str", eager(lambda A: A.collective_sample("2")), TypeError, r"^k: "),
    (
        "k_compiled_float",
        compiled(lambda A, s: A[:, s].individual_sample(2.5)),
        TypeError,
        r"^k: must be an int",
    ),
    (
        "compile_varargs",
        lambda: gs.compile(lambda A, seeds, *args: A[:, seeds]),
        TypeError,
        r"^fn: a compiled sampler's parameters must be named; .* takes \*args",
    ),
    (
        "stop_prob_above_1",
        eager(lambda A: A.random_walk(SEEDS, 3, stop_prob=1.5)),
        ValueError,
        r"^stop_prob: must be a probability in \[0, 1\], got 1.5",
    ),
    (
        "restart_prob_negative",
        eager(lambda A: A.random_walk(SEEDS, 3, restart_prob=-0.1)),
        ValueError,
        r"^restart_prob: ",
    ),
    (
        "jump_prob_nan",
        eager(lambda A: A.random_walk(SEEDS, 3, jump_prob=float("nan"))),
        ValueError,
        r"^jump_prob: .*nan",
    ),
    (
        "probs_sum_above_1",
        eager(lambda A: A.random_walk(SEEDS, 3, stop_prob=0.6, restart_prob=0.6)),
        ValueError,
        r"^stop_prob, restart_prob, jump_prob: must sum to at most 1",
    ),
    (
        "node2vec_p_zero",
        eager(lambda A: A.random_walk(SEEDS, 3, p=0)),
        ValueError,
        r"^p: must be finite and > 0",
    ),
    (
        "node2vec_q_negative",
        eager(lambda A: A.random_walk(SEEDS, 3, q=-0.5)),
        ValueError,
        r"^q: must be finite and > 0",
    ),
    (
        "node2vec_p_nan",
        eager(lambda A: A.random_walk(SEEDS, 3, p=float("nan"))),
        ValueError,
        r"^p: ",
    ),
    (
        "node2vec_q_inf",
        eager(lambda A: A.random_walk(SEEDS, 3, q=float("inf"))),
        ValueError,
        r"^q: ",
    ),
    ("node2vec_p_str", eager(lambda A: A.random_walk(SEEDS, 3, p="2")), TypeError, r"^p: "),
    (
        "walk_length_negative",
        eager(lambda A: A.random_walk(SEEDS, -1)),
        ValueError,
        r"^length: must be >= 0",
    ),
    ("walk_length_float", eager(lambda A: A.random_walk(SEEDS, 2.5)), TypeError, r"^length: "),
    ("random_count_p", eager(lambda A: A.random_count(SEEDS, p=1.5)), ValueError, r"^p: "),
    (
        "random_count_n",
        eager(lambda A: A.random_count(SEEDS, "binomial", n=2.5)),
        TypeError,
        r"^n: ",
    ),
    # --- probabilities and values of the wrong dtype (floating point needed)
    (
        "probs_int",
        eager(lambda A: A.individual_sample(1, probs=torch.arange(E))),
        TypeError,
        r"^probs: probabilities must be floating point",
    ),
    (
        "probs_bool",
        eager(lambda A: A.individual_sample(1, probs=torch.arange(E) > 2)),
        TypeError,
        r"^probs: ",
    ),
    (
        "node_probs_int",
        eager(lambda A: A.collective_sample(1, node_probs=torch.arange(N))),
        TypeError,
        r"^node_probs: ",
    ),
    (
        "walk_probs_int",
        eager(lambda A: A.random_walk(SEEDS, 3, probs=torch.arange(E))),
        TypeError,
        r"^probs: ",
    ),
    # --- sparse tensors
    (
        "edge_map_sparse",
        eager(lambda A: A * torch.ones(E).to_sparse()),
        TypeError,
        r"^other: sparse tensors",
    ),
    (
        "cols_sparse",
        eager(lambda A: A[:, torch.tensor([1]).to_sparse()]),
        TypeError,
        r"^cols: sparse",
    ),
    ("spmm_sparse", eager(lambda A: A @ torch.ones(N, 2).to_sparse()), TypeError, r"^D: sparse"),
    (
        "probs_sparse",
        eager(lambda A: A.individual_sample(1, probs=torch.ones(E).to_sparse())),
        TypeError,
        r"^probs: sparse",
    ),
    (
        "weight_sparse",
        lambda: gs.Matrix.from_edge_index(EI, weight=torch.ones(E).to_sparse()),
        TypeError,
        r"^weight: sparse",
    ),
    (
        "ids_beyond_int64",
        eager(lambda A: A[:, [2**64]]),
        TypeError,
        r"^cols: cannot convert list to a tensor \(.*64 bits",
    ),
    # --- datasets
    ("rmat_a_str", lambda: gs.datasets.rmat(10, 10, a="0.5"), TypeError, r"^a: "),
    ("rmat_b_nan", lambda: gs.datasets.rmat(10, 10, b=float("nan")), ValueError, r"^b: "),
    ("rmat_c_negative", lambda: gs.datasets.rmat(10, 10, c=-0.1), ValueError, r"^c: "),
    (
        "rmat_abc_sum",
        lambda: gs.datasets.rmat(10, 10, a=0.5, b=0.3, c=0.3),
        ValueError,
        r"^a, b, c: ",
    ),
    (
        "rmat_seed_float",
        lambda: gs.datasets.rmat(10, 10, seed=1.5),
        TypeError,
        r"^seed: must be an int",
    ),
    (
        "rmat_weighted_str",
        lambda: gs.datasets.rmat(10, 10, weighted="yes"),
        TypeError,
        r"^weighted: must be True or False",
    ),
    ("rmat_progress_int", lambda: gs.datasets.rmat(10, 10, progress=1), TypeError, r"^progress: "),
    (
        "rmat_chunk_zero",
        lambda: gs.datasets.rmat(10, 10, chunk=0),
        ValueError,
        r"^chunk: must be >= 1, got 0",
    ),
    (
        "rmat_chunk_negative",
        lambda: gs.datasets.rmat(10, 10, chunk=-1),
        ValueError,
        r"^chunk: must be >= 1, got -1",
    ),
    (
        "rmat_device_name",
        lambda: gs.datasets.rmat(10, 10, device="gpu"),
        ValueError,
        r"^device: 'gpu' is not a device",
    ),
    (
        "rmat_device_meta",
        lambda: gs.datasets.rmat(10, 10, device="meta"),
        ValueError,
        r"^device: gsample runs on 'cpu' or 'cuda'",
    ),
    ("rmat_num_nodes_float", lambda: gs.datasets.rmat(10.0, 10), TypeError, r"^num_nodes: "),
    (
        "planted_avg_degree_nan",
        lambda: gs.datasets.planted_partition(100, 2, avg_degree=float("nan")),
        ValueError,
        r"^avg_degree: must be finite",
    ),
    (
        "planted_avg_degree_inf",
        lambda: gs.datasets.planted_partition(100, 2, avg_degree=float("inf")),
        ValueError,
        r"^avg_degree: ",
    ),
    (
        "planted_avg_degree_str",
        lambda: gs.datasets.planted_partition(100, 2, avg_degree="3"),
        TypeError,
        r"^avg_degree: must be a real number",
    ),
    (
        "planted_homophily",
        lambda: gs.datasets.planted_partition(100, 2, homophily=1.5),
        ValueError,
        r"^homophily: ",
    ),
    (
        "planted_noise_inf",
        lambda: gs.datasets.planted_partition(100, 2, noise=float("inf")),
        ValueError,
        r"^noise: must be finite",
    ),
    (
        "planted_seed_str",
        lambda: gs.datasets.planted_partition(100, 2, seed="0"),
        TypeError,
        r"^seed: ",
    ),
    (
        "planted_device",
        lambda: gs.datasets.planted_partition(100, 2, device="tpu"),
        ValueError,
        r"^device: ",
    ),
    (
        "read_snap_path_none",
        lambda: gs.datasets.read_snap(None),
        TypeError,
        r"^path: expected a str or os.PathLike",
    ),
    (
        "read_snap_relabel_str",
        lambda: gs.datasets.read_snap("x.txt", relabel="no"),
        TypeError,
        r"^relabel: ",
    ),
    (
        "read_snap_undirected_int",
        lambda: gs.datasets.read_snap("x.txt", undirected=1),
        TypeError,
        r"^undirected: ",
    ),
    ("cora_path_int", lambda: gs.datasets.cora(5), TypeError, r"^path: "),
    # --- graph inputs
    (
        "scipy_weight_str",
        lambda: gs.Matrix.from_scipy(sp.eye(3), weight="no"),
        TypeError,
        r"^weight: must be True or False",
    ),
    (
        "networkx_weight_not_a_name",
        lambda: gs.Matrix.from_networkx(nx.path_graph(3), weight=1),
        TypeError,
        r"^weight: the name of an edge attribute",
    ),
    (
        "networkx_weight_str_value",
        lambda: gs.Matrix.from_networkx(nx.Graph([(0, 1, {"w": "heavy"})]), weight="w"),
        TypeError,
        r"^weight: edge \(0, 1\) has w='heavy', not a real number",
    ),
    (
        "pyg_weight_not_a_name",
        lambda: gs.Matrix.from_pyg(Data(edge_index=EI, num_nodes=N), weight=0),
        TypeError,
        r"^weight: the name of an edge attribute",
    ),
    (
        "placement_device",
        eager(lambda A: A.to("gpu")),
        ValueError,
        r"^device: 'gpu' is not a device",
    ),
    ("placement_name", eager(lambda A: A.to("cpu", placement="host")), ValueError, r"^placement: "),
    (
        "placement_budget_str",
        eager(lambda A: A.to("cpu", placement="auto", budget="1")),
        TypeError,
        r"^budget: ",
    ),
    # --- heterogeneous graphs
    (
        "hetero_replace_str",
        lambda: hetero().sample_neighbors({"paper": torch.tensor([0])}, 2, replace="no"),
        TypeError,
        r"^replace: ",
    ),
    (
        "hetero_weighted_int",
        lambda: hetero().sample_neighbors({"paper": torch.tensor([0])}, 2, weighted=1),
        TypeError,
        r"^weighted: ",
    ),
    (
        "hetero_fanout_float",
        lambda: hetero().sample_neighbors({"paper": torch.tensor([0])}, 2.5),
        TypeError,
        r"^fanouts: a fanout must be an int",
    ),
    (
        "hetero_fanout_below_minus_1",
        lambda: hetero().sample_neighbors({"paper": torch.tensor([0])}, [2, -2]),
        ValueError,
        r"^fanouts\[1\]: ",
    ),
    (
        "hetero_seeds_float",
        lambda: hetero().sample_neighbors({"paper": torch.tensor([0.0])}, 2),
        TypeError,
        r"^seeds\['paper'\]: node ids must be an integer tensor",
    ),
    (
        "hetero_restart_str",
        lambda: hetero().metapath_walk(torch.tensor([0]), MP, restart_prob="0.1"),
        TypeError,
        r"^restart_prob: must be a float or a sequence of floats, got str",
    ),
    (
        "hetero_restart_above_1",
        lambda: hetero().metapath_walk(torch.tensor([0]), MP, restart_prob=1.5),
        ValueError,
        r"^restart_prob: ",
    ),
    (
        "hetero_restart_nan",
        lambda: hetero().metapath_walk(torch.tensor([0]), MP, restart_prob=float("nan")),
        ValueError,
        r"^restart_prob: ",
    ),
    (
        "hetero_restart_list_str",
        lambda: hetero().metapath_walk(torch.tensor([0]), MP, restart_prob=[0.0, "x"]),
        TypeError,
        r"^restart_prob\[1\]: ",
    ),
    (
        "hetero_direction",
        lambda: hetero().metapath_walk(torch.tensor([0]), MP, direction="up"),
        ValueError,
        r"^direction: ",
    ),
    (
        "metapath_walk_not_matrices",
        lambda: metapath_walk([EI], torch.tensor([0])),
        TypeError,
        r"^relations\[0\]: expected a gs.Matrix, got Tensor",
    ),
    (
        "metapath_walk_str",
        lambda: metapath_walk("writes", torch.tensor([0])),
        TypeError,
        r"^relations: expected a list of gs.Matrix",
    ),
    (
        "metapath_walk_no_steps_float_seeds",
        lambda: metapath_walk([], torch.tensor([1.0])),
        TypeError,
        r"^seeds: node ids must be an integer tensor",
    ),
    (
        "hetero_num_nodes_float",
        lambda: gs.HeteroGraph(
            {("a", "r", "b"): torch.tensor([[0], [0]])}, num_nodes={"a": 1.0, "b": 1}
        ),
        TypeError,
        r"^num_nodes\['a'\]: ",
    ),
]


CLI_CASES = [
    # python -m gsample ir / calibrate: argparse refuses, naming the option
    *[
        (
            f"ir_{opt}_{bad}",
            functools.partial(IR, ["ir", TARGET, f"--{opt}", bad]),
            SystemExit,
            rf"argument --{opt}: must be an integer >= {low}, got '{bad}'",
        )
        for opt, low, bads in [
            ("batch-size", 1, ("-3", "0", "2.5", "x")),
            ("num-nodes", 1, ("-5", "0")),
            ("num-edges", 0, ("-1",)),
            ("seed", 0, ("-1", "1.5")),
        ]
        for bad in bads
    ],
    (
        "ir_graph_kind",
        functools.partial(IR, ["ir", TARGET, "--graph", "csv"]),
        SystemExit,
        r"argument --graph: expected 'rmat' or 'snap PATH', got 'csv'",
    ),
    (
        "ir_graph_snap_no_path",
        functools.partial(IR, ["ir", TARGET, "--graph", "snap"]),
        SystemExit,
        r"argument --graph: expected 'rmat' or 'snap PATH'",
    ),
    (
        "ir_graph_snap_missing",
        functools.partial(IR, ["ir", TARGET, "--graph", "snap", "/no/such.txt"]),
        SystemExit,
        r"argument --graph: /no/such.txt: no such file",
    ),
    (
        "ir_format",
        functools.partial(IR, ["ir", TARGET, "--format", "xml"]),
        SystemExit,
        r"argument --format: invalid choice: 'xml'",
    ),
    (
        "ir_arg",
        functools.partial(IR, ["ir", TARGET, "--arg", "k"]),
        SystemExit,
        r"argument --arg: --arg 'k': expected name=value",
    ),
    (
        "ir_num_nodes_too_large",
        functools.partial(IR_MAIN, ["ir", TARGET, "--num-nodes", str(2**50)]),
        SystemExit,
        r"error: --num-nodes / --num-edges: num_nodes: a graph of \d+ nodes would",
    ),
    (
        "calibrate_device",
        functools.partial(IR, ["calibrate", "--device", "gpu"]),
        SystemExit,
        r"argument --device: expected cpu, cuda or cuda:N, got 'gpu'",
    ),
    *[
        (
            f"calibrate_{opt}",
            functools.partial(IR, ["calibrate", f"--{opt}", "0"]),
            SystemExit,
            rf"argument --{opt}: must be an integer >= 1, got '0'",
        )
        for opt in ("num-nodes", "avg-degree", "repeats", "threads")
    ],
    (
        "calibrate_backend",
        functools.partial(IR, ["calibrate", "--backend", "jax"]),
        SystemExit,
        r"argument --backend: invalid choice",
    ),
    # python -m gsample.bench
    *[
        (
            f"bench_{opt}_{bad}",
            functools.partial(BENCH, [f"--{opt}", bad]),
            SystemExit,
            rf"argument --{opt}: must be an integer >= {low}, got '{bad}'",
        )
        for opt, low, bads in [
            ("seeds", 1, ("-1", "0")),
            ("batch-size", 1, ("0", "2.5")),
            ("repeats", 1, ("x",)),
            ("walk-length", 1, ("0",)),
            ("slow-batches", 1, ("0",)),
            ("threads", 1, ("0",)),
            ("profile-batches", 0, ("-1",)),
        ]
        for bad in bads
    ],
    *[
        (
            f"bench_super_batch_{bad}",
            functools.partial(BENCH, ["--super-batch", bad]),
            SystemExit,
            rf"argument --super-batch: must be 'auto' or an integer >= 1, got '{bad}'",
        )
        for bad in ("0", "x")
    ],
    *[
        (
            f"bench_batches_{bad}",
            functools.partial(BENCH, ["--batches", bad]),
            SystemExit,
            rf"argument --batches: expected WORKLOAD=N .* got '{bad}'",
        )
        for bad in ("graphsage", "graphsage=0", "nope=3")
    ],
    *[
        (
            f"bench_graph_{i}",
            functools.partial(BENCH, ["--graph", bad]),
            SystemExit,
            rf"error: --graph {bad}: {why}",
        )
        for i, (bad, why) in enumerate(
            [
                ("rmat:big:1", "expected rmat:NUM_NODES:NUM_EDGES"),
                ("rmat:0:5", "expected rmat"),
                ("rmat:5", "expected"),
                ("/no/such.txt", "no such file"),
            ]
        )
    ],
    (
        "bench_name",
        functools.partial(BENCH, ["--name", "a/b"]),
        SystemExit,
        r"argument --name: must be a file-name prefix",
    ),
    (
        "bench_out",
        functools.partial(BENCH, ["--out", __file__]),
        SystemExit,
        r"argument --out: .*: exists and is not a directory",
    ),
    (
        "bench_sdist",
        functools.partial(BENCH, ["--torch-cluster-sdist", "/no/such.tar.gz"]),
        SystemExit,
        r"argument --torch-cluster-sdist: /no/such.tar.gz: no such file",
    ),
    *[
        (
            f"bench_{opt}",
            functools.partial(BENCH, [f"--{opt}", "nope"]),
            SystemExit,
            rf"argument --{opt}: invalid choice: 'nope'",
        )
        for opt in ("device", "workloads", "modes", "peers")
    ],
]

CASES = COMPLEX_CASES + SIZE_CASES + TYPE_CASES + CLI_CASES


def test_case_ids_are_unique():
    ids = [c[0] for c in CASES]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("call, exc, match", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error_naming_the_argument(call, exc, match):
    gs.manual_seed(0)
    with warnings.catch_warnings():
        # a value cast with only a warning (complex -> real) fails the case
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        with pytest.raises(exc, match=match):
            call()


@pytest.mark.parametrize(
    "call, exc, match", [c[1:] for c in COMPLEX_CASES], ids=[c[0] for c in COMPLEX_CASES]
)
def test_complex_values_are_refused_before_any_op_runs(ran_ops, call, exc, match):
    """Before any value could be cast: no backend op runs in the refused call, and the
    random stream does not move (the next draw is a fresh stream's)."""
    A = graph()
    gs.manual_seed(3)
    ran_ops.clear()
    with pytest.raises(exc, match=match):
        call()
    assert ran_ops == [], f"ops ran before the complex value was refused: {ran_ops}"
    after = A[:, SEEDS].individual_sample(1).edges()[2]
    gs.manual_seed(3)
    assert torch.equal(after, A[:, SEEDS].individual_sample(1).edges()[2])


def test_bench_main_returns_2_on_a_refused_option(tmp_path, capsys):
    from gsample import bench

    assert bench.main(["--seeds", "-1", "--out", str(tmp_path)]) == 2
    assert "argument --seeds" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- documented
def test_integer_and_bool_values_promote_as_torch_does():
    """Not errors: integer and bool values promote against the float edge values as PyTorch
    promotes them (validate's module doc); the results equal the float computation's."""
    A = graph()
    ints = torch.arange(E)
    mask = ints % 2 == 0
    B = gs.Matrix.from_edge_index(EI, num_nodes=N, weight=ints)
    assert B.values.dtype == torch.float32
    assert torch.equal(
        B.values, gs.Matrix.from_edge_index(EI, num_nodes=N, weight=ints.float()).values
    )
    Bb = gs.Matrix.from_edge_index(EI, num_nodes=N, weight=mask)
    assert Bb.values.dtype == torch.float32 and set(Bb.values.tolist()) == {0.0, 1.0}
    S = gs.Matrix.from_scipy(
        sp.coo_matrix((np.array([3, 4], dtype=np.int64), ([0, 1], [1, 0])), shape=(2, 2))
    )
    assert S.values.dtype == torch.float32 and sorted(S.values.tolist()) == [3.0, 4.0]
    for other in (ints, mask):
        got = (A * other).values
        assert got.dtype == torch.float32
        assert torch.equal(got, (A * other.float()).values)
    v = torch.arange(N)
    assert torch.equal(A.mul(v, 0).values, A.mul(v.float(), 0).values)
    assert torch.equal(A @ v, A @ v.float())
    assert torch.equal(A.T @ (v > 2), A.T @ (v > 2).float())
    # an SDDMM of integer (or bool) features is taken in float32
    U, W = torch.arange(N), torch.arange(N) + 1
    for op in ("dot", "add", "sub", "mul", "div"):
        got = gs.sddmm(A, U, W, op).values
        assert got.dtype == torch.float32
        assert torch.equal(got, gs.sddmm(A, U.float(), W.float(), op).values)
    assert torch.equal(
        gs.sddmm(A, U > 2, W > 3, "sub").values,
        gs.sddmm(A, (U > 2).float(), (W > 3).float(), "sub").values,
    )
    # and the same at a compiled program's boundary
    fn = gs.compile(lambda A, s, U, W: gs.sddmm(A[:, s].compact(), U, W).sum(axis=0))
    sub = A[:, SEEDS].compact()
    Uc, Wc = torch.arange(sub.shape[0]), torch.arange(2)
    assert torch.equal(fn(A, SEEDS, Uc, Wc), fn(A, SEEDS, Uc.float(), Wc.float()))


def test_numpy_and_rational_scalars_work_as_python_numbers():
    A = graph()
    assert torch.equal((A * np.float32(2)).values, (A * 2.0).values)
    assert torch.equal((A * np.int64(3)).values, (A * 3).values)
    assert torch.equal((A / fractions.Fraction(1, 4)).values, (A / 0.25).values)
    assert torch.equal((2**62 * A).values, (A * float(2**62)).values)


def test_the_documented_value_rules_are_in_validate():
    import gsample.base.validate as V

    doc = " ".join(V.__doc__.split())
    for words in (
        "Complex values are a TypeError",
        "Integer and bool values promote",
        "must be floating point already",
    ):
        assert words in doc
