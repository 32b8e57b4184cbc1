"""Command line: ``python -m gsample ir path/to/file.py:function`` and
``python -m gsample calibrate [--device cuda]`` (op costs for the layout pass, see
:mod:`gsample.cost.calibrate`).

Prints :func:`gsample.compiler.explain` for a sampler function defined in a Python file: the
traced IR, each pass with ``changed`` / ``unchanged`` and the IR after it, the
optimised IR, the layouts chosen and the programs of cached nodes. Nothing is sampled.

Example arguments are built as follows (the function's own defaults are kept for
everything else, so static arguments such as ``fanouts`` take their default values):

1. The first parameter gets the graph: a small R-MAT graph (``--num-nodes``,
   ``--num-edges``, ``--weighted``) or a SNAP edge list (``--graph snap PATH``).
   When the file defines ``normalize(A)`` (as ``examples/ladies.py`` does), the
   graph is passed through it first (``--no-normalize`` skips this).
2. The parameter called ``seeds`` (else the second one) gets ``--batch-size`` node
   ids drawn with ``--seed``.
3. ``--arg name=value`` sets any parameter; ``value`` is read as a Python literal
   (``--arg fanouts=[5,5]``, ``--arg replace=True``) and else kept as a string.
4. When the file defines ``random_inputs(num_nodes)`` returning a dict of keyword
   arguments (as ``examples/pass_sampler.py`` does for its ``X, W1, W2, W3``), every
   parameter it names that ``--arg`` did not set is taken from it.

A parameter left without a value by these rules and without a default is an error
that says which ``--arg`` to add.

Examples::

    python -m gsample ir examples/graphsage.py:graphsage
    python -m gsample ir examples/ladies.py:ladies --arg "layers=(512, 512)" --format table
    python -m gsample ir examples/pass_sampler.py:pass_sampler --format dot | dot -Tsvg -O
    python -m gsample ir examples/shadow.py:shadow --graph snap ../shared/data/web-NotreDame.txt.gz
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import pathlib
import re
import sys

import torch

import gsample as gs
from gsample.capture.trace import TraceError
from gsample.compiler.compiled import CompiledSampler
from gsample.cost.calibrate import calibrate

DESCRIPTION = "gsample: graph sampling compiled from sparse-matrix programs."


def _plain(text: str) -> str:
    """The module docstring without its reST markup, for ``--help``."""
    return text.replace(":func:", "").replace("``", "").replace("`", "").replace("::", ":")


def _int_at_least(low: int):
    """An argparse ``type``: an integer ``>= low`` that fits in int64 (argparse adds the
    option's name: ``argument --batch-size: must be an integer >= 1, got '-3'``)."""

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            value = None
        if value is None or not low <= value < 2**63:
            raise argparse.ArgumentTypeError(f"must be an integer >= {low}, got {text!r}")
        return value

    return parse


_POSITIVE, _NON_NEGATIVE = _int_at_least(1), _int_at_least(0)


def _device(text: str) -> str:
    """An argparse ``type``: ``cpu``, ``cuda`` or ``cuda:N``."""
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, got {text!r}")
    return text


class _GraphOption(argparse.Action):
    """``--graph rmat`` or ``--graph snap PATH`` (PATH an existing file), checked as parsed."""

    def __call__(self, parser, namespace, values, option_string=None):
        kind, *rest = values
        if not ((kind == "rmat" and not rest) or (kind == "snap" and len(rest) == 1)):
            raise argparse.ArgumentError(
                self, f"expected 'rmat' or 'snap PATH', got {' '.join(values)!r}"
            )
        if kind == "snap" and not pathlib.Path(rest[0]).is_file():
            raise argparse.ArgumentError(self, f"{rest[0]}: no such file")
        setattr(namespace, self.dest, values)


def _parse_arg(text: str):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--arg {text!r}: expected name=value")
    name, value = text.split("=", 1)
    name = name.strip()
    if not name.isidentifier():
        raise argparse.ArgumentTypeError(f"--arg {text!r}: {name!r} is not a parameter name")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def _load(target: str):
    """``path/to/file.py:function`` -> (module, function)."""
    path, sep, name = target.rpartition(":")
    if not sep or not path or not name:
        raise SystemExit(f"error: {target!r}: expected path/to/file.py:function")
    file = pathlib.Path(path)
    if not file.is_file():
        raise SystemExit(f"error: {path}: no such file")
    sys.path.insert(0, str(file.resolve().parent))  # so the file's sibling imports work
    spec = importlib.util.spec_from_file_location(f"gsample_cli_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise SystemExit(f"error: {path} has no function {name!r}")
    return module, fn


def _graph(args):
    kind, *rest = args.graph
    try:  # the library's message names the argument (a size that cannot be allocated)
        if kind == "rmat" and not rest:
            return (
                gs.datasets.rmat(
                    args.num_nodes, args.num_edges, seed=args.seed, weighted=args.weighted
                ),
                f"R-MAT({args.num_nodes}, {args.num_edges}, seed={args.seed})",
            )
        if kind == "snap" and len(rest) == 1:
            return gs.datasets.read_snap(rest[0]), rest[0]
    except (ValueError, TypeError) as e:
        option = "--graph" if kind == "snap" else "--num-nodes / --num-edges"
        raise SystemExit(f"error: {option}: {e}") from None
    raise SystemExit(f"error: --graph {' '.join(args.graph)}: expected 'rmat' or 'snap PATH'")


def example_arguments(module, fn, A, args) -> dict:
    """Keyword arguments for ``fn`` by the rules in this module's docstring."""
    target = fn.fn if isinstance(fn, CompiledSampler) else fn
    params = list(inspect.signature(target).parameters.values())
    if not params:
        raise SystemExit("error: the function takes no arguments; it needs a gs.Matrix first")
    given = dict(args.arg)
    unknown = set(given) - {p.name for p in params}
    if unknown:
        raise SystemExit(
            f"error: --arg {', '.join(sorted(unknown))}: not a parameter of "
            f"{target.__name__}{inspect.signature(target)}"
        )
    kwargs = {params[0].name: A}
    names = [p.name for p in params]
    seeds_name = "seeds" if "seeds" in names else (names[1] if len(names) > 1 else None)
    if seeds_name is not None and seeds_name not in given:
        g = torch.Generator().manual_seed(args.seed)
        kwargs[seeds_name] = torch.randperm(A.num_nodes, generator=g)[: args.batch_size]
    kwargs.update(given)
    extra = getattr(module, "random_inputs", None)
    if callable(extra):
        for name, value in extra(A.num_nodes).items():
            if name in names and name not in kwargs:
                kwargs[name] = value
    for p in params:
        if (
            p.name not in kwargs
            and p.default is inspect.Parameter.empty
            and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ):
            raise SystemExit(
                f"error: parameter {p.name!r} of {target.__name__} has no default; "
                f"pass --arg {p.name}=VALUE, or define random_inputs(num_nodes) "
                "in the file to supply tensors"
            )
    return kwargs


def cmd_ir(args) -> int:
    module, fn = _load(args.target)
    A, what = _graph(args)
    normalize = getattr(module, "normalize", None)
    if callable(normalize) and not args.no_normalize:
        A = normalize(A)
        what += f", through {module.__name__.removeprefix('gsample_cli_')}.normalize"
    gs.manual_seed(args.seed)
    kwargs = example_arguments(module, fn, A, args)
    print(("// " if args.format == "dot" else "") + f"graph: {what}")
    try:
        gs.explain(fn, passes=[] if args.no_passes else None, format=args.format, **kwargs)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gsample", description=DESCRIPTION)
    p.add_argument("--version", action="version", version=f"gsample {gs.__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    ir = sub.add_parser(
        "ir",
        help="print a sampler's IR before and after each compiler pass (gs.explain)",
        description=_plain("\n\n".join(__doc__.split("\n\n")[1:7])),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ir.add_argument("target", metavar="FILE.py:FUNCTION", help="the sampler function")
    ir.add_argument(
        "--graph",
        nargs="+",
        default=["rmat"],
        metavar=("{rmat,snap}", "PATH"),
        action=_GraphOption,
        help="example graph: a generated R-MAT graph (default) or a SNAP edge list",
    )
    ir.add_argument(
        "--num-nodes", type=_POSITIVE, default=2000, help="R-MAT nodes, >= 1 (default 2000)"
    )
    ir.add_argument(
        "--num-edges", type=_NON_NEGATIVE, default=20000, help="R-MAT edges, >= 0 (default 20000)"
    )
    ir.add_argument("--weighted", action="store_true", help="R-MAT edge weights in [1, 5)")
    ir.add_argument(
        "--batch-size", type=_POSITIVE, default=64, help="seeds passed, >= 1 (default 64)"
    )
    ir.add_argument(
        "--seed",
        type=_NON_NEGATIVE,
        default=0,
        help="graph, seeds and gs.manual_seed, >= 0 (default 0)",
    )
    ir.add_argument(
        "--format",
        choices=["lines", "table", "dot"],
        default="lines",
        help="IR printer (default lines)",
    )
    ir.add_argument(
        "--arg",
        type=_parse_arg,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a parameter (a Python literal, else a string); repeatable",
    )
    ir.add_argument(
        "--no-normalize",
        action="store_true",
        help="do not pass the graph through the file's normalize(A)",
    )
    ir.add_argument("--no-passes", action="store_true", help="show the traced IR only")
    ir.set_defaults(run=cmd_ir)
    cal = sub.add_parser(
        "calibrate",
        help="measure op and conversion costs on a device for the layout pass",
        description="Time every layout-dependent op and conversion on synthetic matrices on "
        "the device, fit a + b*E + c*R + d*C per key and cache the table for "
        "(device, graph-size bucket) in $GSAMPLE_CACHE or ~/.cache/gsample "
        "(see gsample.cost.calibrate). Compiles read it; they never time anything.",
    )
    cal.add_argument("--device", type=_device, default="cpu", help="cpu (default), cuda or cuda:N")
    cal.add_argument(
        "--num-nodes",
        type=_POSITIVE,
        nargs="+",
        default=[4**9],
        metavar="N",
        help="synthetic graph size(s), >= 1; one table per size bucket (default 262144)",
    )
    cal.add_argument(
        "--avg-degree", type=_POSITIVE, default=8, help="edges per node, >= 1 (default 8)"
    )
    cal.add_argument(
        "--repeats",
        type=_POSITIVE,
        default=5,
        help="timed runs per size, >= 1 (the fastest is kept; default 5)",
    )
    cal.add_argument(
        "--threads",
        type=_POSITIVE,
        default=None,
        help="torch CPU threads while timing, >= 1 (default: torch's); part of the key",
    )
    cal.add_argument(
        "--backend",
        choices=["torch", "cuda"],
        default="torch",
        help="backend to time: compiles for it read this table (default torch)",
    )
    cal.set_defaults(run=cmd_calibrate)
    return p


def cmd_calibrate(args) -> int:
    if torch.device(args.device).type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"error: --device {args.device}: no CUDA GPU here")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    for n in args.num_nodes:
        entry = calibrate(args.device, n, args.repeats, args.avg_degree, backend=args.backend)
        print(
            f"{entry['device']} ({args.backend} backend), bucket {entry['bucket']} "
            f"({n:,} nodes): "
            f"{len(entry['coefficients'])} costs written to {entry['path']}"
        )
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
