"""`python -m engine.serve ...` is `specengine serve ...`."""

from engine.serve.launch import main

raise SystemExit(main())
