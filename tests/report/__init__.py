"""Tests of reports: leaderboards, HTML, compare, rescore, meta-evaluation, figures."""
