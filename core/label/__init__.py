"""Human labelling campaigns: one SQLite file per campaign (items, assignments, append-only label
versions), agreement between people (Krippendorff's α, Cohen's / Fleiss' κ) and against judges
(through :mod:`pptarena.report.meta_eval`), and exchange with CSV, JSON lines and Label Studio.
"""
