"""The harness's roofline, its CPU-checkable core: ncu's CSV parsed as ncu writes it, the
regions told apart by their marker kernels, the scaling of sampled bytes to the epoch, the
least-bytes model against a brute-force count on a small graph, and the batch rules."""

import pathlib

import pytest
import torch

import gsample as gs
from gsample.bench import ncu, roofline, workloads

ROOT = pathlib.Path(__file__).resolve().parents[2]
READ, WRITE = ncu.METRICS
HEADER = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    f'"Block Size","Grid Size","Device","CC","{READ}","{WRITE}"'
)
GATHER = (
    "void at::native::(anonymous namespace)::indexSelectLargeIndex<long, long, unsigned int, "
    '2, 2, -2, true>(at::cuda::detail::TensorInfo<T1, T3>, ""quoted"", T3, long)'
)


def _row(i, name, read, write):
    return (
        f'"{i}","4242","python3.12","127.0.0.1","{name}","1","7","(128, 1, 1)",'
        f'"(1024, 1, 1)","0","9.0","{read}","{write}"'
    )


#: what ``ncu --csv --page raw --print-units base --log-file`` writes: its own lines, the
#: header, a units row, a row per kernel (thousands grouped; names with commas and quotes)
LOG = "\n".join(
    [
        "==PROF== Connected to process 4242 (/usr/bin/python3.12)",
        f'==PROF== Profiling "{ncu.MARKER}" - 0: 0%....50%....100% - 1 pass',
        '==PROF== Profiling "indexSelectLargeIndex" - 1: 0%....50%....100% - 1 pass',
        "==WARNING== Found outstanding GPU clock reset, trying to revert...Success.",
        "==PROF== Disconnected from process 4242",
        HEADER,
        '"","","","","","","","","","","","byte","byte"',
        _row(0, ncu.MARKER, "0", "0"),
        _row(1, GATHER, "1,048,576", "262,144"),
        _row(2, "void at::native::vectorized_elementwise_kernel<4>", "4,096", "n/a"),
        _row(3, ncu.MARKER, "32", "0"),
        _row(4, GATHER, "2,000,000", "1,000"),
    ]
)


def test_the_csv_parses_as_ncu_writes_it():
    t = ncu.parse_csv(LOG)
    assert [k["id"] for k in t["kernels"]] == [0, 1, 2, 3, 4]
    assert t["kernels"][1] == {"id": 1, "name": GATHER.replace('""', '"'), "read": 1048576.0,
                               "write": 262144.0}  # fmt: skip
    assert t["kernels"][2]["write"] is None  # n/a: kept as unknown, never as 0
    assert t["units"] == {READ: "byte", WRITE: "byte"}
    assert t["warnings"] and not t["errors"]
    first, second = ncu.regions_of(t["kernels"], 2)
    assert first == {"read": 1048576.0 + 4096, "write": 262144.0, "kernels": 2, "na": 1}
    assert second == {"read": 2e6, "write": 1000.0, "kernels": 1, "na": 0}


def test_scaled_units_and_units_in_the_header_are_converted():
    scaled = LOG.replace('"byte","byte"', '"Mbyte","Kbyte"')
    k = ncu.parse_csv(scaled)["kernels"][4]
    assert (k["read"], k["write"]) == (2e12, 1e6)  # 2,000,000 Mbyte; 1,000 Kbyte
    header = HEADER.replace(f'"{READ}"', f'"{READ} [Gbyte]"').replace(
        f'"{WRITE}"', f'"{WRITE} [byte]"'
    )
    k = ncu.parse_csv("\n".join([header, _row(0, "k", "1.5", "7")]))["kernels"][0]
    assert (k["read"], k["write"]) == (1.5e9, 7.0)
    assert ncu.to_bytes("3", "KiB") == 3072.0


@pytest.mark.parametrize(
    "text, needle",
    [
        (
            "==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM - The user does not "
            "have permission to access NVIDIA GPU Performance Counters on the target device 0.",
            "ERR_NVGPUCTRPERM",
        ),
        ("==PROF== Disconnected from process 1\n", "no CSV table"),
        ('"ID","Kernel Name","gpu__time_duration.sum"\n"0","k","5"', READ),
        (HEADER + "\n" + _row(0, "k", "abc", "1"), "'abc'"),
        (HEADER + '\n"","","","","","","","","","","","parsec","byte"\n' + _row(0, "k", "1", "1"),
         "unknown unit"),
    ],
)  # fmt: skip
def test_what_ncu_could_not_measure_is_an_error_saying_why(text, needle):
    with pytest.raises(ncu.NcuError, match=needle):
        ncu.parse_csv(text)


def test_regions_need_their_markers():
    kernels = ncu.parse_csv(LOG)["kernels"]
    with pytest.raises(ncu.NcuError, match=r"found 2 region markers .* expected 3"):
        ncu.regions_of(kernels, 3)
    with pytest.raises(ncu.NcuError, match="before the first region"):
        ncu.regions_of(kernels[1:], 1)


