"""Our bundled engine (`specengine serve`): SGLang's flag names, log format and `/generate`,
plus its own counters and per-round timing."""
