"""Run history: every run and sample in SQLite."""
