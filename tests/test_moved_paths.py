"""Old module paths (before the package was organised in rooms) still import, as the very
module they became, with a DeprecationWarning that names the new path."""

import importlib
import sys

import pytest

import gsample as gs
from gsample.base.moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_is_its_new_module_with_a_warning(old, monkeypatch):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {MOVED[old]}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(MOVED[old])


def test_what_the_old_readme_taught_still_works(monkeypatch):
    monkeypatch.delitem(sys.modules, "gsample.trace", raising=False)
    with pytest.warns(DeprecationWarning):
        from gsample.trace import TraceError
    assert TraceError is gs.TraceError
    with pytest.raises(gs.TraceError):  # a Python `if` on a traced value
        gs.compile(lambda A, seeds: A[:, seeds] if len(seeds) else A)(
            gs.datasets.rmat(100, 500, seed=0), __import__("torch").arange(4)
        )


def test_importing_old_paths_leaves_the_public_api_alone(monkeypatch):
    """Importing a module binds it on its parent package: no old name may shadow a public
    function there (``gsample.explain`` would replace ``gs.explain``)."""
    for old in MOVED:
        parent, name = old.rsplit(".", 1)
        before = getattr(sys.modules.get(parent), name, None)
        assert before is None or isinstance(before, type(sys)), f"{old} shadows {before!r}"
    for old in MOVED:
        monkeypatch.delitem(sys.modules, old, raising=False)
        with pytest.warns(DeprecationWarning):
            importlib.import_module(old)
    assert callable(gs.explain) and callable(gs.walk) and isinstance(gs.Batch, type)


def test_a_name_that_never_existed_is_still_an_error():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("gsample.no_such_room")
