"""The ``libreoffice`` renderer: LibreOffice (headless) → PDF → PNG, the default renderer.

:mod:`.plugin` registers it (the component is :class:`.renderer.LibreOfficeRenderer`: warm offices,
one per worker slot, and the render cache); :mod:`.soffice` finds and runs the office, one-shot
(``soffice --convert-to``) or warm (:class:`.soffice.WarmOffice`, driven over UNO by
:mod:`.uno_bridge`, a script run by a Python that can ``import uno``, often not pptarena's);
:mod:`.office_profile` builds the pre-initialised user profile each new office copies;
:mod:`.office_jail` is the mount namespace, scrubbed environment and memory cap the office (and the
bridge) run in.
"""

from .renderer import IMPL_VERSION, RENDERER_NAME, LibreOfficeRenderer

__all__ = ["IMPL_VERSION", "RENDERER_NAME", "LibreOfficeRenderer"]
