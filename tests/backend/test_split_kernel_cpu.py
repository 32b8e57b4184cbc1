"""``kernels/split.cu``'s ``gs_split_decode`` on the CPU, under AddressSanitizer: the kernel
source compiled as C++ (CUDA's names as plain C++: ``helpers.CUDA_AS_CPP``), every thread of
the grid run one after another (its threads share nothing, so any order is the GPU's), gives
the torch ops' split (``gsample.runtime.block_diagonal.split_matrix`` on the CPU) entry for
entry, and reads and writes nothing outside its exact-size arrays. The grids are the host's
(``gsample/backend/cuda/split.py``) and small ones whose warps take many rounds, over batches
of a few items (a warp's chunk across many batches) and of thousands (a chunk inside one).
CI has no GPU; the GPU's comparison is ``test_cuda_split.py``.

The test talks to the program through ``helpers.run_int64_program``: the arrays in, the
decoded buffer back.
"""

import pytest
import torch
from helpers import CUDA_AS_CPP, INT64_IO_CPP, build_asan, random_batch, run_int64_program

from gsample.backend.cuda import split as cuda_split
from gsample.formats.csc import CSC
from gsample.runtime import block_diagonal as blocks

SHIM = (
    CUDA_AS_CPP
    + r"""
#include "split.cu"
"""
    + INT64_IO_CPP
    + r"""

// an empty array as the host passes it (_opt: a null pointer)
static const long long* ptr(const vec& v) { return v.empty() ? nullptr : v.data(); }

int main() {
    // p: copies, n, row_space, has_cols, P, E, total, grid, block
    const vec p = read_vec(), indptr = read_vec(), rows = read_vec(), col_ids = read_vec();
    const vec row_ids = read_vec(), bnd = read_vec();
    if (p.size() != 9) return 2;
    vec out(p[6]);                      // exact size: AddressSanitizer bounds every write
    gridDim.x = p[7];
    blockDim.x = p[8];
    for (long long b = 0; b < p[7]; ++b)
        for (long long t = 0; t < p[8]; ++t) {
            blockIdx.x = b;
            threadIdx.x = t;
            gs_split_decode(ptr(indptr), ptr(rows), ptr(col_ids), ptr(row_ids), bnd.data(),
                            p[0], p[1], (int)p[2], (int)p[3], p[4], p[5], p[6],
                            out.empty() ? nullptr : out.data());
        }
    write_vec(out);
    return 0;
}
"""
)


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    return build_asan(SHIM, tmp_path_factory.mktemp("split_cpu") / "split")


def _decode(exe, M: CSC, bnd, n: int, grid: int, block: int) -> torch.Tensor:
    """The kernel's buffer for ``M`` as ``split_decode`` launches it, on a grid of ``grid``
    blocks of ``block`` threads."""
    copies = len(bnd.cols) - 1
    C, E = bnd.cols[-1] - bnd.cols[0], bnd.edges[-1] - bnd.edges[0]
    Rn = 0 if M.row_ids is None else bnd.rows[-1] - bnd.rows[0]
    P = C + copies
    total = P + E + (C if M.col_ids is not None else 0) + Rn
    p = [copies, n, M.row_ids is not None, M.col_ids is not None, P, E, total, grid, block]
    ids = [[] if t is None else t for t in (M.col_ids, M.row_ids)]
    (out,) = run_int64_program(exe, p, M.indptr, M.rows, *ids, bnd.device.reshape(-1))
    assert out.size == total
    return torch.from_numpy(out)


def _want(M, bnd, n, copies) -> torch.Tensor:
    """The torch ops' split, as one buffer: the kernel's fields, batch after batch."""
    parts = blocks.split_matrix(M, bnd, n, copies)
    fields = [[p.indptr for p in parts], [p.rows for p in parts]]
    fields += [[p.col_ids for p in parts]] if M.col_ids is not None else []
    fields += [[p.row_ids for p in parts]] if M.row_ids is not None else []
    return torch.cat([torch.cat(f) for f in fields])


@pytest.mark.parametrize("row_space", [False, True])
@pytest.mark.parametrize(
    "copies, cols, per_col, empty",
    [
        (7, 8, 4, (0, 2, 3)),  # a few items a batch: a chunk across batches, empty ones
        (5, 0, 4, ()),  # no columns at all: only the pointers' zeros
        (64, 3, 2, (63,)),  # many batches, the last empty
        (6, 300, 20, (1,)),  # thousands of edges a batch: chunks inside one batch
    ],
)
def test_the_kernel_s_split_is_the_torch_split(program, row_space, copies, cols, per_col, empty):
    g = torch.Generator().manual_seed(copies * 1000 + cols + row_space)
    n = 500
    parts = [
        random_batch(g, n, 0 if b in empty else cols, per_col, row_space) for b in range(copies)
    ]
    M = blocks.join_matrices(parts, n)
    bnd = blocks.bounds(M, n, copies)  # the torch ops' bounds, as the kernel's (test_cuda_split)
    want = _want(M, bnd, n, copies)
    total = want.numel()
    # the host's grid (module.launch: 256 threads a block for total / _ILP items), then small
    # grids whose warps take round after round, and a block of one warp
    threads = -(-total // cuda_split._ILP)
    host = max(1, -(-threads // 256))
    for grid, block in ((host, 256), (1, 32), (3, 64), (2, 256)):
        got = _decode(program, M, bnd, n, grid, block)
        assert torch.equal(got, want), (grid, block)


def test_all_columns_split_as_the_torch_ops(program):
    """A matrix whose columns are all nodes (no ``col_ids``: each batch's pointer has ``n + 1``
    entries, found without ids) and whose rows are node ids."""
    g = torch.Generator().manual_seed(5)
    n, copies = 90, 5
    counts = torch.randint(0, 6, (copies * n,), generator=g)
    indptr = torch.cat([torch.zeros(1, dtype=torch.int64), counts.cumsum(0)])
    col_batch = torch.arange(copies * n) // n
    rows = torch.repeat_interleave(col_batch, counts) * n
    rows += torch.randint(0, n, (rows.numel(),), generator=g)
    M = CSC(num_nodes=copies * n, indptr=indptr, rows=rows)
    bnd = blocks.bounds(M, n, copies)
    want = _want(M, bnd, n, copies)
    for grid, block in ((1, 32), (3, 64), (2, 256)):
        assert torch.equal(_decode(program, M, bnd, n, grid, block), want), (grid, block)
