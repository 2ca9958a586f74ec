"""``python -m compat_clone.tools.matrix ...``: `compat-clone matrix` on its own."""

from compat_clone.tools.matrix.cli import main

raise SystemExit(main())
