"""``benchmarks/results/summary.csv``: one row per (record, workload, mode) of the kept records.

    python scripts/bench_summary.py            # rewrite benchmarks/results/summary.csv
    python scripts/bench_summary.py --check    # exit 1 when it is stale

Columns: workload, mode, device, date, median_s (epoch seconds, median of the record's
repeats), work_per_s (sampled edges, walk steps or seeds per second, where the record
says), unit, source (the record's file name). Records of ``python -m gsample.bench`` (the
harness and its ablation) and of the scripts in ``benchmarks/`` (training pipeline, UVA,
multi-GPU, DDP training, fused walk, compiler-pass ablation) are read; other files are left
out.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
COLUMNS = ["workload", "mode", "device", "date", "median_s", "work_per_s", "unit", "source"]


def _rows_of(record: dict, source: str) -> list[list]:
    """The summary rows of one record, whatever script wrote it."""
    device, date = record.get("device", ""), str(record.get("date", ""))[:10]

    def row(workload, mode, seconds, work=None, unit=""):
        rate = "" if work is None else f"{work:.4g}"
        return [workload, mode, device, date, f"{seconds:.4g}", rate, unit, source]

    out = []
    if record.get("harness") == "gsample.bench":
        for name, w in record["workloads"].items():
            for mode, m in w["modes"].items():
                if m.get("epoch_s_median") is not None:
                    out.append(
                        row(name, mode, m["epoch_s_median"], m.get("units_per_s"), w["unit"])
                    )
    elif "speedup" in record and isinstance(record.get("results"), dict):  # train_pipeline
        sampler = record.get("args", {}).get("sampler", "")
        for mode, m in record["results"].items():
            out.append(
                row(f"training {sampler}", f"{mode}, features {m['feature_mode']}", m["epoch"])
            )
    elif "world_sizes" in record and "runs" in record:  # train_ddp
        model = record.get("model", "training")
        for m in record["runs"]:
            median = m["median"]
            out.append(row(f"training, {model}", f"{m['world']} GPU(s)", median["epoch"]))
    elif "world_sizes" in record:  # multi_gpu
        for m in record["results"]:
            mode = f"{m['placement']}, {m['world']} GPU(s)"
            out.append(row(m["workload"], mode, m["epoch_s"], m.get("edges_per_s"), "edges"))
    elif "uva_place_s" in record:  # uva
        for m in record["results"]:
            walk = m.get("workload") == "deepwalk"
            name = (
                f"DeepWalk L={record['walk_length']}"
                if walk
                else f"GraphSAGE {list(record['fanouts'])}"
            )
            out.append(
                row(
                    name,
                    f"{m['placement']}, {m['mode']}",
                    m["epoch_s"],
                    m.get("work_per_s", m.get("edges_per_s")),
                    m.get("unit", "edges"),
                )
            )
    elif "fused_speedup" in record:  # fused_walk
        for m in record["results"]:
            out.append(row(record["workload"], m["mode"], m["epoch_s"]))
    elif isinstance(record.get("results"), list) and "checks" in record:  # ablation (passes)
        for m in record["results"]:
            mode = m["config"]  # names N itself ("+ super-batching (N=16)")
            if "auto" in mode and m.get("super_batch_size"):
                mode += f", picked N={m['super_batch_size']}"
            out.append(
                row(
                    m["workload"],
                    mode,
                    m["epoch_s_median"],
                    m.get("sampled_edges_per_s"),
                    "sampled edges",
                )
            )
    return out


def summary(folder: pathlib.Path = RESULTS) -> str:
    """The CSV text for every readable record in ``folder``, sorted by file then order."""
    rows = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            rows += _rows_of(record, path.name)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(COLUMNS)
    writer.writerows(rows)
    return buf.getvalue()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if summary.csv is stale")
    args = p.parse_args(argv)
    target, text = RESULTS / "summary.csv", summary()
    if args.check:
        if not target.exists() or target.read_text() != text:
            print("bench_summary: run python scripts/bench_summary.py", file=sys.stderr)
            return 1
        return 0
    target.write_text(text)
    print(f"wrote {target} ({text.count(chr(10)) - 1} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
