"""The ``Examples`` sections of gsample's docstrings run as written (the API reference shows
them: docs/api is generated from the docstrings).

Every module of ``gsample/`` runs its examples with :mod:`doctest` (``ELLIPSIS``, as
``pytest --doctest-modules gsample`` runs them), each docstring in a namespace of its own:
an example imports and builds what it uses (a small graph such as
``gs.datasets.rmat(100, 500, seed=0)``). A module whose examples cannot run yet is listed in
:data:`KNOWN_FAILING` with the reason; the list only shrinks (``test_known_failing_are_modules``
keeps its names real).

An example that cannot run on a CPU (a CUDA kernel, a GPU placement, a process group, DGL)
says so in its text and marks those lines ``# doctest: +SKIP``; a module that imports an
optional dependency which is absent is skipped. An example that reads a dataset of
``../shared/data`` (:data:`NEEDS_DATA`, :data:`DATA_PATH`) runs where the file is present
and is skipped, every line of its docstring, where it is absent.
"""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest
import torch

from gsample.base.random import stream_state
from gsample.datasets import default_data_path

PKG = pathlib.Path(__file__).resolve().parents[1] / "gsample"

#: module -> why its examples do not run yet; every module's run today
KNOWN_FAILING: dict[str, str] = {}


def module_names() -> list[str]:
    """Every module of ``gsample/``, packages as their ``__init__``, sorted."""
    names = []
    for path in sorted(PKG.rglob("*.py")):
        parts = path.relative_to(PKG.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


MODULES = module_names()

#: a call an example makes -> the file of ``../shared/data`` (or ``$GSAMPLE_DATA``) it reads
NEEDS_DATA = {"gs.datasets.cora(": "cora.npz"}

#: a dataset path an example writes out, opened as written (from the working directory)
DATA_PATH = re.compile(r"""["'](\.\./shared/data/[^"']+)["']""")


def skip_absent_data(test: doctest.DocTest) -> None:
    """Mark every example of ``test`` skipped where one of them reads a dataset file that is
    absent here (a clean checkout without ``../shared`` beside it): a call of
    :data:`NEEDS_DATA`, or a literal ``../shared/data/...`` path (:data:`DATA_PATH`)."""
    files = [
        pathlib.Path(default_data_path(file))
        for call, file in NEEDS_DATA.items()
        if any(call in ex.source for ex in test.examples)
    ]
    files += [pathlib.Path(m) for ex in test.examples for m in DATA_PATH.findall(ex.source)]
    if not all(f.exists() for f in files):
        for ex in test.examples:
            ex.options[doctest.SKIP] = True


@pytest.mark.parametrize("name", [m for m in MODULES if m not in KNOWN_FAILING])
def test_docstring_examples_run(name):
    try:
        module = importlib.import_module(name)
    except ImportError as e:  # an optional dependency (DGL, CuPy) that is not installed
        pytest.skip(f"{name} does not import here: {e}")
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    report = []
    failed = 0
    # examples draw from torch's and gsample's global streams (gs.manual_seed): the tests
    # after this one see both as they were
    rng, s = torch.get_rng_state(), stream_state()
    stream = (s.seed, s.ordinal, s.batch_index)
    try:
        for test in sorted(tests, key=lambda t: t.name):
            skip_absent_data(test)
            failed += runner.run(test, out=report.append).failed
    finally:
        torch.set_rng_state(rng)
        s.seed, s.ordinal, s.batch_index = stream
    assert failed == 0, "".join(report)


def test_an_example_reading_absent_data_is_skipped(monkeypatch, tmp_path):
    """Without the dataset file the ``cora`` example is skipped, line by line; with it, it
    runs (and fails here: the file is empty)."""
    from gsample.datasets import synthetic

    test = next(
        t
        for t in doctest.DocTestFinder().find(synthetic, "gsample.datasets.synthetic")
        if t.name.endswith(".cora")
    )
    monkeypatch.setenv("GSAMPLE_DATA", str(tmp_path))
    skip_absent_data(test)
    assert test.examples and all(ex.options.get(doctest.SKIP) for ex in test.examples)
    (tmp_path / "cora.npz").write_bytes(b"")
    for ex in test.examples:
        ex.options.pop(doctest.SKIP, None)
    skip_absent_data(test)
    assert not any(ex.options.get(doctest.SKIP) for ex in test.examples)


def test_an_example_naming_an_absent_data_path_is_skipped(monkeypatch, tmp_path):
    """``read_snap``'s example opens ``../shared/data/...`` as written: from a directory
    without it every line is skipped; from one with both files, none."""
    from gsample.datasets import synthetic

    def read_snap_test():
        return next(
            t
            for t in doctest.DocTestFinder().find(synthetic, "gsample.datasets.synthetic")
            if t.name.endswith(".read_snap")
        )

    work = tmp_path / "repo"
    work.mkdir()
    monkeypatch.chdir(work)
    test = read_snap_test()
    skip_absent_data(test)
    assert test.examples and all(ex.options.get(doctest.SKIP) for ex in test.examples)
    data = tmp_path / "shared" / "data"
    data.mkdir(parents=True)
    (data / "web-NotreDame.txt.gz").write_bytes(b"")
    test = read_snap_test()
    skip_absent_data(test)  # one of its two files still absent
    assert all(ex.options.get(doctest.SKIP) for ex in test.examples)
    (data / "CollegeMsg.txt.gz").write_bytes(b"")
    test = read_snap_test()
    skip_absent_data(test)
    assert not any(ex.options.get(doctest.SKIP) for ex in test.examples)


def test_known_failing_are_modules():
    """A name on the list that is no module (moved, renamed) would hide nothing: drop it."""
    assert not set(KNOWN_FAILING) - set(MODULES)
