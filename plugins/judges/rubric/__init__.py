"""PPT-Eval's rubric judge: rubric trees with λ-aggregation whose leaves run in the sandbox.

:mod:`.plugin` registers ``rubric``; :mod:`.judge` is the judge; :mod:`.tree` parses and aggregates
trees; :mod:`.execute` runs leaves in a sandboxed child (:mod:`.child` is the code that runs inside
it); :mod:`.llm` answers the leaves' ``llm_call``/``vlm_call``.
"""
