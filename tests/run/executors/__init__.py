"""Tests of the executors: the local warm pool and Ray."""
