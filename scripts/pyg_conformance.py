"""PyG's own loader tests with gsample's loaders swapped in: counts and failures by cause.

    python scripts/pyg_conformance.py --pyg PATH [--ref REF] [--work DIR] [--json FILE]
                                      [--cuda] [--jobs N] [--timeout S]

    # a git checkout or mirror of pytorch_geometric, files read at a tag
    python scripts/pyg_conformance.py --pyg ~/src/pytorch_geometric --ref 2.8.0.post1
    # a source tree (an unpacked sdist), files read as they are
    python scripts/pyg_conformance.py --pyg ~/src/pytorch_geometric-2.8.0 --json conf.json
    # on a GPU machine: only the ``withCUDA`` cases on ``cuda:0``
    python scripts/pyg_conformance.py --pyg ~/src/pytorch_geometric --ref 2.8.0.post1 --cuda

PyG's code stays out of this repository: ``test/loader/test_neighbor_loader.py``,
``test/loader/test_link_neighbor_loader.py`` and ``test/conftest.py`` are copied (with ``--ref``,
through ``git -C PATH show REF:test/...``) into a temporary folder (or ``--work DIR``), and only
that copy is patched, never PyG's installed package:

- the loaders are swapped: ``NeighborLoader`` is ``gsample.pyg.NeighborLoader``;
  ``LinkNeighborLoader`` is ``gsample.pyg.LinkNeighborLoader`` where it exists, else a stand-in
  that raises "gsample.pyg has no LinkNeighborLoader" when a test builds one (the module still
  imports, so every other test runs);
- exactly the skips that exist because pyg-lib / torch-sparse are missing are lifted:
  ``onlyNeighborSampler`` is a no-op, ``withPackage`` ignores ``pyg_lib`` and ``torch_sparse``
  (other packages, as ``torch_frame``, still skip), and ``WITH_PYG_LIB``, ``WITH_TORCH_SPARSE``,
  ``WITH_WEIGHTED_NEIGHBOR_SAMPLE`` and ``WITH_EDGE_TIME_NEIGHBOR_SAMPLE`` read true in the test
  modules' namespace (they guard ``skipif`` marks and early returns in test bodies). PyG's own
  loaders fail every test so lifted ("requires 'pyg-lib' or 'torch-sparse'"), so the lift asks
  of gsample only what PyG asks of its extension packages.

pytest runs the copy twice (``sys.executable -m pytest -p no:cacheprovider``, results read from
its JUnit XML): with gsample's loaders, and with null loaders that raise on construction. A test
that passes with the null loaders passes without building a loader (PyG returns early by design
in some tests, e.g. ``induced`` without torch-sparse is an early return, not a skip), so the
passes are split into "build a loader" and "return early".

Printed: total / passed (build a loader, return early) / failed / skipped, and the failures
grouped by the cause of their first failure (:func:`classify`), with test names. ``--json FILE``
writes the same as JSON. Exit status 0 whatever the counts (1 on a harness error: no tests
collected, pytest crashed, files missing).
"""

from __future__ import annotations

import argparse
import ast
import datetime
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: PyG's files the run copies: path in PyG's tree -> name in the copy (flat, beside conftest.py)
PYG_FILES = {
    "test/conftest.py": "conftest.py",
    "test/loader/test_neighbor_loader.py": "test_neighbor_loader.py",
    "test/loader/test_link_neighbor_loader.py": "test_link_neighbor_loader.py",
}
#: packages whose absence is lifted; their skips exist only because PyG's samplers need them
LIFTED_PACKAGES = ("pyg_lib", "torch_sparse")
#: ``torch_geometric.typing`` flags that read true in the copied test modules
LIFTED_FLAGS = (
    "WITH_PYG_LIB",
    "WITH_TORCH_SPARSE",
    "WITH_WEIGHTED_NEIGHBOR_SAMPLE",
    "WITH_EDGE_TIME_NEIGHBOR_SAMPLE",
)
#: the loaders swapped in the copy
LOADERS = ("NeighborLoader", "LinkNeighborLoader")
NO_LINK_LOADER = "gsample.pyg has no LinkNeighborLoader"
NULL_LOADER = "null loader: the conformance run counts the tests that pass without a loader"
#: environment variable the patched conftest reads: keep only the ``cuda`` device cases
CUDA_ONLY_ENV = "GSAMPLE_CONFORMANCE_CUDA_ONLY"

