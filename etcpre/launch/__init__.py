"""Launchers that start the nodes of a run (etcrun)."""
