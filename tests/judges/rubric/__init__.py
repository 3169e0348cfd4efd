"""Tests of the rubric judge: trees, leaf execution, semantics, published rubrics."""
