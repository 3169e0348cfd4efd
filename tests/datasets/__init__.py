"""Tests of the dataset plugins and loaders (demo, folder, pptarena, ppteval, osworld, pptc, tsbench)."""
