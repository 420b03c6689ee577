"""The catalogue: the classic mechanisms (one module per family) and, imported from their own packages, each
seed paper's; importing this package registers them all."""

from ..aipo import mechanism as _aipo  # noqa: F401  (registration happens at import)
from ..cmdp import mechanism as _cmdp  # noqa: F401
from ..contract import Mechanism, Param, Progress, Result, get_mechanism, mechanisms, register
from ..dista import mechanism as _dista  # noqa: F401
from ..panda import mechanism as _panda  # noqa: F401
from . import em, laplace, lp, lp_bd, lp_em  # noqa: F401

__all__ = ["Mechanism", "Param", "Progress", "Result", "get_mechanism", "mechanisms", "register"]
