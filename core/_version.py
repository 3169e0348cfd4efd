"""pptarena's version: the one source of it (``pyproject.toml`` reads it as a dynamic field), so that
``arena --version`` and ``pptarena.__version__`` need no look-up in the installed metadata.
"""

__version__ = "0.1.0"
