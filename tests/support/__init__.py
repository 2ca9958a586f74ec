"""Helpers every product's tests share: which families a run tests (``families``), fresh interpreters
(``fresh_process``), stand-ins for newer Pythons (``_py``). No tests here (pytest collects only ``test_*.py``).

A product's own helpers live beside its tests (``tests/clone/``, ``tests/convert/``, ...).
"""
