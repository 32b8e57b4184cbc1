#!/usr/bin/env bash
# Set up gsample on a fresh machine and run it:
#   bash scripts/run.sh demo    trains GraphSAGE (PyG) on gsample mini-batches of a generated graph
#   bash scripts/run.sh test    lint (ruff), docs build (mkdocs --strict), then the test suite
# Extra arguments go to the demo script or to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${GSAMPLE_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
. "$venv/bin/activate"
# torch is pinned here and not in pyproject.toml: 2.13.0 is this machine's local CPU wheel.
python -m pip install -q --disable-pip-version-check torch==2.13.0
what=${1:-}
shift || true
case "$what" in
  demo)
    python -m pip install -q --disable-pip-version-check -e ".[test]"
    exec python examples/demo.py "$@" ;;
  test)
    python -m pip install -q --disable-pip-version-check -e ".[test,docs,lint]"
    ruff check .
    ruff format --check .
    # the site goes to a scratch folder: the build is the check
    site=$(mktemp -d)
    NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site"
    rm -rf "$site"
    exec python -m pytest -n 2 -q "$@" ;;
  *) echo "usage: bash scripts/run.sh demo|test [args...]" >&2; exit 2 ;;
esac
