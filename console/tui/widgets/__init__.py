"""Widgets of the console: each shows one thing and talks to screens through messages."""
