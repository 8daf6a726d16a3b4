"""The ``twofour`` command line: ``twofour audit``, ``twofour bench``, ``twofour trace``, ...

One module per subcommand, wired together by :mod:`.main` (see there); :mod:`._output` checks
and writes output files. This package re-exports the entry point.
"""

from .main import UserError, main

__all__ = ["main", "UserError"]
