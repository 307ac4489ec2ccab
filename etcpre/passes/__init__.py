"""The translator's passes, in order: parse -> analyse -> lower -> emit.

Each pass takes the previous pass's result and a DiagnosticSink; none reaches into
another's internals.
"""
