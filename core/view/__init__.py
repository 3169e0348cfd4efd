"""``arena view``: a live local web app over run folders (runs, run page, task table, pair page,
comparison) with the labelling workbench of :mod:`pptarena.label`.

Needs the ``view`` extra (starlette, uvicorn, jinja2); nothing here is imported by the runner.
"""
