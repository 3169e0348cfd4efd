"""The deterministic structural judge: the prediction's edits against the reference edits, no model.

:mod:`.judge` registers ``structural``; :mod:`.edit_match` pairs requested and made edits;
:mod:`.part_compare` compares the parts of decks that are not slides (layouts, masters, themes).
"""
