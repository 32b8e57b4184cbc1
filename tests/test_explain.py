"""``gs.explain`` and ``python -m gsample ir``: the IR before and after each pass, which
passes changed it, the layouts chosen, and the programs of cached nodes."""

import io
import os
import pathlib
import re
import subprocess
import sys

import pytest
import torch
from helpers import graphsage as sage

import gsample as gs
from gsample.__main__ import main as cli
from gsample.capture.trace import TraceError
from gsample.ir import Kind, Op, VerifyError, format_lines, format_table
from gsample.passes import PIPELINE

ROOT = pathlib.Path(__file__).resolve().parents[1]


def graphsage(A, seeds, fanouts=(4, 3)):
    return sage(A, seeds, fanouts)


def ladies_like(A, seeds, layers=(20, 20)):
    blocks = []
    for k in layers:
        sub = A[:, seeds]
        p = (sub**2).sum(axis=1)
        s = sub.collective_sample(k, node_probs=p / p.sum())
        blocks.append(s.div(s.sum(axis=0), axis=0))
        seeds = s.all_nodes()
    return blocks


@pytest.fixture(scope="module")
def A():
    return gs.datasets.rmat(500, 5000, seed=2, weighted=True)


@pytest.fixture(scope="module")
def seeds():
    return torch.arange(16)


def pass_names(passes):
    return [(e[0] if isinstance(e, tuple) else e).__name__ for e in passes]


def section(text, title):
    """The lines of the ``== title... ==`` section."""
    out, inside = [], False
    for line in text.splitlines():
        if line.startswith("== "):
            inside = line.startswith(f"== {title}")
            continue
        if inside:
            out.append(line)
    return [line for line in out if line]


@pytest.mark.parametrize("fn", [graphsage, ladies_like])
def test_every_pipeline_pass_is_listed_with_changed_or_unchanged(fn, A, seeds):
    text = gs.explain(fn, A, seeds, file=False)
    headings = re.findall(r"^== pass (\d+)/(\d+) (\w+): (changed|unchanged) ==$", text, re.M)
    assert [h[2] for h in headings] == pass_names(PIPELINE)
    assert all(int(h[1]) == len(PIPELINE) for h in headings)
    assert [int(h[0]) for h in headings] == list(range(1, len(PIPELINE) + 1))
    summary = "\n".join(section(text, "summary"))
    for _, _, name, _state in headings:
        assert name in summary
    # the IR is shown after exactly the passes that changed it
    for title in re.findall(r"^== (pass \d+/\d+ \w+: changed) ==$", text, re.M):
        assert any(line.startswith("%") for line in section(text, title))
    for title in re.findall(r"^== (pass \d+/\d+ \w+: unchanged) ==$", text, re.M):
        assert not any(line.startswith("%") for line in section(text, title))


def test_traced_and_optimised_ir_are_the_compilers(A, seeds):
    compiled = gs.compile(ladies_like)
    text = gs.explain(compiled, A, seeds, file=False)
    traced = gs.compile(ladies_like, passes=[]).program(A, seeds)
    optimised = compiled.program(A, seeds)
    assert "\n".join(section(text, "traced IR")) == format_lines(traced)
    final = section(text, "optimised IR")
    assert [re.sub(r"_\d+", "", line) for line in final] == [
        re.sub(r"_\d+", "", line) for line in format_lines(optimised).splitlines()
    ]
    assert text.startswith("gs.explain: ladies_like(A, seeds, layers=(20, 20))")
    assert re.search(r"traced\s+A\s+matrix 500 nodes, 5,000 edges, torch.float32 values", text)
    assert re.search(r"static\s+layers\s+\(20, 20\)", text)


def test_layouts_section_lists_every_matrix_value(A, seeds):
    compiled = gs.compile(ladies_like)
    text = gs.explain(compiled, A, seeds, file=False)
    rows = section(text, "layouts")
    final = compiled.program(A, seeds)
    matrices = [n for n in final.nodes if n.kind is Kind.MATRIX]
    top = [r for r in rows if "/" not in r.split()[0]]
    assert len(top) == len(matrices)
    for row in top:
        assert re.search(r"\s(csc|csr-compact|csr|coo)\s+(default for \w+|chosen by a pass)$", row)
    assert {r.split()[0] for r in top} == {f"%{n.name}" for n in matrices}
    assert any("default for" in r for r in rows)
    assert "(A)" in rows[0]


def test_a_layout_chosen_by_a_pass_is_reported(A, seeds):
    def choose_csr(graph):
        for n in graph.nodes:
            if n.op is Op.SLICE_COLS:
                n.meta["layout"] = "csr"
        return graph

    text = gs.explain(graphsage, A, seeds, passes=[(choose_csr, "a test layout")], file=False)
    assert "== pass 1/1 choose_csr: changed ==" in text
    assert "why here: a test layout" in text
    rows = section(text, "layouts")
    chosen = [r for r in rows if "chosen by a pass" in r]
    assert len(chosen) == 2 and all(" csr " in r for r in chosen)
    assert any(" csc " in r and "default" in r for r in rows)


def test_compiled_sampler_passes_are_used_and_none_is_fine(A, seeds):
    text = gs.explain(gs.compile(graphsage, passes=[]), A, seeds, file=False)
    assert "== passes: none ==" in text and "== pass 1/" not in text
    assert "compiled sampler: 0 program(s) cached, not yet this call's" in text
    compiled = gs.compile(graphsage)
    compiled.program(A, seeds)
    text = gs.explain(compiled, A, seeds, fanouts=(2,), file=False)
    assert "1 program(s) cached, not yet this call's; 1 trace(s) so far" in text
    assert "static  fanouts  (2,)" in text
    assert compiled.traces == 1  # explain does not touch the cache


