"""`python -m engine.train ...` is `specengine train ...`."""

from engine.train.cli import main

raise SystemExit(main())