_MARK = "# --- gsample conformance (scripts/pyg_conformance.py)"

_SWAP = {
    "gsample": """\
{mark}: gsample's loaders in place of PyG's
from gsample.pyg import NeighborLoader  # noqa: E402

try:
    from gsample.pyg import LinkNeighborLoader  # noqa: E402
except ImportError:  # counted as a failure of each link test, not of the module

    def LinkNeighborLoader(*args, **kwargs):
        raise NotImplementedError({no_link!r})
""",
    "null": """\
{mark}: null loaders, to count the tests that pass without building one
def NeighborLoader(*args, **kwargs):
    raise RuntimeError({null!r})


LinkNeighborLoader = NeighborLoader
""",
}

_LIFT = """
{mark}: the skips that exist only because pyg-lib / torch-sparse
# are missing are lifted, in this copy only.
import re as _gsample_re  # noqa: E402

import torch_geometric.testing.decorators as _gsample_decorators  # noqa: E402

{flags}
_GSAMPLE_LIFTED = {packages!r}


def onlyNeighborSampler(func):
    return func


def _gsample_lifted(package):
    # 'pyg_lib>=0.3' names pyg_lib; 'a|b' is met when either is
    names = [_gsample_re.split(r"[<>=!~;\\[ ]", p.strip())[0] for p in package.split("|")]
    return any(name in _GSAMPLE_LIFTED for name in names)


def withPackage(*packages):
    kept = [p for p in packages if not _gsample_lifted(p)]
    return _gsample_decorators.withPackage(*kept)


# tests that call pyg-lib's / torch-sparse's kernels themselves keep their skip
_gsample_kernel_withPackage = _gsample_decorators.withPackage


"""

_CONFTEST_HOOK = f"""

{_MARK}: with {CUDA_ONLY_ENV}=1 only the cases of a
# ``device`` parameter on CUDA run (withCUDA's 'cuda:0'); the rest are deselected.
def pytest_collection_modifyitems(config, items):
    import os as _os

    if _os.environ.get({CUDA_ONLY_ENV!r}) != "1":
        return
    keep, drop = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        device = None if callspec is None else callspec.params.get("device")
        (keep if device is not None and "cuda" in str(device) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
"""


def read_sources(pyg: str | os.PathLike, ref: str | None = None) -> dict[str, str]:
    """PyG's test files, from a source tree or (with ``ref``) a git checkout or mirror.

    Parameters
    ----------
    pyg : path
        A PyG source tree (``PATH/test/...`` read as is) or git directory (with ``ref``).
    ref : str, optional
        A tag, branch or commit: files read by ``git -C pyg show ref:test/...``.

    Returns
    -------
    dict
        Name in the copy (``"conftest.py"``, ...) -> source text; one entry per
        :data:`PYG_FILES`.

    Examples
    --------
    >>> src = read_sources("/src/pytorch_geometric", "2.8.0.post1")  # doctest: +SKIP
    >>> sorted(src)  # doctest: +SKIP
    ['conftest.py', 'test_link_neighbor_loader.py', 'test_neighbor_loader.py']
    """
    out = {}
    for path, name in PYG_FILES.items():
        if ref is None:
            file = pathlib.Path(pyg) / path
            if not file.is_file():
                raise FileNotFoundError(f"--pyg: {file} not found (a PyG source tree?)")
            out[name] = file.read_text()
        else:
            done = subprocess.run(
                ["git", "-C", str(pyg), "show", f"{ref}:{path}"],
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                raise FileNotFoundError(
                    f"--pyg/--ref: git show {ref}:{path}: {done.stderr.strip()}"
                )
            out[name] = done.stdout
    return out


def _import_block_end(tree: ast.Module) -> int:
    """The last line of the module's leading imports (docstring included), 0 when none."""
    end = 0
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) or (
            isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and end == 0
        ):
            end = node.end_lineno
        else:
            break
    return end


