"""PPTPilot-style agents: the hybrid router (python-pptx code vs OOXML) with a render-verify-repair
loop, code-only and XML-only.

:mod:`.agent` registers ``hybrid``, ``code`` and ``xml``; :mod:`.branch` runs one edit branch;
:mod:`.code` and :mod:`.xml` / :mod:`.ooxml` are the two editing paths; :mod:`.verify` the
render-verify-repair loop; :mod:`.context` and :mod:`.prompts` what the model is shown.
"""
