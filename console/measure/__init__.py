"""Measurement: engine requests, methods, live series, decomposition and verdicts."""