#: extension namespaces whose kernels a test may call itself (``torch.ops.pyg.neighbor_sample``)
KERNEL_NAMESPACES = ("pyg", "torch_sparse")


def _calls_kernels(node: ast.AST) -> bool:
    """Whether ``node`` reads ``torch.ops.pyg.*`` or ``torch.ops.torch_sparse.*``."""
    for sub in ast.walk(node):
        if (
            isinstance(sub, ast.Attribute)
            and sub.attr in KERNEL_NAMESPACES
            and isinstance(sub.value, ast.Attribute)
            and sub.value.attr == "ops"
            and isinstance(sub.value.value, ast.Name)
            and sub.value.value.id == "torch"
        ):
            return True
    return False


def _kernel_decorator_lines(tree: ast.Module) -> set[int]:
    """Lines of the decorators of the tests that call the extensions' kernels themselves:
    their ``withPackage('pyg_lib', ...)`` is kept (no loader can make them pass)."""
    lines = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _calls_kernels(node):
            for deco in node.decorator_list:
                lines.update(range(deco.lineno, deco.end_lineno + 1))
    return lines


def patch_test_module(source: str, loaders: str = "gsample") -> str:
    """One of PyG's test modules with the loaders swapped and the pyg-lib skips lifted.

    Every top-level ``from torch_geometric.loader import ...`` loses ``NeighborLoader`` and
    ``LinkNeighborLoader`` (its other names stay), replaced by ``loaders``' (``"gsample"``:
    gsample's, or a stand-in raising ``NotImplementedError`` "gsample.pyg has no
    LinkNeighborLoader"; ``"null"``: both raise ``RuntimeError`` when built). After the
    leading imports, the lifted decorators and flags are defined (module names shadow the
    imported ones, before any decorator runs), and ``torch_geometric.typing.WITH_PYG_LIB``
    (etc.) in the body read the module's names. A test that calls pyg-lib's or torch-sparse's
    kernels itself (``torch.ops.pyg.*``, ``torch.ops.torch_sparse.*``) keeps its
    ``withPackage`` skip: it tests the extension, not a loader.

    Parameters
    ----------
    source : str
        The module's text.
    loaders : {"gsample", "null"}
        Which loaders the module gets.

    Returns
    -------
    str
        The patched text.

    Raises
    ------
    ValueError
        ``source`` imports neither loader from ``torch_geometric.loader`` (nothing to swap: the
        run would test PyG's own loaders), or ``loaders`` is unknown.

    Examples
    --------
    >>> text = patch_test_module("from torch_geometric.loader import NeighborLoader\\n")
    >>> "from gsample.pyg import NeighborLoader" in text
    True
    """
    if loaders not in _SWAP:
        raise ValueError(f"loaders: expected 'gsample' or 'null', got {loaders!r}")
    tree = ast.parse(source)
    lines = source.splitlines()
    swaps = []  # (first line, last line, replacement) of each loader import, 1-based
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "torch_geometric.loader":
            names = [a for a in node.names if a.name in LOADERS]
            if not names:
                continue
            if any(a.asname not in (None, a.name) for a in names):
                raise ValueError(f"line {node.lineno}: a loader imported under another name")
            kept = [a for a in node.names if a.name not in LOADERS]
            text = ""
            if kept:
                shown = ", ".join(
                    a.name if a.asname is None else f"{a.name} as {a.asname}" for a in kept
                )
                text = f"from torch_geometric.loader import {shown}\n"
            swaps.append((node.lineno, node.end_lineno, text))
    if not swaps:
        raise ValueError("source: no `from torch_geometric.loader import NeighborLoader` to swap")
    swap = _SWAP[loaders].format(mark=_MARK, no_link=NO_LINK_LOADER, null=NULL_LOADER)
    lift = _LIFT.format(
        mark=_MARK,
        flags="\n".join(f"{flag} = True" for flag in LIFTED_FLAGS),
        packages=LIFTED_PACKAGES,
    )
    end = _import_block_end(tree)
    kernel_lines = _kernel_decorator_lines(tree)
    out = []
    for number, line in enumerate(lines, start=1):
        swap_here = [s for s in swaps if s[0] <= number <= s[1]]
        if number in kernel_lines:
            out.append(re.sub(r"\bwithPackage\(", "_gsample_kernel_withPackage(", line))
        elif swap_here:
            if number == swap_here[0][1]:
                out.append(swap_here[0][2].rstrip("\n") or "# (loader import swapped below)")
        else:
            out.append(line)
        if number == end:
            out.append(swap.rstrip("\n"))
            out.append(lift.rstrip("\n"))
    text = "\n".join(out) + "\n"
    if end == 0:  # no leading imports: the definitions go first
        text = swap + lift + text
    # ``torch_geometric.typing.WITH_PYG_LIB`` in a body reads the lifted module name
    flags = "|".join(LIFTED_FLAGS)
    return re.sub(rf"\btorch_geometric\.typing\.({flags})\b", r"\1", text)


