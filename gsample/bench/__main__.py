"""``python -m gsample.bench``: see :mod:`gsample.bench`."""

import sys

from gsample.bench import main

if __name__ == "__main__":
    sys.exit(main())
