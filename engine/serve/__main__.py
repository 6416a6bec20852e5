"""`python -m engine.serve ...` is `specengine serve ...`."""

from engine.serve.cpu_threads import apply_cpu_defaults

apply_cpu_defaults()  # before torch loads: its OpenMP runtime reads these once
from engine.serve.launch import main  # noqa: E402

raise SystemExit(main())