def patch_conftest(source: str) -> str:
    """PyG's ``test/conftest.py`` plus the hook that keeps only CUDA cases under ``--cuda``.

    Parameters
    ----------
    source : str
        The conftest's text.

    Returns
    -------
    str
        ``source`` with a ``pytest_collection_modifyitems`` hook appended (active when the
        environment has ``GSAMPLE_CONFORMANCE_CUDA_ONLY=1``).

    Examples
    --------
    >>> "pytest_collection_modifyitems" in patch_conftest("import pytest\\n")
    True
    """
    return source.rstrip("\n") + "\n" + _CONFTEST_HOOK


def write_copy(sources: dict[str, str], folder: pathlib.Path, loaders: str) -> pathlib.Path:
    """Write the patched copy of ``sources`` into ``folder`` (created); returns ``folder``.

    Parameters
    ----------
    sources : dict
        :func:`read_sources`' result.
    folder : pathlib.Path
        Where the copy goes (``conftest.py``, the test modules, an empty ``pytest.ini`` so
        that no enclosing project's pytest settings apply).
    loaders : {"gsample", "null"}
        As :func:`patch_test_module`.

    Examples
    --------
    >>> write_copy(read_sources(pyg, ref), pathlib.Path("/tmp/c"), "gsample")  # doctest: +SKIP
    PosixPath('/tmp/c')
    """
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in sources.items():
        patched = (
            patch_conftest(text) if name == "conftest.py" else patch_test_module(text, loaders)
        )
        (folder / name).write_text(patched)
    (folder / "pytest.ini").write_text(
        "[pytest]\nmarkers =\n    rag: PyG's RAG tests\n    dataset: PyG's download tests\n"
    )
    return folder


def parse_junit(path: str | os.PathLike) -> dict[str, tuple[str, str]]:
    """pytest's JUnit XML -> ``{test id: (outcome, message)}``.

    Parameters
    ----------
    path : path
        The file ``pytest --junitxml`` wrote.

    Returns
    -------
    dict
        ``"module::test[params]"`` -> (``"passed"``, ``"failed"`` or ``"skipped"``, the first
        line of the failure's or skip's message; ``""`` for a pass). A setup or teardown error
        counts as a failure.
    """
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        test = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                message = message or _first_error(child)
            elif child.tag == "skipped" and outcome != "failed":
                outcome = "skipped"
                message = child.get("message", "")
        results[test] = (outcome, message)
    return results


def _first_error(element: ET.Element) -> str:
    """The exception line of a failure: pytest's ``E   Type: message`` lines, else the
    ``message`` attribute."""
    body = element.text or ""
    errors = [line[1:].strip() for line in body.splitlines() if line.startswith("E ")]
    typed = [e for e in errors if re.match(r"^[\w.]+(Error|Exception|Warning): ", e)]
    # a ``pytest.raises(match=...)`` that met another message: that message is the cause
    actual = [e for e in errors if e.startswith("Actual message:")]
    if typed and actual:
        return f"{typed[0]} {actual[0]}"
    if typed:
        return typed[0]
    message = (element.get("message") or "").strip()
    return message.splitlines()[0] if message else (errors[0] if errors else "")