def test_the_ncu_command_restricts_to_the_regions_in_base_units():
    cmd = ncu.ncu_command("/opt/ncu", "s.json", "o.json", "log.csv", python="py")
    text = " ".join(cmd)
    for flag in (
        "--target-processes all",
        "--profile-from-start off",
        f"--metrics {READ},{WRITE}",
        "--csv --page raw",
        "--print-units base",
        "--cache-control none",
        "--log-file log.csv",
    ):
        assert flag in text, flag
    assert cmd[0] == "/opt/ncu" and cmd[-5:] == [
        "py", "-m", "gsample.bench.roofline_worker", "s.json", "o.json",
    ]  # fmt: skip


def test_ncu_is_found_or_none(monkeypatch, tmp_path):
    monkeypatch.setenv("GSAMPLE_NCU", str(tmp_path / "nope"))
    assert ncu.find_ncu() is None
    exe = tmp_path / "ncu"
    exe.write_text("#!/bin/sh\n")
    assert ncu.find_ncu(str(exe)) == str(exe)


def test_sampled_bytes_scale_to_the_epoch():
    region = {"read": 6e6, "write": 2e6, "kernels": 40, "na": 0}
    peak = {"name": "gather_4B", "GB_per_s": 400.0, "basis": "b", "copy_GB_per_s": 800.0}
    r = roofline.measured(region, 4, 384, 0.05, peak, 0.01, 1e8)
    assert r["scale"] == 96.0
    assert r["dram_bytes_epoch"] == pytest.approx(8e6 * 96)
    assert r["achieved_GB_per_s"] == pytest.approx(8e6 * 96 / 0.05 / 1e9)
    assert r["peak_fraction"] == pytest.approx(r["achieved_GB_per_s"] / 400.0)
    assert r["copy_fraction"] == pytest.approx(r["achieved_GB_per_s"] / 800.0)
    assert r["x_bound"] == pytest.approx(5.0)
    assert r["bytes_over_bound"] == pytest.approx(8e6 * 96 / 1e8)
    assert r["peak"] == "gather_4B" and r["kernels_sampled"] == 40


@pytest.mark.parametrize(
    "cap, full, n, want",
    [
        (48, 192, 64, 64),  # a cap under N: one whole super-batch
        (96, 192, 64, 128),  # whole super-batches
        (128, 192, 64, 128),
        (48, 50, 64, 50),  # never past the epoch
        (192, 192, 64, 192),  # uncapped: the epoch as it is
        (48, 192, None, 48),
        (48, 192, "auto", 48),
        (48, 192, 1, 48),
    ],
)
def test_super_batched_modes_time_at_least_their_n(cap, full, n, want):
    got = roofline.timed_batches(cap, full, n)
    assert got == want
    if isinstance(n, int) and n > 1 and cap < full:
        assert got >= min(n, full) and (got % n == 0 or got == full)


@pytest.mark.parametrize(
    "sample, available, n, want", [(4, 384, None, 4), (4, 384, 64, 64), (100, 384, 64, 128),
                                   (4, 48, 64, 48), (4, 2, None, 2)]
)  # fmt: skip
def test_profiled_regions_are_whole_super_batches(sample, available, n, want):
    assert roofline.region_batches(sample, available, n) == want


# ------------------------------------------------------------------ the bound, brute force
def _graph():
    """A small directed graph where some nodes have no in-edge (walks stop there), some
    more than the fanouts (samples keep fewer than the column holds)."""
    g = torch.Generator().manual_seed(3)
    src = torch.randint(0, 40, (160,), generator=g)
    dst = torch.randint(0, 30, (160,), generator=g)  # nodes 30-39: no in-edge
    return gs.Matrix.from_edge_index(torch.stack([src, dst]), num_nodes=40)


def _size(t):
    return t.element_size() if t is not None else 0


def brute_blocks(name, G, outs):
    """Bytes of blocks counted one frontier node, edge and stored element at a time."""
    g = G.csc
    ptr, row = _size(g.indptr), _size(g.rows)
    val = _size(g.values)
    indptr = g.indptr.tolist()
    read = write = 0
    for blocks in outs:
        for i, b in enumerate(blocks):
            c = b.csc
            for j in c.col_ids.tolist():
                read += _size(c.col_ids) + 2 * ptr
                if name == "ladies":
                    for _ in range(indptr[j], indptr[j + 1]):
                        read += row + val
            if name != "ladies":
                for _ in c.rows.tolist():
                    read += row
            for t in (c.indptr, c.rows, c.eids, c.values, c.row_ids):
                if t is not None:
                    for _ in t.flatten().tolist():
                        write += t.element_size()
            if i + 1 < len(blocks):
                for _ in blocks[i + 1].csc.col_ids.tolist():
                    write += _size(c.col_ids)
    return read, write


