"""What a GPU kernel gets from pinned host memory read in place (UVA): the profile behind a
graph's ``placement="uva"``.

Three measurements, each against a pinned host buffer of ``--gib`` GiB (and device memory
beside it where it says so), every read by a CuPy kernel:

* **units**: random units of 4 B to 4 KiB, each read by a group of lanes (a lane a 4-byte
  word), at full occupancy; units per second and GB/s, pinned and device memory;
* **regions**: random 4-byte and 128-byte units within the first R bytes of the buffer, R from
  64 KiB to all of it: how far apart random reads may lie before each pays an address
  translation of its own;
* **order**: the same random units read in drawn order and sorted (address order), at
  several densities: what sampling in address order (``kernels/nodewise.cu``,
  ``kernels/walk.cu``) buys;

and the latency of one dependent read (a single thread chasing its reads), pinned and device.

Writes ``host_link_cuda.json`` (device, date, command, commit) to ``--out`` and prints the
tables.

    python benchmarks/host_link.py            # an 8 GiB buffer
    python benchmarks/host_link.py --quick    # 256 MiB, fewer points
"""

import argparse
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from gsample.bench.report import script_record, write_record

ROOT = pathlib.Path(__file__).resolve().parents[1]

SOURCE = r"""
__device__ __forceinline__ unsigned long long mix(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
// group g of `lanes` threads reads unit mix(seed ^ u) % nunits for u = g, g + groups, ...
extern "C" __global__ void random_units(const unsigned* __restrict__ src, long long nunits,
                                        int unit_words, int lanes, long long total,
                                        unsigned long long seed, unsigned* sink) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long g = tid / lanes, groups = (long long)gridDim.x * blockDim.x / lanes;
    const int l = threadIdx.x % lanes;
    unsigned acc = 0;
    for (long long u = g; u < total; u += groups) {
        const long long unit = (long long)(mix(seed ^ (unsigned long long)u) % nunits);
        const unsigned* p = src + unit * unit_words;
        for (int w = l; w < unit_words; w += lanes) acc += p[w];
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;     // keeps the reads
}
// group g reads unit idx[g] (idx: units in [0, nunits), drawn or sorted)
extern "C" __global__ void listed_units(const unsigned* __restrict__ src,
                                        const long long* __restrict__ idx, long long n,
                                        long long nunits, int unit_words, int lanes,
                                        unsigned* sink) {
    const long long tid = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long g = tid / lanes, groups = (long long)gridDim.x * blockDim.x / lanes;
    const int l = threadIdx.x % lanes;
    unsigned acc = 0;
    for (long long u = g; u < n; u += groups) {
        const long long unit = idx[u];
        if (unit < 0 || unit >= nunits) continue;
        const unsigned* p = src + unit * unit_words;
        for (int w = l; w < unit_words; w += lanes) acc += p[w];
    }
    if (acc == 0x9E3779B9u) sink[0] = acc;
}
// one thread, `steps` reads each depending on the one before
extern "C" __global__ void chase(const unsigned* __restrict__ src, long long n, int steps,
                                 unsigned* sink) {
    unsigned long long at = 12345;
    for (int i = 0; i < steps; ++i) at = mix(at ^ src[at % n]);
    sink[0] = (unsigned)at;
}
"""

#: (unit bytes, lanes reading it)
UNITS = ((4, 1), (8, 2), (16, 4), (32, 8), (64, 16), (128, 32), (256, 32), (512, 32), (1024, 32))
UNITS += ((4096, 32),)


def parser():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=int, default=8, help="GiB of the pinned buffer")
    p.add_argument("--quick", action="store_true", help="256 MiB and fewer points")
    p.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    return p


class Kernels:
    """The CuPy kernels above, launched on torch tensors' memory (raw pointers)."""

    def __init__(self):
        import cupy  # optional: the CUDA backend's dependency

        self.cp = cupy
        module = cupy.RawModule(code=SOURCE)
        self.random_units = module.get_function("random_units")
        self.listed_units = module.get_function("listed_units")
        self.chase = module.get_function("chase")
        self.sink = cupy.zeros(4, dtype=cupy.uint32)

    def timed(self, fn, grid, block, args) -> float:
        """Seconds of the best of 3 launches after a warm-up."""
        fn((grid,), (block,), args)
        self.cp.cuda.Device().synchronize()
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            fn((grid,), (block,), args)
            self.cp.cuda.Device().synchronize()
            best = min(best, time.perf_counter() - start)
        return best


