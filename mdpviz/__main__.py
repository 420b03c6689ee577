"""Entry point of ``python -m mdpviz``."""

from .cli import main

raise SystemExit(main())
