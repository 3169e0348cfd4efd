"""The deterministic structural judge: the prediction's edits against the reference edits, no model.

:mod:`.plugin` registers ``structural``; :mod:`.judge` is the judge; :mod:`.edit_match` pairs
requested and made edits; :mod:`.part_compare` compares the parts of decks that are not slides
(layouts, masters, themes); :mod:`.text_change` credits text edits on the requested change;
:mod:`.score` turns recall, damage and over-editing into the score; :mod:`.misses` names each miss
(wrong value, wrong object, overlay, missed).
"""
