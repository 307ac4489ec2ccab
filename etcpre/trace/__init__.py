"""Traces of Threaded-C runs (docs/tracing.md): etcrun --trace merges the nodes' records
into one Chrome Trace Event file (merge.py); etctrace reads it (model.py) to check it,
summarise work and span, plot speedups and draw the activation tree."""

# the most records a node writes unless etcrun --trace-limit says otherwise (the
# runtime's own default, core/trace.c, is the same); here so that etcrun's options need
# no trace module
DEFAULT_LIMIT = 2_000_000
