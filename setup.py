"""Build hook: ship the CUDA sources of ``kernels/`` inside the package.

The kernels stay in ``kernels/`` at the repository root (one file per kernel family, see
``kernels/README.md``); a built wheel and ``pip install .`` carry them as package data in
``gsample/_kernels/``, where ``gsample/backend/cuda/module.py`` looks first. Everything else
is in ``pyproject.toml``.
"""

import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = pathlib.Path(__file__).resolve().parent
PATTERNS = ("*.cu", "*.cuh")


class BuildWithKernels(build_py):
    """``build_py`` that also copies ``kernels/*.cu`` and ``*.cuh`` to ``gsample/_kernels``."""

    def run(self):
        super().run()
        target = pathlib.Path(self.build_lib) / "gsample" / "_kernels"
        target.mkdir(parents=True, exist_ok=True)
        for pattern in PATTERNS:
            for path in sorted((ROOT / "kernels").glob(pattern)):
                shutil.copy2(path, target / path.name)


# py.typed: the package ships its type hints (PEP 561)
setup(cmdclass={"build_py": BuildWithKernels}, package_data={"gsample": ["py.typed"]})
