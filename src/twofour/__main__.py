"""``python -m twofour``: the same entry point as the ``twofour`` console script."""

import sys

from twofour.cli import main

if __name__ == "__main__":  # pragma: no cover - a guard, so importing this module runs nothing
    sys.exit(main())
