"""Experiments that change flags and compare arms: baseline, break-even, verdict bench."""
