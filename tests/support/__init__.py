"""Helpers shared by the test modules: no tests here (pytest collects only ``test_*.py``).

``internals.py`` is the one documented test seam: the only test file that may
name a private compat_clone name.
"""
