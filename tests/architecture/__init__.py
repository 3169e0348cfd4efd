"""Tests that keep the layout, the docs, the plugin guide and the house style true."""