#: categories of :func:`classify`, checked in this order (first match wins)
CATEGORIES = (
    ("LinkNeighborLoader", r"no LinkNeighborLoader"),
    ("HeteroData", r"HeteroData|heterogeneous|per edge type"),
    ("(FeatureStore, GraphStore)", r"FeatureStore|GraphStore|got a tuple"),
    ("subgraph_type", r"subgraph_type|bidirectional|\binduced\b"),
    ("temporal", r"time_attr|input_time|edge_label_time|temporal|\btime\b"),
    ("disjoint", r"disjoint"),
)
_ARGUMENT = (
    r"unexpected keyword argument '(\w+)'",
    r"\b(\w+)=\S.* is not supported",
    r"missing \d+ required (?:positional|keyword-only) arguments?: '(\w+)'",
)


def classify(message: str) -> str:
    """The cause of a first failure, from its error message.

    Parameters
    ----------
    message : str
        The exception line (``"TypeError: ..."``).

    Returns
    -------
    str
        ``"LinkNeighborLoader"`` (none in ``gsample.pyg``), ``"HeteroData"``,
        ``"(FeatureStore, GraphStore)"`` (a remote backend as input), ``"subgraph_type"``,
        ``"temporal"``, ``"disjoint"``, ``"missing argument X"`` (an argument refused or
        unknown) or ``"other"`` (a wrong value, a crash: read the message).

    Examples
    --------
    >>> classify("NotImplementedError: gsample.pyg has no LinkNeighborLoader")
    'LinkNeighborLoader'
    >>> classify("TypeError: gsample.pyg.NeighborLoader: weight_attr='w' is not supported yet (x)")
    'missing argument weight_attr'
    >>> classify("AssertionError: assert 3 == 4")
    'other'
    """
    for name, pattern in CATEGORIES:
        if re.search(pattern, message):
            return name
    text = re.sub(r"^[\w.]+: ", "", message)  # 'TypeError: ' is no argument's name
    for pattern in _ARGUMENT:
        found = re.search(pattern, text)
        if found:
            return f"missing argument {found.group(1)}"
    return "other"


def run_pytest(
    folder: pathlib.Path, *, cuda: bool = False, jobs: int = 1, timeout: float = 1800
) -> dict[str, tuple[str, str]]:
    """Run pytest on a copy written by :func:`write_copy`; :func:`parse_junit`'s result.

    gsample is imported from this repository (``PYTHONPATH``), whatever is installed.

    Parameters
    ----------
    folder : pathlib.Path
        The copy.
    cuda : bool
        Only the ``withCUDA`` cases on ``cuda:0`` (a GPU machine).
    jobs : int
        pytest-xdist workers (``-n``) when > 1.
    timeout : float
        Seconds before the run is stopped.
    """
    junit = folder / "junit.xml"
    junit.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rN"]
    command += ["-c", str(folder / "pytest.ini"), "--rootdir", str(folder)]
    command += [f"--junitxml={junit}", "-o", "junit_family=xunit2"]
    if jobs > 1:
        command += ["-n", str(jobs)]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env[CUDA_ONLY_ENV] = "1" if cuda else "0"
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout
    )
    # 0 all passed, 1 some failed, 5 none collected (an empty --cuda run); others: a crash
    if done.returncode not in (0, 1, 5) or not junit.exists():
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        raise RuntimeError(f"pytest exited with {done.returncode} in {folder}")
    return parse_junit(junit)


