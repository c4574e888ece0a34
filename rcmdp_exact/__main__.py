"""``python -m rcmdp_exact`` runs the command line (see :mod:`rcmdp_exact.cli`), through
:func:`rcmdp_exact._entry.main` (a signal while the command line loads: one line, 130 or
143)."""

from ._entry import main

raise SystemExit(main())
