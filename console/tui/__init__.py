"""The operator console as a Textual app (`specconsole connect HOST`).

The only package that imports Textual. It is a thin view: every action it offers calls
`EngineService` (the same core the headless CLI calls), so a screen never holds logic
the CLI lacks and everything the TUI does can be scripted.
"""
