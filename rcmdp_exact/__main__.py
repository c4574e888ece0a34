"""``python -m rcmdp_exact`` runs the command line (see :mod:`rcmdp_exact.cli`)."""

from .cli import main

raise SystemExit(main())
