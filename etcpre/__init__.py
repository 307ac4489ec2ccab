"""etc: a toolchain for Threaded-C (EARTH). The translator lives in `etcpre.passes`."""

__version__ = "0.1.0"
