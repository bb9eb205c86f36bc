"""depstat's version: the installed distribution's, or 0+unknown in a source tree that is not installed."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("depstat")
except PackageNotFoundError:
    __version__ = "0+unknown"
