"""`python -m engine.serve ...` is `specengine serve ...`."""

from engine.serve.process import main

raise SystemExit(main())
