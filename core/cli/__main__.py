"""``python -m pptarena.cli``: the same as the ``arena`` command."""

from pptarena.cli.main import main

main()
