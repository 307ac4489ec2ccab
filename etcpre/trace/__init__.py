"""Traces of Threaded-C runs (docs/tracing.md): etcrun --trace merges the nodes' records
into one Chrome Trace Event file (merge.py); etctrace reads it (model.py) to check it,
summarise work and span, plot speedups and draw the activation tree."""