def brute_walks(name, G, outs):
    """Bytes of walks counted one step at a time."""
    ptr, row = _size(G.csc.indptr), _size(G.csc.rows)
    read = write = 0
    for walks in outs:
        for w in walks.tolist():
            read += walks.element_size()
            write += len(w) * walks.element_size()
            for t in range(1, len(w)):
                if w[t] >= 0:
                    read += 2 * ptr + row + (row if name == "node2vec" and t >= 2 else 0)
                elif w[t - 1] >= 0:  # the dead end's indptr, read to find it empty
                    read += 2 * ptr
    return read, write


@pytest.mark.parametrize("name", list(roofline.BOUND_MODELS))
def test_the_bound_counts_what_the_samples_must_move(name):
    workloads.import_repo(workloads.repo_root())
    w = workloads.workload(name, _graph(), batch_size=6, walk_length=5)
    if name == "graphsage":
        w.kw["fanouts"] = (3, 2)
    if name == "ladies":
        w.kw["layers"] = (5, 4)
    gs.manual_seed(0)
    seeds = torch.arange(30)
    outs = [w.fn(w.G, seeds[i : i + 6], **w.kw) for i in range(0, 30, 6)]
    tally = roofline.BoundTally(name, w.G)
    for o in outs:
        tally.add(o)
    got = tally.result()
    brute = (brute_walks if w.walk else brute_blocks)(name, w.G, outs)
    assert (got["read_bytes"], got["write_bytes"]) == brute
    assert got["bytes"] == sum(brute) and got["outputs"] == 5
    if w.walk:  # the cases the model distinguishes all occur
        walks = torch.cat(outs)
        assert (walks[:, 1:] < 0).any() and (walks[:, -1] >= 0).any()
    elif name == "graphsage":
        first = [b[0] for b in outs]
        deg = w.G.csc.indptr.diff()
        assert any((deg[b.col_ids] > 3).any() for b in first)  # a column kept fewer


def test_the_bound_refuses_a_workload_without_a_model():
    with pytest.raises(ValueError, match="name: no bound model for 'shadow'"):
        roofline.BoundTally("shadow", _graph())


def test_the_bound_time_is_bytes_over_the_peak_of_the_row_width():
    G = _graph()
    micro = {"gather_4B": {"GB_per_s": 100.0}, "gather_8B": {"GB_per_s": 200.0}}
    modes = {
        "compiled, cuda backend": {"kind": "compiled", "epoch_s_median": 0.5},
        "plain PyTorch": {"kind": "plain", "epoch_s_median": 1.0},
    }
    key = f"gather_{G.csc.rows.element_size()}B"
    peak = roofline.peak_of(G, micro)
    assert (peak["name"], peak["GB_per_s"]) == (key, micro[key]["GB_per_s"])
    assert peak["basis"].startswith("useful bytes") and peak["copy_GB_per_s"] is None
    micro[key]["dram_GB_per_s"] = 900.0  # measured by ncu: the peak becomes DRAM's
    peak = roofline.peak_of(G, micro)
    assert peak["GB_per_s"] == 900.0 and peak["basis"].startswith("DRAM bytes")
    out = roofline.with_bound_times({"bytes": 2e9}, modes, micro, G)
    assert out["peak"] == key
    assert out["epoch_s"] == pytest.approx(2e9 / (micro[key]["GB_per_s"] * 1e9))
    assert modes["compiled, cuda backend"]["roofline"]["x_bound"] == pytest.approx(
        0.5 / out["epoch_s"]
    )
    assert "roofline" not in modes["plain PyTorch"]


def test_microbenchmarks_say_when_the_source_is_small():
    m = roofline.microbenchmarks(torch.device("cpu"), quick=True)
    for key, width in (("gather_4B", 4), ("gather_8B", 8)):
        g = m[key]
        assert g["GB_per_s"] > 0 and g["index_dtype"] == f"int{8 * width}"
        assert g["bytes"] == g["num_indices"] * 3 * width
        assert g["source_bytes"] < roofline.SOURCE_BYTES
    assert m["copy"]["bytes"] == 2 * m["copy"]["array_bytes"] and m["copy"]["GB_per_s"] > 0
    assert "smaller than 8 GiB (on the CPU)" in m["note"]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU")
def test_gpu_microbenchmarks_use_an_8_gib_source():
    free = torch.cuda.mem_get_info()[0]
    m = roofline.microbenchmarks(torch.device("cuda"))
    if free > 16 * roofline.GIB:
        assert m["note"] is None
        assert m["gather_4B"]["source_bytes"] == m["gather_8B"]["source_bytes"] == 8 << 30
    assert m["copy"]["GB_per_s"] > m["gather_8B"]["GB_per_s"] > 0
