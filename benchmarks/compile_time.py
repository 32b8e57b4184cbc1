"""Compile time (cold, warm cache) and compiled vs eager epoch time, GraphSAGE and LADIES.

For each workload, in one process:

* compile time, cold: the first call of a fresh ``gs.compile`` sampler on one mini-batch
  (trace + passes + the once-per-graph pre-computation of ``CACHED`` values + the run),
  and its parts: trace + passes alone (``sampler.program``, fresh sampler);
* compile time, warm: a call that hits the cache (same static arguments, same kinds), and
  the cache lookup alone; an eager call of the same mini-batch for reference;
* epoch time: eager and compiled epochs (``gs.DataLoader``, mini-batches of
  ``--batch-size`` over ``--seeds`` seeds), one warm-up epoch each, then ``--repeats``
  epochs alternating eager / compiled; medians. The sampled edge counts of the two must
  agree (they are the same samples).
* layout selection: the same compiled epochs with the layout pass forced to all-CSC
  (``gsample.passes.layout.pipeline("csc")``), measured in the same rotation; the record
  names the cost table the compiles used (``GSAMPLE_CALIBRATION``, ``python -m gsample
  calibrate``).

Writes JSON with device, date, command and the pipeline's passes to ``benchmarks/results/``.

    python benchmarks/compile_time.py --snap ../shared/data/web-NotreDame.txt.gz
    python benchmarks/compile_time.py                  # an R-MAT graph
"""
import functools
import pathlib
import statistics
import sys


ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import gsample as gs  # noqa: E402
import gsample.runtime.cached  # noqa: E402
import gsample.cost  # noqa: E402
# epoch_time also puts examples/ on sys.path
from epoch_time import (WORKLOADS, benchmark_parser, epoch, load, timed,  # noqa: E402
                        write_record)
from ladies import normalize  # noqa: E402
from gsample.passes.layout import pipeline as layout_pipeline  # noqa: E402


def compile_times(fn, A, batch, kwargs, repeats, device):
    """Seconds: cold first call, trace + passes, warm call, cache lookup, eager call."""
    cold, compile_only, warm, lookup, eager = [], [], [], [], []
    for _ in range(repeats):
        gsample.runtime.cached._VALUES.clear()              # cold: no pre-computed values
        sampler = gs.compile(fn)
        gs.manual_seed(0)
        cold.append(timed(lambda: sampler(A, batch, **kwargs), device)[0])
        assert sampler.traces == 1
        gs.manual_seed(0)
        warm.append(timed(lambda: sampler(A, batch, **kwargs), device)[0])
        lookup.append(timed(lambda: sampler.program(A, batch, **kwargs), device)[0])
        assert sampler.traces == 1
        compile_only.append(timed(lambda: gs.compile(fn).program(A, batch, **kwargs),
                                  device)[0])
        gs.manual_seed(0)
        eager.append(timed(lambda: fn(A, batch, **kwargs), device)[0])
    med = statistics.median
    return {"cold_first_call_s": med(cold), "trace_and_passes_s": med(compile_only),
            "warm_call_s": med(warm), "cache_lookup_s": med(lookup), "eager_call_s": med(eager),
            "cold_first_call_s_all": cold, "trace_and_passes_s_all": compile_only}


def epoch_times(fn, A, seeds, kwargs, batch_size, repeats):
    """Median eager and compiled epoch seconds, measured alternately after a warm-up each;
    compiled twice: the default pipeline, and with layout selection off (all CSC)."""
    eager_fn = functools.partial(fn, **kwargs)
    compiled_fn = functools.partial(gs.compile(fn), **kwargs)
    csc_fn = functools.partial(gs.compile(fn, passes=layout_pipeline("csc")), **kwargs)
    _, edges_eager = epoch(A, eager_fn, seeds, batch_size)                   # warm-up
    _, edges_compiled = epoch(A, compiled_fn, seeds, batch_size)             # warm-up, trace
    _, edges_csc = epoch(A, csc_fn, seeds, batch_size)
    assert edges_eager == edges_compiled == edges_csc, (edges_eager, edges_compiled, edges_csc)
    eager, compiled, csc = [], [], []
    for _ in range(repeats):
        t, e = epoch(A, eager_fn, seeds, batch_size)
        eager.append(t)
        t, c = epoch(A, compiled_fn, seeds, batch_size)
        compiled.append(t)
        t, k = epoch(A, csc_fn, seeds, batch_size)
        csc.append(t)
        assert e == c == k == edges_eager
    te, tc, tk = statistics.median(eager), statistics.median(compiled), statistics.median(csc)
    return {"eager_epoch_s_median": te, "compiled_epoch_s_median": tc,
            "compiled_speedup": te / tc, "eager_epoch_s_all": eager,
            "compiled_epoch_s_all": compiled, "sampled_edges": edges_eager,
            "compiled_sampled_edges_per_s": edges_eager / tc,
            "compiled_all_csc_epoch_s_median": tk, "compiled_all_csc_epoch_s_all": csc,
            "layout_selection_speedup": tk / tc}


def main(argv=None):
    args = benchmark_parser(__doc__, "epochs (and cold compiles) per median").parse_args(argv)
    from gsample.passes import PIPELINE
    device, A, seeds = load(args)
    batch = seeds[:args.batch_size]
    results = []
    for key in args.workloads:
        name, fn, kwargs, normalized = WORKLOADS[key]
        G = normalize(A) if normalized else A
        c = compile_times(fn, G, batch, kwargs, args.repeats, device)
        e = epoch_times(fn, G, seeds, kwargs, args.batch_size, args.repeats)
        results.append({"workload": name, "compile": c, "epoch": e})
        print(f"{name:20s} compile: cold first call {c['cold_first_call_s'] * 1e3:7.1f} ms "
              f"(trace + passes {c['trace_and_passes_s'] * 1e3:.1f} ms), warm call "
              f"{c['warm_call_s'] * 1e3:.1f} ms (lookup {c['cache_lookup_s'] * 1e6:.0f} us), "
              f"eager call {c['eager_call_s'] * 1e3:.1f} ms")
        print(f"{'':20s} epoch:   eager {e['eager_epoch_s_median']:.3f} s, compiled "
              f"{e['compiled_epoch_s_median']:.3f} s (median of {args.repeats}; eager / compiled "
              f"= {e['compiled_speedup']:.2f}x), {e['sampled_edges']:,} edges")
        print(f"{'':20s} layouts: compiled all-CSC {e['compiled_all_csc_epoch_s_median']:.3f} s "
              f"(selected / all-CSC = {e['layout_selection_speedup']:.2f}x faster)")
    write_record("compile_time", args, argv, device, A, repeats=args.repeats, backend="torch",
                 pipeline=[(e[0] if isinstance(e, tuple) else e).__name__ for e in PIPELINE],
                 layout_cost_table=gs.cost.table_for(device, A.num_nodes).source,
                 results=results)


if __name__ == "__main__":
    main()
