"""vLLM: its adapter, log lines, `/v1/completions` figures, spec fields and live samples."""
