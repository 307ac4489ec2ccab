"""Command-line entry points: etcpre (translator), etcc (compiler driver), etcrun."""
