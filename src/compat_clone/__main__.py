"""`python -m compat_clone`: the same as the `compat-clone` console script."""

from compat_clone.tools.cli import main

raise SystemExit(main())
