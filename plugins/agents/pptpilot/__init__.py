"""PPTPilot-style agents: the hybrid router (python-pptx code vs OOXML) with a render-verify-repair
loop, code-only and XML-only.

:mod:`.plugin` registers ``hybrid``, ``code`` and ``xml`` (the agents are in :mod:`.agent`);
:mod:`.branch` runs one edit branch; :mod:`.code` and :mod:`.xml_branch` are the two editing paths
(:mod:`.package_parts` checks and writes the OOXML parts the XML branch rewrites); :mod:`.verify` the
render-verify-repair loop; :mod:`.context` and :mod:`.prompts` what the model is shown.
"""
