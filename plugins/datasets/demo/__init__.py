"""The bundled demo dataset: tasks generated offline from decks built in code.

:mod:`.dataset` registers ``demo``; :mod:`.decks` builds the decks (with :mod:`.media` and
:mod:`.ooxml`), :mod:`.tasks` the tasks and their targets, :mod:`.checks` the rubric leaves.
"""
