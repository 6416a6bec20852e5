"""SGLang: its adapter, log lines, `/generate` request, spec fields and live samples."""
