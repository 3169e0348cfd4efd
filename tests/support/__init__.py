"""Helpers shared by the tests (builders, stub servers, reference loaders), imported as tests.support.X."""
