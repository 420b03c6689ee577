"""The library's one error family: every bad input raises an MdpvizError with a message a person can act on."""

from __future__ import annotations


class MdpvizError(ValueError):
    """Base class for every error mdpviz raises on purpose."""


class CityError(MdpvizError):
    """A city cannot be found, loaded or downloaded."""


class ProblemError(MdpvizError):
    """A problem cannot be built from the given settings or points."""


class ParameterError(MdpvizError):
    """A mechanism parameter is missing, of the wrong type or out of range."""


class SolverError(MdpvizError):
    """A solver failed in a way that leaves no usable mechanism."""


class CacheError(MdpvizError):
    """The on-disk cache cannot be used at all (its ``results`` path is a file, not a folder)."""


class CacheWarning(UserWarning):
    """The on-disk cache could not be written (full disk, no permission...): the result is kept, not cached."""
