"""GraphSAGE epochs on a GPU: eager, compiled on the torch backend, compiled on the CUDA backend.

All three in one run, median of ``--repeats`` epochs after a warm-up each, the same
mini-batches (the samples are identical: the script checks). The CUDA backend has kernels
for the uniform draws today; every other op runs the torch code on the GPU.

    python benchmarks/cuda_backend.py --snap ../shared/data/web-NotreDame.txt.gz --device cuda
"""
import functools
import statistics

import torch

from epoch_time import benchmark_parser, epoch, load, write_record

import gsample as gs  # noqa: E402  (epoch_time puts examples/ on sys.path)
from graphsage import graphsage  # noqa: E402


def main(argv=None):
    p = benchmark_parser(__doc__)
    p.add_argument("--fanouts", type=int, nargs="+", default=[25, 10])
    args = p.parse_args(argv)
    device, A, seeds = load(args)
    if device.type != "cuda":
        raise SystemExit("--device: this benchmark compares GPU backends; pass --device cuda")
    eager = functools.partial(graphsage, fanouts=tuple(args.fanouts))
    modes = {
        "eager (torch ops on CUDA tensors)": eager,
        "compiled, torch backend": functools.partial(gs.compile(graphsage),
                                                     fanouts=tuple(args.fanouts)),
        "compiled, cuda backend": functools.partial(gs.compile(graphsage, backend="cuda"),
                                                    fanouts=tuple(args.fanouts)),
    }
    gs.manual_seed(0)
    reference = [b.out for b in gs.DataLoader(A, eager, seeds[:2048], 512, seed=1)]
    results = []
    for name, sampler in modes.items():
        got = [b.out for b in gs.DataLoader(A, sampler, seeds[:2048], 512, seed=1)]
        same = all(torch.equal(x.edges()[2], y.edges()[2])
                   for bx, by in zip(reference, got) for x, y in zip(bx, by))
        epoch(A, sampler, seeds, args.batch_size)                          # warm-up
        runs = [epoch(A, sampler, seeds, args.batch_size) for _ in range(args.repeats)]
        t = statistics.median(r[0] for r in runs)
        edges = runs[0][1]
        results.append({"mode": name, "epoch_s_median": t, "epoch_s_all": [r[0] for r in runs],
                        "sampled_edges": edges, "sampled_edges_per_s": edges / t,
                        "samples_equal_eager": same})
        print(f"{name:36s} epoch {t:7.4f} s, {edges:,} edges, {edges / t:,.0f} edges/s, "
              f"samples equal eager: {same}")
    write_record("cuda_backend", args, argv, device, A, workload=f"GraphSAGE {args.fanouts}",
                 results=results)


if __name__ == "__main__":
    main()
