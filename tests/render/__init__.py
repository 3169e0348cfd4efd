"""Tests of rendering: renderers, the render cache, SSIM slide matching."""