def test_cached_programs_are_printed(A, seeds):
    compiled = gs.compile(ladies_like)
    final = compiled.program(A, seeds)
    text = gs.explain(compiled, A, seeds, file=False)
    cached = [n for n in final.nodes if n.op is Op.CACHED]
    body = section(text, "programs of cached")
    if not cached:
        assert body == ["(none)"]
        pytest.skip("the pipeline hoists nothing here")
    assert any("computed once per graph" in line for line in body)
    for n in cached:
        for inner in n.attrs["program"].nodes:
            assert any(f"%{inner.name} = {inner.op.value}(" in line for line in body)


def test_formats_and_output(A, seeds, capsys):
    table = gs.explain(graphsage, A, seeds, format="table", file=False)
    assert format_table(gs.compile(graphsage, passes=[]).program(A, seeds)) in table
    dot = gs.explain(graphsage, A, seeds, format="dot", file=False)
    depth = 0
    for line in dot.splitlines():  # prose is // comments, the rest dot
        if depth == 0 and line:
            assert line.startswith("//") or line.startswith("digraph "), line
        depth += line.count("{") - line.count("}")
    assert depth == 0 and dot.count("digraph ") >= 2
    buf = io.StringIO()
    text = gs.explain(graphsage, A, seeds, file=buf)
    assert buf.getvalue() == text
    assert capsys.readouterr().out == ""
    gs.explain(graphsage, A, seeds)
    assert capsys.readouterr().out == text
    with pytest.raises(ValueError, match="format"):
        gs.explain(graphsage, A, seeds, format="svg")


def test_a_pass_that_breaks_the_ir_is_named(A, seeds):
    def breaker(graph):
        graph.remove([n for n in graph.nodes if n.op is Op.SLICE_COLS])
        return graph

    buf = io.StringIO()
    with pytest.raises(VerifyError, match=r"pass breaker \(#1 of 1\) left an invalid IR"):
        gs.explain(graphsage, A, seeds, passes=[breaker], file=buf)
    assert "breaker: BROKE THE IR" in buf.getvalue()


def test_trace_errors_propagate(A, seeds):
    def bad(A, seeds):
        if A[:, seeds].sum(axis=0).sum() > 0:
            return A
        return A

    with pytest.raises(TraceError, match=r"test_explain\.py"):
        gs.explain(bad, A, seeds, file=False)


# ----------------------------------------------------------------------------- the CLI
def run_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "gsample", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "target, op",
    [
        ("examples/graphsage.py:graphsage", "individual_sample"),
        ("examples/ladies.py:ladies", "collective_sample"),
    ],
)
def test_cli_prints_the_ir(target, op):
    r = run_cli("ir", target)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("graph: R-MAT(2000, 20000, seed=0)")
    for title in ("traced IR", "optimised IR", "layouts", "summary"):
        assert f"== {title}" in out
    assert re.search(rf"^%\w+ = {op}\(", out, re.M)
    assert len(re.findall(r"^== pass \d+/\d+ \w+: (?:changed|unchanged) ==$", out, re.M)) == len(
        PIPELINE
    )
    if "ladies" in target:
        assert "through ladies.normalize" in out
        assert "static  layers  (4000, 4000, 4000)" in out


def test_cli_help():
    r = run_cli("--help")
    assert r.returncode == 0 and "ir" in r.stdout
    r = run_cli("ir", "--help")
    assert r.returncode == 0 and "FILE.py:FUNCTION" in r.stdout and "random_inputs" in r.stdout


def test_cli_arguments_in_process(capsys, tmp_path):
    assert (
        cli(
            [
                "ir",
                str(ROOT / "examples/pass_sampler.py:pass_sampler"),
                "--arg",
                "fanouts=[2]",
                "--format",
                "table",
                "--num-nodes",
                "300",
                "--num-edges",
                "3000",
                "--batch-size",
                "8",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "traced  W3" in out and "static  fanouts  [2]" in out
    assert "seeds    tensor torch.int64 (8,)" in out
    assert (
        cli(
            [
                "ir",
                str(ROOT / "examples/shadow.py:shadow"),
                "--no-passes",
                "--format",
                "dot",
                "--weighted",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "// == passes: none ==" in out and "digraph" in out
    # a function whose tensor parameter nobody supplies
    f = tmp_path / "mine.py"
    f.write_text(
        "def needs_w(A, seeds, W):\n    return A[:, seeds] * W[seeds][0]\n"
        "def branchy(A, seeds):\n    if len(seeds) > 2:\n        return A\n"
        "    return A\n"
    )
    with pytest.raises(SystemExit, match="parameter 'W' of needs_w has no default; pass --arg"):
        cli(["ir", f"{f}:needs_w"])
    with pytest.raises(SystemExit, match="no function 'nothing'"):
        cli(["ir", f"{f}:nothing"])
    with pytest.raises(SystemExit, match=r"expected path/to/file\.py:function"):
        cli(["ir", str(f)])
    with pytest.raises(SystemExit, match="not a parameter"):
        cli(["ir", f"{f}:branchy", "--arg", "k=3"])
    assert cli(["ir", f"{f}:branchy"]) == 1
    assert "mine.py:4" in capsys.readouterr().err
