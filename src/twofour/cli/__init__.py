"""The ``twofour`` command line: ``twofour audit``, ``twofour bench``, ``twofour trace``, ...

One module per subcommand (``twofour.cli.audit``, ``.convert``, ``.bench``, ``.quality``,
``.calibrate``, ``.trace``), each exposing ``add_arguments(parser)`` and ``run(args) -> int``;
:mod:`.main` wires them together (the console script, ``python -m twofour`` and
``python -m twofour.cli`` all run :func:`main`), and :mod:`._output` checks and writes output
files. This package re-exports the entry point.
"""

from .main import UserError, main

__all__ = ["main", "UserError"]
