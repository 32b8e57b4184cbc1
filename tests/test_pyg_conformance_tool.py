"""scripts/pyg_conformance.py without PyG's tests: its patching (loaders swapped, exactly the
pyg-lib / torch-sparse skips lifted), its JUnit reading and its failure classifier, on a small
synthetic test module and conftest written with PyG's decorators and names."""

import concurrent.futures
import importlib.util
import subprocess
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("torch_geometric")
SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "pyg_conformance.py"
_spec = importlib.util.spec_from_file_location("pyg_conformance_script", SCRIPT)
conformance = importlib.util.module_from_spec(_spec)
sys.modules["pyg_conformance_script"] = conformance
_spec.loader.exec_module(conformance)

_MISSING = {
    name: importlib.util.find_spec(name) is None
    for name in ("pyg_lib", "torch_sparse", "torch_frame")
}

CONFTEST = """
import pytest


@pytest.fixture
def answer():
    return 42
"""

# the shapes of PyG's loader tests: the same imports, decorators and flag checks
MODULE = """
import pytest
import torch

import torch_geometric.typing
from torch_geometric.data import Data
from torch_geometric.loader import NeighborLoader, NodeLoader
from torch_geometric.testing import onlyNeighborSampler, withCUDA, withPackage
from torch_geometric.typing import (
    WITH_EDGE_TIME_NEIGHBOR_SAMPLE,
    WITH_PYG_LIB,
    WITH_TORCH_SPARSE,
    WITH_WEIGHTED_NEIGHBOR_SAMPLE,
)


def test_loader_swapped(answer):
    import gsample.pyg

    assert answer == 42  # PyG's conftest fixtures still serve
    assert NeighborLoader is gsample.pyg.NeighborLoader
    assert NodeLoader.__module__.startswith("torch_geometric")  # the other names stay


@withPackage("pyg_lib")
def test_needs_pyg_lib():
    pass


@withPackage("torch_sparse>=0.6", "pyg_lib|torch_sparse")
def test_needs_torch_sparse():
    pass


@withPackage("torch_frame")
def test_needs_torch_frame():
    pass


@withPackage("pyg_lib", "gsample_no_such_package")
def test_needs_pyg_lib_and_another():
    pass


@withPackage("pyg_lib", "torch_sparse")
def test_calls_kernels():
    torch.ops.pyg.neighbor_sample  # PyG's own kernel: this skip stays


@onlyNeighborSampler
def test_only_neighbor_sampler():
    pass


@pytest.mark.skipif(not WITH_WEIGHTED_NEIGHBOR_SAMPLE, reason="no weighted")
def test_weighted():
    pass


def test_flags_in_bodies():
    assert WITH_PYG_LIB and WITH_TORCH_SPARSE and WITH_EDGE_TIME_NEIGHBOR_SAMPLE
    if not torch_geometric.typing.WITH_PYG_LIB:
        return
    NeighborLoader(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=3), [1])


@withCUDA
def test_on_device(device):
    assert device.type in ("cpu", "cuda")
"""

LINK_MODULE = """
import pytest
from torch_geometric.loader import LinkNeighborLoader


def test_link():
    LinkNeighborLoader(None, num_neighbors=[1])
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The synthetic tests run as the script runs PyG's: gsample's loaders, then null ones."""
    sources = {
        "conftest.py": CONFTEST,
        "test_synthetic.py": MODULE,
        "test_link.py": LINK_MODULE,
    }
    base = tmp_path_factory.mktemp("conformance")
    folders = {k: conformance.write_copy(sources, base / k, k) for k in ("gsample", "null")}
    # two pytest processes at once: the tool's test stays fast
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        done = {k: pool.submit(conformance.run_pytest, f, timeout=120) for k, f in folders.items()}
        return {k: future.result() for k, future in done.items()}


def _outcomes(results):
    return {test.split("::")[1]: outcome for test, (outcome, _) in results.items()}


def test_skips_lifted_exactly(runs):
    got = _outcomes(runs["gsample"])
    assert got["test_needs_pyg_lib"] == "passed"
    assert got["test_needs_torch_sparse"] == "passed"
    assert got["test_only_neighbor_sampler"] == "passed"
    assert got["test_weighted"] == "passed"
    assert got["test_needs_pyg_lib_and_another"] == "skipped"
    assert got["test_needs_torch_frame"] == ("skipped" if _MISSING["torch_frame"] else "passed")
    kernels = _MISSING["pyg_lib"] or _MISSING["torch_sparse"]
    assert got["test_calls_kernels"] == ("skipped" if kernels else "passed")
    assert got["test_on_device[cpu]"] == "passed"
    message = runs["gsample"]["test_synthetic::test_needs_pyg_lib_and_another"][1]
    assert "gsample_no_such_package" in message and "pyg_lib" not in message


def test_loaders_swapped(runs):
    got = _outcomes(runs["gsample"])
    assert got["test_loader_swapped"] == "passed"
    # the flags read true in bodies too (the module's names and torch_geometric.typing.X):
    # the test went on to build gsample's loader
    assert got["test_flags_in_bodies"] == "passed"
    assert _outcomes(runs["null"])["test_flags_in_bodies"] == "failed"
    outcome, message = runs["gsample"]["test_link::test_link"]
    import gsample.pyg

    if not hasattr(gsample.pyg, "LinkNeighborLoader"):
        assert outcome == "failed"
        assert conformance.NO_LINK_LOADER in message
        assert conformance.classify(message) == "LinkNeighborLoader"


