"""Mechanisms, one module per family; importing this package registers them all."""

from . import aipo, cmdp, dista, em, laplace, lp, lp_bd, lp_em, panda  # noqa: F401  (registration happens at import)
from .base import Mechanism, Param, Progress, Result
from .registry import get_mechanism, mechanisms, register

__all__ = ["Mechanism", "Param", "Progress", "Result", "get_mechanism", "mechanisms", "register"]
