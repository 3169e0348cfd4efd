"""The bundled demo dataset: tasks generated offline from decks built in code.

:mod:`.plugin` registers ``demo`` (the dataset is :mod:`.dataset`); :mod:`.decks` builds the decks
(with :mod:`.media` and :mod:`.deck_xml`, the OOXML python-pptx has no API for), :mod:`.tasks` the
tasks and their targets, :mod:`.checks` the rubric leaves.
"""
