"""Tests of the model backends, the client layer, pricing and reply parsing."""
