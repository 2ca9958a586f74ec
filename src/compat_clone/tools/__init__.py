"""The command-line tools around the library: `doctor`, `matrix`, `migrate` and their helpers."""
