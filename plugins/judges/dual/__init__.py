"""PPTArena's dual judge: instruction following and visual quality (0-5 each) with SSIM slide selection.

:mod:`.plugin` registers ``dual``; :mod:`.judge` is the judge; :mod:`.prompts` holds its prompts;
:mod:`.verdict_parse` reads a score out of the model's answer.
"""
