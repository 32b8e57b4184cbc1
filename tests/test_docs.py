"""Every ```python block of README.md and docs/**/*.md runs as written.

The blocks of one page run in order in one namespace (a page reads as one session, as a
reader would type it), from the repository root. A marker on the line before a block
changes how it runs:

* ``<!-- test: gpu -->``: needs a CUDA GPU; skipped here, run by ``test_gpu_snippets``
  (marked ``cuda``) where one is present;
* ``<!-- test: data -->``: reads ``../shared/data`` (or ``$GSAMPLE_DATA``); skipped when the
  file it names is absent;
* ``<!-- test: skip (why) -->``: another environment (DGL's, several processes); never run
  here, each listed with its reason by ``pytest -rs``.

Later blocks of a page must not depend on a skipped one.
"""

from __future__ import annotations

import os
import pathlib
import re

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(
    r"(?:<!--\s*test:\s*(?P<mark>[a-z]+)(?P<why>[^>]*?)\s*-->\s*\n)?"
    r"^```python[^\n]*\n(?P<code>.*?)^```",
    re.S | re.M,
)
DATA_FILE = re.compile(r"\.\./shared/data/([\w.-]+)|datasets\.cora\(\)")


def blocks(page: pathlib.Path) -> list[tuple[int, str, str, str]]:
    """``(line, mark, why, code)`` of every python block of ``page``."""
    text = page.read_text(encoding="utf-8")
    return [
        (
            text.count("\n", 0, m.start("code")) + 1,
            m["mark"] or "",
            (m["why"] or "").strip(" ()"),
            m["code"],
        )
        for m in BLOCK.finditer(text)
    ]


def _data_missing(code: str) -> str | None:
    from gsample.datasets import default_data_path

    for m in DATA_FILE.finditer(code):
        name = m.group(1) or "cora.npz"
        path = ROOT.parent / "shared" / "data" / name
        if not path.exists() and not os.path.exists(default_data_path(name)):
            return f"{name} is not in ../shared/data"
    return None


def _run(page: pathlib.Path, gpu: bool) -> list[str]:
    """Run the page's blocks; returns what was skipped, with why."""
    import gsample as gs

    skipped, space = [], {"__name__": "__docs__"}
    gs.manual_seed(0)
    for line, mark, why, code in blocks(page):
        where = f"{page.relative_to(ROOT)}:{line}"
        if mark == "skip" or (mark == "gpu" and not gpu):
            skipped.append(f"{where} ({mark}{': ' + why if why else ''})")
            continue
        if mark == "data" and (missing := _data_missing(code)):
            skipped.append(f"{where} (data: {missing})")
            continue
        try:
            exec(compile(code, where, "exec"), space)
        except Exception as e:
            raise AssertionError(f"the block at {where} fails: {type(e).__name__}: {e}") from e
    return skipped


def _ids(pages):
    return [str(p.relative_to(ROOT)) for p in pages]


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_snippets(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("GSAMPLE_CALIBRATION", "default")
    with torch.random.fork_rng():
        skipped = _run(page, gpu=False)
    if skipped and len(skipped) == len(blocks(page)):
        pytest.skip("; ".join(skipped))


GPU_PAGES = [p for p in PAGES if any(mark == "gpu" for _, mark, _, _ in blocks(p))]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("page", GPU_PAGES, ids=_ids(GPU_PAGES))
def test_gpu_snippets(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    _run(page, gpu=True)


def test_markers_are_known():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r"<!--\s*test:\s*([a-z]+)", text):
            assert m.group(1) in ("gpu", "data", "skip"), f"{page}: unknown marker {m.group(0)}"
