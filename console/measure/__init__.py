"""Measuring that talks to an engine through the service: requests, methods, live series."""