def summarize(
    results: dict[str, tuple[str, str]], null: dict[str, tuple[str, str]] | None = None
) -> dict:
    """Counts and failures by category.

    Parameters
    ----------
    results : dict
        The run with gsample's loaders (:func:`parse_junit`).
    null : dict, optional
        The run with null loaders: its passes are the tests that pass without a loader.

    Returns
    -------
    dict
        ``total``, ``passed``, ``passed_build_loader``, ``passed_return_early``, ``failed``,
        ``skipped``, ``failures`` (category -> sorted [[test, message], ...], largest first),
        ``skips`` (test -> reason), ``passes`` (sorted test ids).

    Examples
    --------
    >>> s = summarize({"m::a": ("passed", ""), "m::b": ("failed", "assert 0")},
    ...               {"m::a": ("passed", ""), "m::b": ("failed", "null")})
    >>> s["passed"], s["passed_return_early"], s["failures"]
    (1, 1, {'other': [['m::b', 'assert 0']]})
    """
    null = null or {}
    passes = sorted(t for t, (o, _) in results.items() if o == "passed")
    early = [t for t in passes if null.get(t, ("",))[0] == "passed"]
    groups: dict[str, list[list[str]]] = {}
    for test, (outcome, message) in sorted(results.items()):
        if outcome == "failed":
            groups.setdefault(classify(message), []).append([test, message])
    order = sorted(groups, key=lambda k: (-len(groups[k]), k))
    return {
        "total": len(results),
        "passed": len(passes),
        "passed_build_loader": len(passes) - len(early),
        "passed_return_early": len(early),
        "failed": sum(o == "failed" for o, _ in results.values()),
        "skipped": sum(o == "skipped" for o, _ in results.values()),
        "failures": {k: groups[k] for k in order},
        "skips": {t: m for t, (o, m) in sorted(results.items()) if o == "skipped"},
        "passes": passes,
        "return_early": early,
    }


def report(summary: dict) -> str:
    """The printed form of :func:`summarize`'s result."""
    s = summary
    out = [
        f"total {s['total']}: passed {s['passed']} (build a loader {s['passed_build_loader']}, "
        f"return early {s['passed_return_early']}), failed {s['failed']}, "
        f"skipped {s['skipped']}"
    ]
    if s["failures"]:
        out.append("\nfailures by first cause:")
        for category, tests in s["failures"].items():
            out.append(f"  {category}: {len(tests)}")
            for test, message in tests:
                shown = message if len(message) <= 150 else message[:147] + "..."
                out.append(f"    {test}\n        {shown}")
    if s["skips"]:
        out.append("\nskipped:")
        out += [f"  {t}: {m}" for t, m in s["skips"].items()]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pyg", required=True, help="PyG source tree or git checkout/mirror")
    parser.add_argument("--ref", help="read PyG's files at this git ref (git -C PYG show REF:...)")
    parser.add_argument("--work", help="folder for the patched copies (default: a temporary one)")
    parser.add_argument("--json", help="write the counts and failures to this file")
    parser.add_argument("--cuda", action="store_true", help="only the withCUDA cases on cuda:0")
    parser.add_argument("--jobs", type=int, default=1, help="pytest-xdist workers (default 1)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per pytest run")
    args = parser.parse_args(argv)

    if args.cuda:
        # import here: torch only to check for a GPU before two runs that would deselect all
        import torch

        if not torch.cuda.is_available():
            print("--cuda: no CUDA device here; withCUDA has no cuda:0 case", file=sys.stderr)
            return 1
    sources = read_sources(args.pyg, args.ref)
    with tempfile.TemporaryDirectory(prefix="pyg_conformance_") as scratch:
        base = pathlib.Path(args.work or scratch)
        runs = {}
        for loaders in ("gsample", "null"):
            folder = write_copy(sources, base / loaders, loaders)
            runs[loaders] = run_pytest(folder, cuda=args.cuda, jobs=args.jobs, timeout=args.timeout)
    if not runs["gsample"]:
        print("no tests collected", file=sys.stderr)
        return 1
    summary = summarize(runs["gsample"], runs["null"])
    summary = {
        "pyg": str(args.pyg),
        "ref": args.ref,
        "cuda_only": args.cuda,
        "date": datetime.date.today().isoformat(),
        **summary,
    }
    print(report(summary))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
