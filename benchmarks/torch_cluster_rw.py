"""torch_cluster's random-walk operator: from an installed ``torch_cluster``, or built from its
sdist.

The harness (``python -m gsample.bench``, ``gsample/bench/peers.py``) times gsample's walks
beside ``torch_cluster.random_walk`` (the kernel behind PyG's ``Node2Vec``):
``torch.ops.torch_cluster.random_walk(rowptr, col, start, walk_length, p, q) -> (node_seq,
edge_seq)``, a walk of ``walk_length`` steps from each node of ``start`` over the CSR graph
``rowptr, col`` (uniform for ``p == q == 1``, node2vec's rejection sampling otherwise).
``node_seq`` has shape ``(len(start), walk_length + 1)``, ``edge_seq`` ``(len(start),
walk_length)``: the positions in ``col`` of the steps' edges, ``-1`` where the walk stood
still on a node with no out-edges.

The GPU machines reach no package registry, so ``pip install torch_cluster`` cannot run there,
and no wheel matches their torch; building the whole sdist (every operator, CPU and CUDA, for
every GPU architecture) takes more than 5 minutes. :func:`load` builds only the random-walk
operator (``csrc/rw.cpp``, ``csrc/cpu/rw_cpu.cpp`` and, with a GPU and ``CUDA_HOME``,
``csrc/cuda/rw_cuda.cu``) with ``torch.utils.cpp_extension.load``, for the present GPU's
architecture only (``TORCH_CUDA_ARCH_LIST``, unless set) and ``MAX_JOBS = os.cpu_count()``
(unless set): about a minute. The build is cached in
``tempfile.gettempdir()/gsample-torch-cluster-<version>``, so a second call in a later process
only loads it. The operator registers itself (``torch::RegisterOperators`` in ``rw.cpp``);
``WITH_PYTHON`` is left undefined (it only adds Windows module stubs and needs
``Python.h``). On ROCm no GPU code is built (it would need hipify): GPU tensors then raise
"Not compiled with CUDA support".

    from torch_cluster_rw import load
    op, version = load(".whl/torch_cluster-1.6.3.tar.gz")
    if op is not None:
        node_seq, edge_seq = op(rowptr, col, start, 10, 1.0, 1.0)

    python benchmarks/torch_cluster_rw.py .whl/torch_cluster-1.6.3.tar.gz    # build, check, time
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tarfile
import tempfile
import time

import torch

SOURCES = ("csrc/rw.cpp", "csrc/cpu/rw_cpu.cpp")
CUDA_SOURCE = "csrc/cuda/rw_cuda.cu"


def load(sdist=None, verbose: bool = False):
    """``(torch.ops.torch_cluster.random_walk, version)``, or ``(None, None)``.

    Parameters
    ----------
    sdist : str or os.PathLike, optional
        ``torch_cluster-<version>.tar.gz``; used when ``import torch_cluster`` fails.
    verbose : bool
        Show the compiler's commands and output.

    Returns
    -------
    (op, version)
        ``op(rowptr, col, start, walk_length, p, q) -> (node_seq, edge_seq)`` and
        torch_cluster's version string; ``(None, None)`` when torch_cluster is not installed
        and no ``sdist`` was given. A failing build raises (``RuntimeError`` from
        ``torch.utils.cpp_extension``).
    """
    try:
        import torch_cluster
    except ImportError:
        pass
    else:
        return torch.ops.torch_cluster.random_walk, str(torch_cluster.__version__)
    if sdist is None:
        return None, None
    sdist = os.fspath(sdist)
    if not os.path.isfile(sdist):
        raise FileNotFoundError(f"sdist: no such file: {sdist}")
    with tarfile.open(sdist) as tar:
        version = _version(tar, sdist)
        root = os.path.join(tempfile.gettempdir(), f"gsample-torch-cluster-{version}")
        src = os.path.join(root, "src")
        if not all(os.path.isfile(os.path.join(src, s)) for s in SOURCES + (CUDA_SOURCE,)):
            _extract(tar, root, src)
    _build(src, root, verbose)
    return torch.ops.torch_cluster.random_walk, version


def _version(tar: tarfile.TarFile, path: str) -> str:
    """``__version__`` of the sdist's ``setup.py``, else the version in its file name."""
    for member in tar.getmembers():
        if member.isfile() and member.name.count("/") == 1 and member.name.endswith("/setup.py"):
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            found = re.search(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", text, re.M)
            if found:
                return found.group(1)
    found = re.match(r"torch[_-]cluster-(.+?)\.(?:tar\.gz|tgz|tar)$", os.path.basename(path))
    if found is None:
        raise ValueError(f"sdist: no __version__ in setup.py and none in the name {path!r}")
    return found.group(1)


def _extract(tar: tarfile.TarFile, root: str, src: str):
    """The sdist's ``csrc`` into ``root/src/csrc``; written beside and renamed into place, so
    that processes building at the same time never see half a tree."""
    os.makedirs(root, exist_ok=True)
    members = [
        m
        for m in tar.getmembers()
        if m.name.count("/") >= 1
        and m.name.split("/", 2)[1] == "csrc"
        and (m.isfile() or m.isdir())
    ]
    if not members:
        raise ValueError(f"sdist: {tar.name} has no csrc/ folder")
    tmp = tempfile.mkdtemp(prefix="extract-", dir=root)
    try:
        kwargs = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(tmp, members=members, **kwargs)
        top = members[0].name.split("/", 1)[0]
        staged = os.path.join(tmp, top)
        shutil.rmtree(src, ignore_errors=True)
        try:
            os.rename(staged, src)
        except OSError:  # another process put its copy there first
            if not os.path.isfile(os.path.join(src, SOURCES[0])):
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build(src: str, root: str, verbose: bool):
    """Compile and load the operator (``torch.utils.cpp_extension.load``, cached by hash of
    sources and flags in ``root/build-<cpu|cuda>``)."""
    from torch.utils.cpp_extension import CUDA_HOME
    from torch.utils.cpp_extension import load as load_extension

    cuda = torch.cuda.is_available() and CUDA_HOME is not None and torch.version.hip is None
    sources = [os.path.join(src, s) for s in SOURCES]
    cflags = ["-O2", "-Wno-sign-compare"]
    info = torch.__config__.parallel_info()
    if "backend: OpenMP" in info and "OpenMP not found" not in info and sys.platform != "darwin":
        cflags += ["-DAT_PARALLEL_OPENMP", "-fopenmp"]  # as torch_cluster's setup.py does
    env = {"MAX_JOBS": str(os.cpu_count() or 1)}
    if cuda:
        sources.append(os.path.join(src, CUDA_SOURCE))
        cflags.append("-DWITH_CUDA")
        major, minor = torch.cuda.get_device_capability()
        env["TORCH_CUDA_ARCH_LIST"] = f"{major}.{minor}"
    kind = "cuda" if cuda else "cpu"
    build = os.path.join(root, f"build-{kind}")
    os.makedirs(build, exist_ok=True)
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():  # the caller's settings win
        os.environ.setdefault(k, v)
    try:
        load_extension(
            name=f"gsample_torch_cluster_rw_{kind}",
            sources=sources,
            extra_cflags=cflags,
            extra_cuda_cflags=["-O2", "-DWITH_CUDA", "--expt-relaxed-constexpr"],
            extra_include_paths=[os.path.join(src, "csrc")],
            build_directory=build,
            is_python_module=False,
            verbose=verbose,
        )
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check_walks(op, rowptr, col, start, walk_length, p=1.0, q=1.0):
    """Run ``op`` and check every step: shapes, the start column, and each step an edge of
    the CSR graph (``col[e] == next``, ``e`` among the current node's edges), or ``-1`` and
    standing still on a node without edges. Returns ``(node_seq, edge_seq)``."""
    nodes, edges = op(rowptr, col, start, walk_length, p, q)
    n = start.numel()
    assert tuple(nodes.shape) == (n, walk_length + 1), nodes.shape
    assert tuple(edges.shape) == (n, walk_length), edges.shape
    assert torch.equal(nodes[:, 0], start)
    cur, nxt = nodes[:, :-1], nodes[:, 1:]
    lo, hi = rowptr[cur], rowptr[cur + 1]
    moved = edges >= 0
    assert bool((moved == (hi > lo)).all()), "a step stood still on a node with edges"
    e = edges.clamp(min=0)
    assert bool(((e >= lo) & (e < hi) | ~moved).all()), "an edge is not the node's"
    assert bool(torch.where(moved, col[e] == nxt, nxt == cur).all()), "a step left its edge"
    return nodes, edges


def _main(argv):
    """Build (timed) and check the operator on a ring and a random graph."""
    paths = [a for a in argv if a != "-v"]
    t = time.perf_counter()
    op, version = load(paths[0] if paths else None, verbose="-v" in argv)
    if op is None:
        print("torch_cluster is not installed and no sdist was given")
        return 1
    print(f"torch_cluster {version}: random_walk ready in {time.perf_counter() - t:.1f} s")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    n = 1000
    rowptr = torch.arange(0, 2 * n + 1, 2, device=device)  # ring: i -> i - 1, i + 1
    col = torch.stack([torch.arange(n) - 1, torch.arange(n) + 1], 1).remainder(n).flatten()
    check_walks(op, rowptr, col.to(device), torch.arange(n, device=device), 20)
    check_walks(op, rowptr, col.to(device), torch.arange(n, device=device), 20, 0.5, 2.0)
    print(f"walks on {device}: every step follows an edge")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
