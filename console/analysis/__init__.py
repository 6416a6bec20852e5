"""Pure analysis of measured figures: no I/O, nothing above the foundation."""