def test_summary_counts_early_returns(runs):
    s = conformance.summarize(runs["gsample"], runs["null"])
    assert s["total"] == len(runs["gsample"])
    assert s["passed"] == s["passed_build_loader"] + s["passed_return_early"]
    assert s["passed"] + s["failed"] + s["skipped"] == s["total"]
    # a test that builds no loader passes in both runs; one that builds a loader only with
    # gsample's
    assert "test_synthetic::test_needs_pyg_lib" in s["return_early"]
    assert "test_synthetic::test_flags_in_bodies" not in s["return_early"]
    assert "test_synthetic::test_flags_in_bodies" in s["passes"]
    assert "total" in conformance.report(s)


def test_patch_text():
    text = conformance.patch_test_module(MODULE, "null")
    assert "from torch_geometric.loader import NodeLoader\n" in text
    assert "RuntimeError" in text and "from gsample.pyg" not in text
    assert "torch_geometric.typing.WITH_PYG_LIB" not in text
    assert "@_gsample_kernel_withPackage(" in text  # only the test calling the kernels
    assert text.count("@_gsample_kernel_withPackage(") == 1
    compile(text, "patched", "exec")
    with pytest.raises(ValueError, match="no `from torch_geometric"):
        conformance.patch_test_module("import torch\n")
    assert "pytest_collection_modifyitems" in conformance.patch_conftest(CONFTEST)


def test_cuda_only_keeps_the_cuda_cases(monkeypatch):
    namespace = {}
    exec(conformance.patch_conftest(CONFTEST), namespace)
    hook = namespace["pytest_collection_modifyitems"]
    deselected = []
    config = types.SimpleNamespace(
        hook=types.SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items))
    )

    def item(name, **params):
        return types.SimpleNamespace(name=name, callspec=types.SimpleNamespace(params=params))

    items = [item("cpu", device="cpu"), item("cuda", device="cuda:0"), item("plain")]
    items.append(types.SimpleNamespace(name="no_callspec"))
    monkeypatch.setenv(conformance.CUDA_ONLY_ENV, "0")
    hook(config, items)
    assert len(items) == 4 and not deselected
    monkeypatch.setenv(conformance.CUDA_ONLY_ENV, "1")
    hook(config, items)
    assert [i.name for i in items] == ["cuda"]
    assert [i.name for i in deselected] == ["cpu", "plain", "no_callspec"]


def test_read_sources(tmp_path):
    for path in conformance.PYG_FILES:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(f"# {path}\n")
    got = conformance.read_sources(tmp_path)
    assert got["conftest.py"] == "# test/conftest.py\n"
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "x"], check=True)
    subprocess.run([*git, "tag", "v1"], check=True)
    (tmp_path / "test/conftest.py").write_text("changed\n")
    assert conformance.read_sources(tmp_path, "v1")["conftest.py"] == "# test/conftest.py\n"
    with pytest.raises(FileNotFoundError):
        conformance.read_sources(tmp_path / "nowhere")


@pytest.mark.parametrize(
    "message, category",
    [
        ("NotImplementedError: gsample.pyg has no LinkNeighborLoader", "LinkNeighborLoader"),
        (
            "TypeError: data: gsample.pyg.NeighborLoader takes a torch_geometric Data; "
            "got HeteroData",
            "HeteroData",
        ),
        (
            "TypeError: data: ...; got a tuple (a FeatureStore, GraphStore?)",
            "(FeatureStore, GraphStore)",
        ),
        (
            "UnsupportedArgument: gsample.pyg.NeighborLoader: subgraph_type='induced' is not "
            "supported yet",
            "subgraph_type",
        ),
        ("ValueError: index: temporal sampling (input_time) is not supported yet", "temporal"),
        ("TypeError: gsample.pyg.NeighborLoader: time_attr='time' is not supported", "temporal"),
        ("TypeError: gsample.pyg.NeighborLoader: disjoint=True is not supported yet", "disjoint"),
        (
            "TypeError: gsample.pyg.NeighborLoader: unexpected keyword argument 'weight_attr' "
            "(neither ...)",
            "missing argument weight_attr",
        ),
        (
            "TypeError: gsample.pyg.NeighborLoader: filter_per_worker=True is not supported",
            "missing argument filter_per_worker",
        ),
        ("TypeError: __init__() missing 1 required positional argument: 'x'", "missing argument x"),
        ("AssertionError: assert 3 == 4", "other"),
        ("RuntimeError: shape mismatch", "other"),
    ],
)
def test_classify(message, category):
    assert conformance.classify(message) == category


def test_parse_junit_first_error(tmp_path):
    junit = tmp_path / "j.xml"
    junit.write_text(
        """<?xml version="1.0"?><testsuites><testsuite>
<testcase classname="m" name="a"/>
<testcase classname="m" name="b"><failure message="long repr">x
E   TypeError: gsample.pyg.NeighborLoader: disjoint=True is not supported
E   more</failure></testcase>
<testcase classname="m" name="c"><failure message="AssertionError: Regex pattern did not match.">
E   AssertionError: Regex pattern did not match.
E     Regex: 'foo'
E     Actual message: "subgraph_type='induced' is not supported"</failure></testcase>
<testcase classname="m" name="d"><skipped message="Package torch_frame not found"/></testcase>
<testcase classname="m" name="e"><error message="fixture 'x' not found"/></testcase>
</testsuite></testsuites>"""
    )
    got = conformance.parse_junit(junit)
    assert got["m::a"] == ("passed", "")
    assert got["m::b"][0] == "failed" and conformance.classify(got["m::b"][1]) == "disjoint"
    assert conformance.classify(got["m::c"][1]) == "subgraph_type"
    assert got["m::d"] == ("skipped", "Package torch_frame not found")
    assert got["m::e"] == ("failed", "fixture 'x' not found")
