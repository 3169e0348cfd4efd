"""pptarena's test suite, one package per stage of the code (pytest's tests-as-packages layout)."""
