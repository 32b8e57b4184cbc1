"""The harness's output: the JSON record (device, date, versions, commit, command), a PNG per
workload, the printed table, and the README's table made from the newest records (each
workload from the newest record per device and graph that has it)."""

from __future__ import annotations

import datetime
import json
import os
import pathlib
import platform
import re
import subprocess
import sys

import torch

import gsample as gs
from gsample.bench import roofline
from gsample.bench.workloads import ALL_WORKLOADS

RESULT_PATTERN = "bench_*.json"
README_BEGIN, README_END = "<!-- bench:begin -->", "<!-- bench:end -->"


def device_name(device) -> str:
    """A device's name for records and tables: the GPU's, or the CPU's architecture and
    torch's thread count."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    n = torch.get_num_threads()
    return f"{platform.processor() or platform.machine()} CPU, {n} thread{'s' * (n != 1)}"


def versions() -> dict:
    """Versions of the libraries a record depends on (``None``: not installed or broken)."""
    out = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "gsample": getattr(gs, "__version__", None),
    }
    for mod in (
        "numpy",
        "matplotlib",
        "cupy",
        "torch_cluster",
        "torch_geometric",
        "torch_sparse",
        "pyg_lib",
        "dgl",
    ):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            out[mod] = None
    return out


def as_typed(arg: str, root) -> str:
    """``arg``, a path under the checkout's parent folder written relative to the checkout
    (``../shared/data/...``), as one would type it to run the recorded command there."""
    key, eq, value = arg.partition("=") if arg.startswith("--") else ("", "", arg)
    if not value or not os.path.exists(value):
        return arg
    path, parent = os.path.abspath(value), os.path.dirname(os.path.abspath(root))
    if os.path.commonpath([path, parent]) != parent:
        return arg
    return key + eq + os.path.relpath(path, root)


def new_record(args, device, A, root, **fields) -> dict:
    """A run's record before its workloads: when, where, what ran (``args``), the graph,
    then ``fields``."""
    now = datetime.datetime.now(datetime.timezone.utc)
    return {
        "harness": "gsample.bench",
        "date": now.isoformat(timespec="seconds"),
        "stamp": now.strftime("%Y%m%dT%H%M%SZ"),
        "device": device_name(device),
        "device_type": device.type,
        "threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        "versions": versions(),
        "commit": git_commit(root),
        "command": " ".join(["python -m gsample.bench"] + [as_typed(a, root) for a in args.argv]),
        "graph": as_typed(args.graph, root),
        "num_nodes": A.num_nodes,
        "num_edges": A.num_edges,
        "quick": args.quick,
        "repeats": args.repeats,
        "seeds": args.seeds,
        "batch_caps": args.caps,
        "super_batch": args.super_batch,
        "peak_memory_kind": (
            "torch.cuda.max_memory_allocated, per mode"
            if device.type == "cuda"
            else "process_peak_rss (ru_maxrss, monotone over the run)"
        ),
        **fields,
        "workloads": {},
        "failures": [],
        "complete": False,
        "pngs": {},
    }


def script_record(device, root, argv, **fields) -> dict:
    """The head of a benchmark script's record: ``device`` (:func:`device_name`), ``date``
    (UTC), ``command`` (``python`` and the script's arguments, ``argv`` or the process's),
    ``commit`` (:func:`git_commit` of ``root``), ``torch``; then ``fields``.

    Examples
    --------
    >>> import torch
    >>> rec = script_record(torch.device("cpu"), ".", ["--quick"], rows={})
    >>> list(rec)[:5], rec["command"].endswith("--quick")
    (['device', 'date', 'command', 'commit', 'torch'], True)
    """
    return {
        "device": device_name(device),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": "python " + " ".join([sys.argv[0], *(argv or sys.argv[1:])]),
        "commit": git_commit(root),
        "torch": torch.__version__,
        **fields,
    }


def write_record(record: dict, folder, filename: str) -> pathlib.Path:
    """Write ``record`` as JSON to ``folder / filename`` (the folder made if missing);
    returns the path (a benchmark script's last step).

    Examples
    --------
    >>> path = write_record({"rows": {}}, "/tmp/records", "example.json")
    """
    out = pathlib.Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    path = out / filename
    path.write_text(json.dumps(record, indent=1))
    return path


def git_commit(root):
    """``$GSAMPLE_COMMIT`` (a copied tree's git metadata may be stale), else HEAD, with
    ``+dirty`` when tracked files differ from it."""
    if os.environ.get("GSAMPLE_COMMIT"):
        return os.environ["GSAMPLE_COMMIT"]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, text=True, capture_output=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            text=True,
            capture_output=True,
            timeout=10,
        ).stdout
        return f"{commit}{'+dirty' if dirty.strip() else ''}" if commit else None
    except (OSError, subprocess.SubprocessError):
        return None


def _color(kind):
    return {"plain": "#999999", "peer": "#55a868", "eager": "#e08a3a"}.get(kind, "#3a7bd5")


def plot(path, name, entry, title):
    """Epoch time (log scale, min-max whiskers, the gather bound dashed) and throughput of
    every mode and peer of one workload."""
    # import here: matplotlib is optional (plots only), its backend chosen before pyplot
    import matplotlib

    matplotlib.use("Agg")
    # import here: pyplot after the backend is chosen
    import matplotlib.pyplot as plt

    rows = list(entry["modes"].items())
    labels = [m.replace("compiled, ", "") for m, _ in rows]
    colors = [_color(r["kind"]) for _, r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    ax = axes[0]
    med = [r["epoch_s_median"] for _, r in rows]
    lo = [r["epoch_s_median"] - min(r["epoch_s_all"]) for _, r in rows]
    hi = [max(r["epoch_s_all"]) - r["epoch_s_median"] for _, r in rows]
    bars = ax.bar(range(len(rows)), med, color=colors, yerr=[lo, hi], capsize=3)
    ax.bar_label(bars, fmt="%.3g", fontsize=7)
    if entry.get("bound"):
        ax.axhline(entry["bound"]["epoch_s"], color="k", ls="--", lw=1, label="gather bound")
        ax.legend(fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel(f"epoch s ({entry['batches']} x {entry['batch_size']}; median, min-max)")
    ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=7)
    ax = axes[1]
    bars = ax.bar(range(len(rows)), [r["units_per_s"] or 0 for _, r in rows], color=colors)
    ax.bar_label(bars, fmt="%.3g", fontsize=7)
    ax.set_ylabel(f"{entry['unit']} / s")
    ax.set_xticks(range(len(rows)), labels, rotation=30, ha="right", fontsize=7)
    fig.suptitle(f"{name}: {title}", fontsize=9)
    missing = [
        f"{peer}: {why.split(':')[0].split(';')[0]}"
        for peer, why in entry.get("peers_not_run", {}).items()
    ]
    if missing:  # what could not be compared, and why
        fig.text(0.01, 0.01, "not run: " + "; ".join(missing), fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.04 if missing else 0, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(record, folder, stem) -> dict:
    """A PNG per workload of ``record``, ``<folder>/<stem>_<workload>.png``: ``{workload:
    file name}``."""
    pngs = {}
    for name, entry in record["workloads"].items():
        if "modes" in entry:
            png = pathlib.Path(folder) / f"{stem}_{name}.png"
            plot(png, name, entry, f"{record['graph']}, {record['device']}")
            pngs[name] = png.name
    return pngs


def _fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


def _rate(v) -> str:
    """Units per second with an SI prefix (``1.18 G``), so a figure reads beside a paper's."""
    if not v:
        return "-" if v is None else "0"
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if v >= scale:
            return f"{v / scale:.3g} {prefix}"
    return f"{v:.3g}"


def table_lines(record) -> list:
    """Every (workload, mode) of a record as markdown rows (printed at the end of a run):
    beside each epoch time, the work per seed (sampled edges or walk steps, as every mode
    draws the same) and the work per second."""
    gpu = record.get("device_type") == "cuda"
    lines = [
        f"{record['device']}, graph {record['graph']} ({record['num_nodes']:,} nodes, "
        f"{record['num_edges']:,} edges), {record['date']}, commit {record.get('commit')}",
        "",
        "| workload | mode | epoch s (median) | spread s | per seed | units/s | peak MiB | "
        "x bound | " + ("kernels/b | syncs/b | " if gpu else "") + "agrees |",
        "|---|---|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if gpu else "") + "---|",
    ]
    for name, e in record["workloads"].items():
        if "error" in e:
            blanks = " |" * (6 + 2 * gpu)  # every column but the first two and the last
            lines.append(f"| {name} | error |{blanks} {e['error'][:60]} |")
            continue
        unit = "steps" if e["unit"] == "walk steps" else "edges"
        per_seed = _fmt((e.get("work_per_seed") or {}).get("per_seed"), ",.1f")
        for mode, r in e["modes"].items():
            mem = r.get("peak_memory_bytes")
            gpu_cols = (
                (
                    f"{_fmt(r.get('kernels_per_batch'), '.1f')} | "
                    f"{_fmt(r.get('syncs_per_batch'), '.2f')} | "
                )
                if gpu
                else ""
            )
            lines.append(
                f"| {name} | {mode} | {r['epoch_s_median']:.4f} | {r['spread_s']:.4f} | "
                f"{per_seed} {unit} | {_rate(r['units_per_s'])} {unit}/s | "
                f"{_fmt(mem and mem / 2**20, ',.0f')} | {_fmt(r.get('x_bound'), '.1f')} | "
                f"{gpu_cols}{_fmt(e['agreement'].get(mode), '.4f')} |"
            )
        for peer, why in e.get("peers_not_run", {}).items():
            lines.append(
                f"| {name} | {peer} | {why[:70]} | | | | | |" + (" | |" if gpu else "") + " |"
            )
    lines += profile_lines(record)
    lines += roofline.table_lines(record)
    g = record.get("random_gather")
    if g:
        lines += [
            "",
            f"random gather (int64): {g['GB_per_s']:.2f} GB/s; peak memory: "
            f"{record.get('peak_memory_kind')}; load average "
            f"{record.get('load_avg_start')} -> {record.get('load_avg_end')}",
        ]
    loops = _host_loops(record)
    if loops:
        lines.append(
            f"host speed (a pure-Python loop before each epoch, ms per million "
            f"iterations): {min(loops):.0f} to {max(loops):.0f}"
        )
    return lines


def profile_lines(record) -> list:
    """The graph's degree profile and each workload's work per seed, as printed lines (none
    for a record made before they were recorded)."""
    p = record.get("degree_profile")
    if not p:
        return []
    below = ", ".join(
        f"< {k}: {v:.1%}" for k, v in sorted(p.get("below", {}).items(), key=lambda kv: int(kv[0]))
    )
    lines = [
        "",
        f"in-degree: mean {_fmt(p.get('mean'), '.1f')}, median {p.get('median')}, p99 "
        f"{p.get('p99')}, max {_fmt(p.get('max'), ',')}"
        + (f"; nodes with fewer in-neighbours than the fanout {below}" if below else "")
        + f"; seeds: {record.get('seeds_source', '-')}",
    ]
    for name, e in record.get("workloads", {}).items():
        w = e.get("work_per_seed")
        if not w:
            continue
        most = w.get("most_per_seed")
        lines.append(
            f"{name}: {_fmt(w.get('per_seed'), ',.1f')} {w['unit']} per seed"
            + (f" of at most {most:,} ({w['share_of_most']:.1%})" if most else "")
        )
    return lines


#: the README table's columns: (header, mode labels it takes, the fastest of them)
COLUMNS = (
    ("eager", ("gsample eager",)),
    ("compiled, torch", ("compiled, torch backend",)),
    ("compiled, cuda", ("compiled, cuda backend",)),
    ("super-batched (best N)", None),
    ("plain PyTorch", ("plain PyTorch",)),
    ("peers", ("torch_cluster random_walk", "PyG NeighborLoader", "PyG ShaDowKHopSampler", "DGL")),
)


def _source_text(record) -> str:
    """What the README says of one record: its date, command, file, random-gather bandwidth,
    host speed (where recorded) and (CPU) load average."""
    loops = sorted(record["host_loops"] if "host_loops" in record else _host_loops(record))
    return (
        f"{record['date'][:10]}, `{record['command']}` "
        f"(`benchmarks/results/{record.get('file', '')}`); "
        f"random gather {record['random_gather']['GB_per_s']:.3g} GB/s"
        + (
            f"; host speed (a pure-Python loop before each epoch) {loops[len(loops) // 2]:.0f}"
            f" ms per million iterations, {loops[0]:.0f} to {loops[-1]:.0f}"
            if loops
            else ""
        )
        + (
            f", load average {record.get('load_avg_start')} -> {record.get('load_avg_end')} "
            f"on {record.get('cpu_count')} cores"
            if record.get("device_type") == "cpu"
            else ""
        )
    )


def _host_loops(record) -> list:
    """Every epoch's ``host_loop_ms`` of a record (none before they were recorded)."""
    return [
        ms
        for e in record.get("workloads", {}).values()
        if "modes" in e
        for r in e["modes"].values()
        for ms in r.get("host_loop_ms_all", ())
    ]


def _header(record) -> list:
    """The lines above a README table: one record's, or, for a merged record (see
    :func:`merge_records`) of several, a line per source record naming its workloads."""
    sources = record.get("sources") or [record]
    size = f"{record['graph']} ({record['num_nodes']:,} nodes, {record['num_edges']:,} edges)"
    if len(sources) == 1:
        return [
            f"**{record['device']}**, {size}, {_source_text(sources[0])}; "
            f"epoch seconds, median of {record['repeats']}:"
        ]
    devices = " / ".join(dict.fromkeys(s["device"] for s in sources))
    repeats = {s["repeats"] for s in sources}
    lines = [
        f"**{devices}**, {size}, each workload from the newest of {len(sources)} records "
        "that has it; epoch seconds, median of "
        + (f"{repeats.pop()}:" if len(repeats) == 1 else "each record's repeats:"),
        "",
    ]
    for s in sources:
        lines.append(
            f"- {', '.join(s['taken'])}: {s['device']}, {_source_text(s)}"
            + (f"; median of {s['repeats']}" if len(repeats) > 1 else "")
        )
    return lines


def readme_table(record) -> list:
    """One record as a compact markdown table: a row per workload, epoch seconds per mode
    (the fastest super-batch, each peer that ran), and the gather bound. A merged record
    (:func:`merge_records`) gets a header line per source record, naming its workloads."""
    lines = _header(record) + [
        "",
        "| workload | batches | " + " | ".join(h for h, _ in COLUMNS) + " | gather bound | agree |",
        "|---|---:|" + "---:|" * len(COLUMNS) + "---:|---|",
    ]
    for name, e in record["workloads"].items():
        if "error" in e:
            lines.append(f"| {name} | error: {e['error'][:60]} |" + " |" * (len(COLUMNS) + 2))
            continue
        cells = []
        for header, labels in COLUMNS:
            if labels is None:
                sup = {m: r for m, r in e["modes"].items() if r["kind"] == "super"}
                best = min(sup, key=lambda m: sup[m]["epoch_s_median"], default=None)
                cells.append(
                    "-"
                    if best is None
                    else f"{sup[best]['epoch_s_median']:.3g} ({best.rsplit(' ', 1)[1]})"
                )
            elif header == "peers":
                got = [
                    f"{m.split()[0]} {e['modes'][m]['epoch_s_median']:.3g}"
                    for m in labels
                    if m in e["modes"]
                ]
                cells.append(", ".join(got) or "-")
            else:
                r = next((e["modes"][m] for m in labels if m in e["modes"]), None)
                cells.append("-" if r is None else f"{r['epoch_s_median']:.3g}")
        agree = min(e["agreement"].values()) if e["agreement"] else None
        lines.append(
            f"| {name} | {e['batches']} x {e['batch_size']} | "
            + " | ".join(cells)
            + f" | {e['bound']['epoch_s']:.2g} | {_fmt(agree, '.4f')} |"
        )
    return lines


def merge_records(records) -> dict:
    """One record whose workloads are each taken from the first of ``records`` that has it.

    Parameters
    ----------
    records : list of dict
        ``gsample.bench`` records of one device type and graph, newest first, each with its
        ``file`` name (as :func:`newest_records` adds it).

    Returns
    -------
    dict
        The newest contributing record's fields, with ``workloads`` the merged workloads (in
        :data:`~gsample.bench.workloads.ALL_WORKLOADS` order, unknown names last) and
        ``sources`` the contributing records (without their ``workloads``), in the order of
        their first workload in the table, each with ``taken``: the names of the workloads
        taken from it, and ``host_loops``: their epochs' host speeds (``host_loop_ms_all``).
        A workload's entry is the newest record's even when it is an error.
    """
    taken = {}  # workload -> index into records
    for i, r in enumerate(records):
        for name in r.get("workloads", {}):
            taken.setdefault(name, i)
    order = sorted(
        taken, key=lambda n: ALL_WORKLOADS.index(n) if n in ALL_WORKLOADS else len(ALL_WORKLOADS)
    )
    sources = {}  # index -> source, in table order
    for name in order:
        i = taken[name]
        if i not in sources:
            sources[i] = {
                **{k: v for k, v in records[i].items() if k != "workloads"},
                "taken": [],
                "host_loops": [],
            }
        sources[i]["taken"].append(name)
        sources[i]["host_loops"] += _host_loops(
            {"workloads": {name: records[i]["workloads"][name]}}
        )
    newest = records[min(sources, default=0)]
    return {
        **newest,
        "workloads": {n: records[taken[n]]["workloads"][n] for n in order},
        "sources": list(sources.values()),
    }


def newest_records(folder) -> list:
    """Per (device type, graph) in ``folder`` (and, on the CPU, per thread count: a 1- and a
    2-thread run are two tables), the ``gsample.bench`` records merged so that each
    workload comes from the newest record that has it (:func:`merge_records`), GPU first.

    Parameters
    ----------
    folder : str or pathlib.Path
        Where the ``bench_*.json`` records lie. Quick (CI) records, other harnesses' files
        and unreadable ones are left out.

    Returns
    -------
    list of dict
        A merged record per (device type, graph, CPU threads), sorted GPU first, then by
        graph, then by threads. Newest is
        by the record's ``date``, the file's mtime breaking ties; ``file`` is the newest
        contributing record's file name, and ``sources`` lists every contributing record
        (one when a single record holds all the workloads).
    """
    groups = {}
    for p in pathlib.Path(folder).glob(RESULT_PATTERN):
        try:
            r = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if r.get("harness") != "gsample.bench" or r.get("quick"):
            continue
        threads = r.get("threads") if r.get("device_type") == "cpu" else None
        key = (r.get("device_type"), r.get("graph"), threads)
        rank = (r.get("date", ""), p.stat().st_mtime)
        groups.setdefault(key, []).append((rank, {**r, "file": p.name}))
    return [
        merge_records([r for _, r in sorted(groups[k], key=lambda x: x[0], reverse=True)])
        for k in sorted(groups, key=lambda k: (k[0] != "cuda", str(k[1]), k[2] or 0))
    ]


def readme_block(records) -> str:
    """The README's generated benchmark block (between the markers) for ``records``."""
    body = [
        "<!-- generated by scripts/bench_table.py: per device and graph, each workload from "
        "the newest record that has it; do not edit by hand -->"
    ]
    for r in records:
        body += [""] + readme_table(r)
    return "\n".join(body)


def replace_block(text: str, block: str) -> str:
    """``text`` with what lies between the bench markers replaced by ``block``."""
    pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"no {README_BEGIN} ... {README_END} block")
    return pattern.sub(lambda _: f"{README_BEGIN}\n{block}\n{README_END}", text, count=1)
