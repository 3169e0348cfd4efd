"""``arena author``: drafting tasks, rubrics and style targets with a model, and checking them.

:mod:`.propose` drafts tasks from a deck, :mod:`.rubric` drafts PPT-Eval rubric trees,
:mod:`.style` drafts style targets, :mod:`.check` runs rubrics against reference edits, and
:mod:`.lint` checks rubric leaf code; :mod:`.context`, :mod:`.files`, :mod:`.llm` and
:mod:`.primer` are what they share (deck context, file layout, the model session, the primer).
"""
