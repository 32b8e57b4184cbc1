"""The roofline's measured bytes: each compiled mode of a harness record run again under
Nsight Compute in a worker process (:mod:`gsample.bench.roofline_worker`), its DRAM bytes
summed per region (:mod:`gsample.bench.ncu`) and set against the peaks and the bound
(:mod:`gsample.bench.roofline`)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import tempfile
import time

import torch

import gsample as gs
from gsample.bench import ncu, roofline
from gsample.bench.workloads import repo_root


def _super_size(label: str, row: dict):
    """A mode's super-batch size from its label (``..., super-batched N``) or, for
    ``auto``, the size its loader chose; None one at a time."""
    m = re.search(r"super-batched (\d+)$", label)
    return int(m.group(1)) if m else row.get("super_batch_size")


def roofline_jobs(record, sample: int, skip: tuple = ()) -> list:
    """What the ncu worker samples: per workload that ran, each compiled mode (not the
    torch-code modes, 10-100x slower on a GPU, nor peers) and its mini-batches
    (:func:`gsample.bench.roofline.region_batches`); modes labelled in ``skip`` are left out."""
    jobs = []
    for name, e in record["workloads"].items():
        if "modes" not in e:
            continue
        available = round(e["batches"] * e["epoch_scale"])
        batches = {
            label: roofline.region_batches(sample, available, _super_size(label, r))
            for label, r in e["modes"].items()
            if r["kind"] in ("compiled", "super") and label not in skip
        }
        if batches:
            jobs.append({"workload": name, "batches": batches})
    return jobs


def measure_bytes(args, record, device, A, out, stem, skip: tuple = ()) -> dict:
    """Each compiled mode's DRAM bytes under ncu (:mod:`gsample.bench.ncu`), written into
    its ``roofline``; returns the record's ``roofline`` status fields (``status``: measured,
    partly measured, not measured or failed; ``why``)."""
    if device.type != "cuda":
        return {
            "status": "not measured",
            "why": "not on a GPU: ncu measures the DRAM bytes of CUDA kernels (the peaks and "
            "the bound are recorded)",
        }
    exe = ncu.find_ncu(args.ncu)
    if exe is None:
        return {"status": "not measured", "why": "ncu not found (--ncu PATH or $GSAMPLE_NCU)"}
    jobs = roofline_jobs(record, args.roofline_batches, skip)
    micro = record["roofline"]["microbenchmarks"]
    if not jobs:
        return {"status": "not measured", "why": "no compiled mode ran to profile"}
    spec = {
        "graph": args.graph,
        "graph_cache": args.graph_cache,
        "device": device.type,
        "seeds": args.seeds,
        "batch_size": args.batch_size,
        "walk_length": args.walk_length,
        "fanouts": list(args.fanouts) if getattr(args, "fanouts", None) else None,
        "super_batch": args.super_batch,
        "modes": args.modes,
        "jobs": jobs,
        "gathers": [
            {
                "name": key,
                "elem_bytes": int(key[len("gather_") : -1]),
                "source_bytes": g["source_bytes"],
                "num_indices": g["num_indices"],
            }
            for key, g in micro.items()
            if key.startswith("gather_")
        ],
    }
    log_path = out / f"{stem}_ncu.csv"
    fields = {
        "ncu": exe,
        "metrics": list(ncu.METRICS),
        "cache_control": ncu.CACHE_CONTROL,
        "sampled_batches": args.roofline_batches,
        "log": log_path.name,
        "command": " ".join(ncu.ncu_command(exe, "SPEC.json", "OUT.json", log_path.name)),
    }
    root = pathlib.Path(gs.__file__).resolve().parents[1]
    env = {**os.environ, "GSAMPLE_REPO": str(repo_root())}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    torch.cuda.empty_cache()  # the worker shares the device: this run's cached blocks back
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        spec_path, done = pathlib.Path(tmp) / "spec.json", pathlib.Path(tmp) / "out.json"
        spec_path.write_text(json.dumps(spec))
        try:
            table = ncu.run_worker(exe, spec_path, done, log_path, args.roofline_timeout, env)
            regions = json.loads(done.read_text())["regions"]
            marked = [r for r in regions if r.get("marked")]
            sums = ncu.regions_of(table["kernels"], len(marked))
        except (ncu.NcuError, OSError, ValueError, KeyError) as err:
            why = f"{type(err).__name__}: {err}" if not isinstance(err, ncu.NcuError) else str(err)
            for job in jobs:
                for label in job["batches"]:
                    row = record["workloads"][job["workload"]]["modes"][label]
                    row.setdefault("roofline", {})["why"] = f"ncu: {why[:300]}"
            return {**fields, "status": "failed", "why": why, "wall_s": time.perf_counter() - start}
    fields.update(units=table["units"], warnings=table["warnings"][:20])
    sums = iter(sums)
    got_of = [next(sums) if reg.get("marked") else None for reg in regions]
    for reg, got in zip(regions, got_of):  # the peaks first: the modes are set against them
        if reg["workload"] == roofline.MICROBENCHMARK and got and not reg.get("why"):
            g = micro[reg["mode"]]
            g["dram_bytes"] = got["read"] + got["write"]
            g["dram_GB_per_s"] = g["dram_bytes"] / g["seconds_best"] / 1e9
            g["dram_over_useful"] = g["dram_bytes"] / g["bytes"]
    ok = 0
    for reg, got in zip(regions, got_of):
        if reg["workload"] == roofline.MICROBENCHMARK:
            ok += bool(got and got["kernels"] and not reg.get("why"))
            continue
        e = record["workloads"][reg["workload"]]
        row = e["modes"][reg["mode"]]
        mine = row.setdefault("roofline", {})
        if reg.get("why"):
            mine["why"] = reg["why"]
        elif not got["kernels"]:
            mine["why"] = "ncu profiled no kernel in the region"
        else:
            bound = (e.get("roofline") or {}).get("bound") or {}
            mine.update(
                roofline.measured(
                    got,
                    reg["sampled_batches"],
                    e["batches"],
                    row["epoch_s_median"],
                    roofline.peak_of(A, micro),
                    bound.get("epoch_s"),
                    bound.get("bytes"),
                )
            )
            if got["na"]:
                mine["why"] = f"{got['na']} kernels without a value (n/a): bytes undercounted"
            ok += 1
    status = "measured" if ok == len(regions) else "partly measured" if ok else "failed"
    why = (
        None
        if ok == len(regions)
        else f"{len(regions) - ok} of {len(regions)} regions not measured (each mode's "
        "roofline.why says why)"
    )
    return {**fields, "status": status, "why": why, "wall_s": time.perf_counter() - start}


__all__ = ["measure_bytes", "roofline_jobs"]
