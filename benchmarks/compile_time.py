"""Compile time (cold, warm cache) and compiled vs eager epochs, with the epochs timed by the
harness (``python -m gsample.bench``).

Per workload (GraphSAGE and LADIES by default):

* compile time, cold: the first call of a fresh ``gs.compile`` sampler on one mini-batch
  (trace + passes + the once-per-graph pre-computation of ``CACHED`` values + the run),
  and its parts: trace + passes alone (``sampler.program``, fresh sampler);
* compile time, warm: a call that hits the cache, the cache lookup alone, and an eager call
  of the same mini-batch for reference (medians of ``--repeats``);
* epochs (the harness's modes): ``gsample eager``, ``compiled`` (the default pipeline) and
  ``compiled, all-CSC layouts`` (``gsample.passes.pipeline("csc")``): what layout
  selection buys; the record names the cost table the compiles used.

Writes ``benchmarks/results/compile_time_<graph>_<device>_<UTC>.json``.

    python benchmarks/compile_time.py --device cpu --graph ../shared/data/web-NotreDame.txt.gz
"""

import functools
import statistics
import sys

import torch

import gsample as gs
import gsample.cost.table
import gsample.runtime.cached
from gsample.bench import Mode, cli
from gsample.bench.measure import timed
from gsample.passes import pipeline as layout_pipeline


def compile_times(fn, A, batch, kwargs, repeats, device):
    """Median seconds: cold first call, trace + passes, warm call, cache lookup, eager call."""
    cold, compile_only, warm, lookup, eager = [], [], [], [], []
    for _ in range(repeats):
        gsample.runtime.cached._VALUES.clear()  # cold: no pre-computed values
        sampler = gs.compile(fn)
        gs.manual_seed(0)
        cold.append(timed(lambda s=sampler: s(A, batch, **kwargs), device)[0])
        assert sampler.traces == 1
        gs.manual_seed(0)
        warm.append(timed(lambda s=sampler: s(A, batch, **kwargs), device)[0])
        lookup.append(timed(lambda s=sampler: s.program(A, batch, **kwargs), device)[0])
        assert sampler.traces == 1
        compile_only.append(timed(lambda: gs.compile(fn).program(A, batch, **kwargs), device)[0])
        gs.manual_seed(0)
        eager.append(timed(lambda: fn(A, batch, **kwargs), device)[0])
    med = statistics.median
    return {
        "cold_first_call_s": med(cold),
        "trace_and_passes_s": med(compile_only),
        "warm_call_s": med(warm),
        "cache_lookup_s": med(lookup),
        "eager_call_s": med(eager),
        "cold_first_call_s_all": cold,
        "trace_and_passes_s_all": compile_only,
    }


def modes(w, device, args):
    return {
        "gsample eager": Mode(functools.partial(w.fn, **w.kw), {}, "eager"),
        "compiled": Mode(functools.partial(gs.compile(w.fn), **w.kw), {}, "compiled"),
        "compiled, all-CSC layouts": Mode(
            functools.partial(gs.compile(w.fn, passes=layout_pipeline("csc")), **w.kw),
            {},
            "compiled",
        ),
    }


def main(argv=None):
    args = cli.parse(
        argv, name="compile_time", workloads=["graphsage", "ladies"], peers=[], device="cpu"
    )
    from gsample.passes import PIPELINE

    def extra(w, entry, device, args):
        batch = torch.randperm(w.A.num_nodes, generator=torch.Generator().manual_seed(0))
        entry["compile"] = compile_times(
            w.fn, w.G, batch[: w.batch_size].to(device), w.kw, args.repeats, device
        )
        entry["layout_cost_table"] = gs.cost.table_for(device, w.A.num_nodes).source
        entry["pipeline"] = [(e[0] if isinstance(e, tuple) else e).__name__ for e in PIPELINE]

    record = cli.run(args, modes=modes, extra=extra)
    print("\n".join(cli.report.table_lines(record)))
    for name, e in record["workloads"].items():
        c = e.get("compile")
        if c:
            print(
                f"{name:10s} compile: cold first call {c['cold_first_call_s'] * 1e3:7.1f} ms "
                f"(trace + passes {c['trace_and_passes_s'] * 1e3:.1f} ms), warm call "
                f"{c['warm_call_s'] * 1e3:.1f} ms (lookup {c['cache_lookup_s'] * 1e6:.0f} us),"
                f" eager call {c['eager_call_s'] * 1e3:.1f} ms"
            )
    print(f"wrote {record['path']}")
    return 1 if record["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
