"""The benchmarks page's table (docs/guide/benchmarks.md), made from the newest
``python -m gsample.bench`` records.

    python scripts/bench_table.py                  # print the block (a table per device and
                                                   # graph in benchmarks/results, each
                                                   # workload from the newest record that has
                                                   # it)
    python scripts/bench_table.py --write          # put it between the page's markers
    python scripts/bench_table.py --check          # exit 1 when the page's block is stale
    python scripts/bench_table.py --full RECORD    # every mode of one record (long table)
    python scripts/bench_table.py --plot RECORD    # (re)draw its PNGs beside it (a GPU run
                                                   # can bring back its JSON alone)

A GPU run may come in parts (``--workloads shadow pass`` after a run that held the others):
the parts make one table, with a header line per record naming the workloads taken from it
(:func:`gsample.bench.report.newest_records`). Quick (CI) records are left out. The block
lies between ``<!-- bench:begin -->`` and ``<!-- bench:end -->`` in docs/guide/benchmarks.md;
nothing else of the file is touched.
"""

import argparse
import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from gsample.bench import report

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    p.add_argument("--readme", default=str(ROOT / "docs" / "guide" / "benchmarks.md"))
    what = p.add_mutually_exclusive_group()
    what.add_argument("--write", action="store_true", help="update the page's block")
    what.add_argument("--check", action="store_true", help="fail if the page's block is stale")
    what.add_argument("--full", metavar="RECORD", help="print every mode of one record")
    what.add_argument("--plot", metavar="RECORD", help="draw a record's PNGs beside it")
    args = p.parse_args(argv)
    if args.full:
        print("\n".join(report.table_lines(json.loads(pathlib.Path(args.full).read_text()))))
        return 0
    if args.plot:
        path = pathlib.Path(args.plot)
        record = json.loads(path.read_text())
        record["pngs"] = report.plot_all(record, path.parent, path.stem)
        path.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {len(record['pngs'])} PNGs beside {path}")
        return 0
    records = report.newest_records(args.results)
    if not records:
        print(
            f"bench_table: no {report.RESULT_PATTERN} record of gsample.bench in {args.results}",
            file=sys.stderr,
        )
        return 1
    block = report.readme_block(records)
    if not (args.write or args.check):
        print(block)
        return 0
    readme = pathlib.Path(args.readme)
    text = readme.read_text()
    try:
        new = report.replace_block(text, block)
    except ValueError as e:
        print(f"bench_table: {readme}: {e}", file=sys.stderr)
        return 1
    if args.check:
        if new != text:
            print(
                f"bench_table: {readme}'s benchmark block is stale: run "
                "python scripts/bench_table.py --write",
                file=sys.stderr,
            )
            return 1
        return 0
    readme.write_text(new)
    n = sum(len(r.get("sources", [r])) for r in records)
    print(f"wrote the benchmark block of {readme} ({len(records)} tables from {n} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