def units(k: Kernels, buf: torch.Tensor, nbytes: int, unit: int, lanes: int, total: int, grid):
    """Random ``unit``-byte reads within the first ``nbytes`` of ``buf``."""
    cp = k.cp
    n, words = cp.int64(nbytes // unit), cp.int32(unit // 4)
    args = (cp.uint64(buf.data_ptr()), n, words, cp.int32(lanes), cp.int64(total), cp.uint64(7))
    args += (k.sink,)
    s = k.timed(k.random_units, grid, 256, args)
    return {"unit_bytes": unit, "units_per_s": total / s, "GB_per_s": total * unit / s / 1e9}


def listed(k: Kernels, buf: torch.Tensor, idx: torch.Tensor, unit: int, lanes: int, grid):
    cp = k.cp
    ptrs = (cp.uint64(buf.data_ptr()), cp.uint64(idx.data_ptr()), cp.int64(idx.numel()))
    sizes = (cp.int64(buf.numel() * 4 // unit), cp.int32(unit // 4), cp.int32(lanes))
    args = (*ptrs, *sizes, k.sink)
    s = k.timed(k.listed_units, grid, 256, args)
    return idx.numel() / s


def latency_us(k: Kernels, buf: torch.Tensor, steps: int = 2000) -> float:
    cp = k.cp
    args = (cp.uint64(buf.data_ptr()), cp.int64(buf.numel()), cp.int32(steps), k.sink)
    return k.timed(k.chase, 1, 1, args) / steps * 1e6


def main(argv=None):
    args = parser().parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("benchmarks/host_link.py: needs a CUDA GPU")
    k = Kernels()
    nbytes = (256 << 20) if args.quick else args.gib << 30
    host = torch.empty(nbytes // 4, dtype=torch.int32, pin_memory=True).fill_(1)
    dev = torch.ones(nbytes // 4, dtype=torch.int32, device="cuda")
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    grid = sms * 8  # 2,048 threads an SM
    cap = 1 << (20 if args.quick else 24)
    rows = []
    for where, buf in (("pinned", host), ("device", dev)):
        for unit, lanes in UNITS[::3] if args.quick else UNITS:
            total = max(1 << 14, min(cap, (1 << 31) // unit))
            rows.append({"where": where, **units(k, buf, nbytes, unit, lanes, total, grid)})
    regions = []
    sizes = [64 << 10, 2 << 20, 32 << 20, 256 << 20, 1 << 30, 4 << 30, 8 << 30]
    for r in [s for s in sizes if s < nbytes] + [nbytes]:
        for unit, lanes in ((4, 1), (128, 32)):
            total = min(cap, 1 << 22)
            regions.append({"region_bytes": r, **units(k, host, r, unit, lanes, total, grid)})
    order = []
    for unit, lanes in ((8, 2), (128, 32)):
        for n in (1 << 16, 1 << 18) if args.quick else (1 << 20, 1 << 22, 1 << 24):
            drawn = torch.randint(nbytes // unit, (n,), device="cuda")
            ordered = drawn.sort().values
            for blocks in (sms, grid):
                order.append(
                    {
                        "unit_bytes": unit,
                        "units": n,
                        "blocks": blocks,
                        "drawn_per_s": listed(k, host, drawn, unit, lanes, blocks),
                        "sorted_per_s": listed(k, host, ordered, unit, lanes, blocks),
                    }
                )
    lat = {"pinned": latency_us(k, host), "device": latency_us(k, dev)}
    record = script_record(
        torch.device("cuda"),
        ROOT,
        argv,
        buffer_bytes=nbytes,
        units=rows,
        regions=regions,
        order=order,
        latency_us=lat,
    )
    path = write_record(record, args.out, f"host_link{'_quick' if args.quick else ''}_cuda.json")
    print(f"{'memory':8s} {'unit B':>7s} {'G units/s':>10s} {'GB/s':>8s}")
    for r in rows:
        print(
            f"{r['where']:8s} {r['unit_bytes']:7d} {r['units_per_s'] / 1e9:10.3f} "
            f"{r['GB_per_s']:8.1f}"
        )
    print(f"{'region':>12s} {'unit B':>7s} {'G units/s':>10s}")
    for r in regions:
        print(f"{r['region_bytes']:12d} {r['unit_bytes']:7d} {r['units_per_s'] / 1e9:10.3f}")
    print(f"{'unit B':>7s} {'units':>9s} {'blocks':>7s} {'drawn G/s':>10s} {'sorted G/s':>11s}")
    for r in order:
        print(
            f"{r['unit_bytes']:7d} {r['units']:9d} {r['blocks']:7d} "
            f"{r['drawn_per_s'] / 1e9:10.3f} {r['sorted_per_s'] / 1e9:11.3f}"
        )
    print(f"dependent read: {lat['pinned']:.2f} us pinned, {lat['device']:.2f} us device")
    print(f"wrote {path}")
    return record


if __name__ == "__main__":
    main()
