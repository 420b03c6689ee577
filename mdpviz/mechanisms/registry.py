"""The mechanism registry: a dict from name to Mechanism, filled by each mechanism module at import."""

from __future__ import annotations

from ..errors import ParameterError
from .base import Mechanism

_REGISTRY: dict[str, Mechanism] = {}
# listing order: the classic baselines first, then each seed paper's family
FAMILY_ORDER = ("baseline", "lp", "panda", "aipo", "cmdp", "distributed")


def register(mechanism: Mechanism) -> Mechanism:
    """Add a mechanism (its name must be new); returns it so modules can write ``X = register(Mechanism(...))``."""
    if mechanism.name in _REGISTRY:
        raise ValueError(f"mechanism {mechanism.name!r} is registered twice")
    _REGISTRY[mechanism.name] = mechanism
    return mechanism


def get_mechanism(name: str) -> Mechanism:
    """The mechanism called ``name``; ParameterError listing the known names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ParameterError(f"Unknown mechanism `{name}`; known: {', '.join(_REGISTRY)}.") from None


def mechanisms() -> list[Mechanism]:
    """Every registered mechanism: by family (``FAMILY_ORDER``, unknown families last), then registration order."""
    rank = {family: i for i, family in enumerate(FAMILY_ORDER)}
    return sorted(_REGISTRY.values(), key=lambda m: rank.get(m.family, len(rank)))
