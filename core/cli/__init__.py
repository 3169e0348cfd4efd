"""The ``arena`` command line: :mod:`.main` holds the group and ``run``; the other modules one
command family each.

Subcommands are imported only when invoked (see :data:`pptarena.cli.main.LAZY_COMMANDS`).
"""

from pptarena.cli.main import main

__all__ = ["main"]
