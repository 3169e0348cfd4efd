"""Tests of the rubric and dataset authoring tools (`arena author ...`)."""
