"""The mechanism contract: a parameter schema, a Mechanism, the Result every solve returns, and the registry
every mechanism joins at import (filled by importing ``mdpviz.mechanisms``, which imports them all)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

import numpy as np
from numpy.typing import NDArray

from .deadline import KEPT_AT
from .errors import ParameterError
from .metrics import utility_loss_m
from .problem import Problem
from .progress import Progress as Progress  # re-exported: the mechanisms import it from here


@dataclass(frozen=True)
class Param:
    """One parameter of a mechanism: the single source of its type, range, default, unit and help. Sliders,
    validation and tests all read these fields.

    Attributes
    ----------
    name
        The key in a mechanism's ``params`` dict (``eps``, ``delta``, ...).
    kind
        ``float``, ``int``, ``bool`` or ``str`` (then ``choices`` lists the allowed values).
    default
        The value used when none is given.
    help
        What it does, in words (the dashboard's tooltip, the CLI's help).
    low, high
        The allowed range (None: unbounded); ``open_high`` leaves ``high`` itself out (α < 1).
    log
        A slider on a log scale.
    unit
        The unit of its values (``km⁻¹``, ``km``, ``s``...), shown beside every number.
    choices, choice_labels
        A string parameter's allowed values, and words for those whose name reads as code.
    label
        Its name on screen (default: ``name``).
    used_when
        (another parameter, its value): this one matters only when that one has that value (DISTA-LP's upload
        settings with ``upload`` = ``surrogate``); the dashboard greys it out otherwise.
    """

    name: str
    kind: type
    default: Any
    help: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    unit: str = ""
    choices: tuple[str, ...] = ()
    open_high: bool = False  # True when ``high`` itself is not allowed (α < 1)
    label: str = ""
    choice_labels: tuple[tuple[str, str], ...] = ()  # (choice, words) where a choice's name reads as code
    used_when: tuple[str, str] | tuple[()] = ()

    def shown(self, value: Any) -> str:
        """A value in words: its choice label where there is one, else the value itself."""
        return dict(self.choice_labels).get(value, str(value))

    @property
    def display(self) -> str:
        """Label with unit, e.g. ``ε (km⁻¹)``."""
        name = self.label or self.name
        return f"{name} ({self.unit})" if self.unit else name

    def range_text(self) -> str:
        """The allowed values in words, for error messages and help."""
        if self.kind is str:
            return "one of " + ", ".join(self.choices)
        if self.kind is bool:
            return "true or false"
        hi = "" if self.high is None else f"{self.high:g}"
        return f"[{self.low:g}, {hi}{')' if self.open_high else ']'}" if self.low is not None else f"≤ {hi}"

    def validate(self, value: Any) -> Any:
        """Return ``value`` converted to ``kind``; raise ParameterError naming the parameter and its range."""
        bad = f"Parameter `{self.name}` = {value!r} is invalid: it must be {self._kind_text()} in {self.range_text()}."
        if self.kind is bool:
            if isinstance(value, (bool, np.bool_)):
                return bool(value)
            if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
                return value.lower() in ("true", "1", "yes")
            raise ParameterError(bad)
        if self.kind is str:
            if str(value) not in self.choices:
                raise ParameterError(bad)
            return str(value)
        try:
            if isinstance(value, bool):
                raise TypeError
            number = float(value)
            if self.kind is int:
                if not number.is_integer():
                    raise TypeError
                number = int(number)
        except (TypeError, ValueError) as e:
            raise ParameterError(bad) from e
        if not math.isfinite(number):
            raise ParameterError(bad)
        if self.low is not None and number < self.low:
            raise ParameterError(bad)
        if self.high is not None and (number > self.high or (self.open_high and number >= self.high)):
            raise ParameterError(bad)
        return number

    def _kind_text(self) -> str:
        return {float: "a number", int: "a whole number", bool: "a boolean", str: "a string"}[self.kind]


def epsilon_param(default: float = 5.0) -> Param:
    """The privacy budget ε, shared by every mechanism so that sliders and sweeps agree."""
    return Param("eps", float, default, "privacy budget per km: reports of points r km apart may differ by e^(ε·r)",
                 low=0.01, high=100.0, log=True, unit="km⁻¹", label="ε")


class CountCheck(TypedDict):
    """A measured check of a claim as counts: ``violated`` of ``checked`` cases broke it (PAnDA's V_pair, V_cf and
    V_pure, DISTA-LP's and C-mDP's claim checks).

    Attributes
    ----------
    violated, checked
        How many cases broke the claim, of how many checked.
    ratio
        ``violated / checked`` (None when nothing was checked).
    tolerance
        The slack of the check (a factor within ``e^{ε·d}·(1 + tolerance)`` passes).
    unit
        What a case is (``user pairs``, ``triples (i, j, y)`` ...); pairs when absent.
    exponent, definition
        What the check holds the ratio to, in words.
    eps, distance
        The budget (km⁻¹) and the distance the check used, where they differ from the result's.
    """

    violated: int
    checked: int
    ratio: NotRequired[float | None]
    tolerance: NotRequired[float]
    unit: NotRequired[str]
    exponent: NotRequired[str]
    definition: NotRequired[str]
    eps: NotRequired[float]
    distance: NotRequired[str]
    worst_factor: NotRequired[float]


class PairCheck(TypedDict):
    """A measured check of ordered pairs (i, j) of secrets, e.g. the constraints an LP enforced on its own pairs.

    Attributes
    ----------
    violated_pairs, checked_pairs
        Ordered pairs with some output breaking the ratio, of how many checked.
    violated_triples, checked_triples
        The same counted per output y.
    worst_factor
        The largest ratio ``Z[i, y] / (e^{E_ij} Z[j, y])`` found.
    tolerance
        The slack of the check.
    exponent
        The exponent the check holds the ratio to, in words.
    """

    violated_pairs: int
    checked_pairs: int
    violated_triples: NotRequired[int]
    checked_triples: NotRequired[int]
    worst_factor: NotRequired[float]
    tolerance: NotRequired[float]
    exponent: NotRequired[str]


@dataclass(frozen=True, eq=False)
class Result:
    """What a mechanism returns.

    Attributes
    ----------
    mechanism, params
        What was solved (validated parameters, defaults filled in).
    Z
        Row-stochastic matrix (K, M), ``Z[i, k] = Pr[report y_k | true x_i]``; None when no mechanism
        exists (infeasible, time limit before any feasible point).
    status
        ``optimal``, ``closed form``, ``time limit``, ``iteration limit``, ``infeasible``, ``error`` ...
    eps
        The budget (km⁻¹) that the mDP check of this result uses.
    claim
        Which pairs the mechanism claims ε-mDP on: ``all pairs`` (checked over all ordered pairs of X),
        or a description of a narrower claim (PAnDA's anchors); shown beside the measured violations.
    timings
        Seconds per phase.
    lp_size
        Variables, constraints, nonzeros of the LPs solved (empty for closed forms).
    objective_m
        The solver's objective in metres where there is one.
    bound_m
        A certified lower bound on the optimal loss in metres, where the solver gives one.
    diagnostics
        Mechanism-specific extras (JSON-friendly values or numpy arrays). Each paper's mechanism types its own
        (``PandaDiagnostics``, ``DistaDiagnostics``, ``CmdpDiagnostics``, ``AipoDiagnostics``, the LP engines'
        ``EngineDiagnostics``); a measured check inside them is a :class:`CountCheck` or a :class:`PairCheck`,
        which the verdict and the dashboard find at any depth.
    message
        Plain words on what happened (why a time limit or failure happened, what a choice cost); the
        dashboard shows it beside the metrics for every status, the CLI prints it.
    degenerate
        Empty for a genuine mechanism; otherwise a short verdict in plain words saying why this
        release is degenerate ("Collapsed: every user reports the same distribution …", "Uploads erased: …",
        "Claim covers only …"). Shown as a warning above the metrics; no test may rest on such a release.
    check_metric
        The distance the ε-mDP claim refers to: ``""`` for the problem's metric, or
        ``l1-planar`` / ``l2-planar`` (ℓp distance in the local planar projection, km).
    rows
        For mechanisms over the continuous plane, a picklable callable ``rows(lat, lon) -> (n, M)``
        giving the distribution for any points (degrees), not only for X.
    """

    mechanism: str
    params: dict[str, Any]
    Z: NDArray[np.float64] | None
    status: str
    eps: float
    claim: str = "all pairs"
    timings: dict[str, float] = field(default_factory=dict)
    lp_size: dict[str, int] = field(default_factory=dict)
    objective_m: float | None = None
    bound_m: float | None = None
    diagnostics: Mapping[str, Any] = field(default_factory=dict)
    message: str = ""
    degenerate: str = ""
    check_metric: str = ""
    rows: Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]] | None = None

    @property
    def ok(self) -> bool:
        """True when Z is a usable mechanism."""
        return self.Z is not None

    def kept_point(self, problem: Problem) -> Result | None:
        """The feasible point a solve kept when it stopped without a mechanism (``diagnostics['feasible_Z']``, one
        row per secret of ``problem``), as a result of its own to look at: the same status and claim, Z that point,
        the objective its expected cost on ``problem`` (m), no rows for other points of the plane, no "No mechanism"
        note, and a message that says it is not the optimum. None when there is no such point, or when the user
        stopped the solve (that shows nothing).

        >>> from mdpviz.problem import build_problem
        >>> pb = build_problem("kotka", 6, n_outputs=3)
        >>> Z = np.full((pb.k, pb.m), 1.0 / pb.m)
        >>> r = Result("lp", {}, None, "time limit", 5.0, diagnostics={"feasible_Z": Z}, degenerate="No mechanism: …",
        ...            message="time limit; diagnostics['feasible_Z'] holds a feasible point")
        >>> kept = r.kept_point(pb)
        >>> kept.status, kept.ok, kept.degenerate, round(kept.objective_m, 6) == round(float(pb.p @ pb.c.mean(1)), 6)
        ('time limit', True, '', True)
        >>> kept.message.split("; ", 1)[1]
        'time limit; the point shown is a feasible point'
        >>> kept.kept_point(pb) is None
        True
        """
        Z = self.diagnostics.get("feasible_Z")
        if (self.ok or self.status == "stopped" or not isinstance(Z, np.ndarray)
                or Z.shape != (problem.k, problem.m)):
            return None
        cost = utility_loss_m(problem, Z)
        shown = (f"Shown: the feasible point the solve kept when it stopped ({cost:,.1f} m a report), not the optimum"
                 + ("" if self.bound_m is None else f", which costs at least {self.bound_m:,.1f} m (certified bound)"))
        degenerate = "" if self.degenerate.lower().startswith("no mechanism") else self.degenerate
        # where the message told a programmer where the point was kept, it now tells the reader it is the one shown
        message = self.message.replace(KEPT_AT, "the point shown is")
        return dataclasses.replace(self, Z=Z, objective_m=cost, rows=None, degenerate=degenerate,
                                   message="; ".join(filter(None, [shown, message])))


SolveFn = Callable[[Problem, dict[str, Any], Progress, float | None], Result]


@dataclass(frozen=True)
class Preset:
    """A named set of settings of one mechanism, e.g. a paper's own experiment.

    ``params`` are mechanism parameters and ``problem`` keyword arguments of ``build_problem`` (``n_outputs``,
    ``cost`` ...), each as (name, value) pairs so that the preset stays hashable; ``eps`` lists the ε values
    (km⁻¹) the paper sweeps, if any. The dashboard can offer presets beside the controls.
    """

    name: str
    label: str
    help: str
    params: tuple[tuple[str, Any], ...] = ()
    problem: tuple[tuple[str, Any], ...] = ()
    eps: tuple[float, ...] = ()

    def param_dict(self) -> dict[str, Any]:
        """The preset's mechanism parameters as a dict."""
        return dict(self.params)

    def problem_dict(self) -> dict[str, Any]:
        """The preset's ``build_problem`` keywords as a dict."""
        return dict(self.problem)


@dataclass(frozen=True)
class Mechanism:
    """A registered mechanism: identity, reference, parameter schema and solve function.

    Attributes
    ----------
    name
        Its registry key (``em``, ``lp``, ``panda-e``, ...).
    label, paper, info
        Its name on screen, the paper it comes from, and what it does in a sentence or two.
    params
        Its parameter schema (:class:`Param`).
    solve
        ``solve(problem, params, progress, time_limit) -> Result``; it receives validated parameters with defaults
        filled in.
    family
        Its group in listings (``baseline``, ``lp``, ``panda``, ``aipo``, ``cmdp``, ``distributed``).
    exact
        False where its privacy is probabilistic or approximate (PAnDA, LP+CA).
    max_k
        Above this K the dashboard warns that a solve may be slow (None: no warning).
    presets
        Named settings, e.g. the paper's own experiment (:class:`Preset`).
    diagnostics
        The ``TypedDict`` its results' ``diagnostics`` follow (None: it reports none); ``tests/test_paper_scale.py``
        checks every key a solve returns against it.
    """

    name: str
    label: str
    paper: str
    info: str
    params: tuple[Param, ...]
    solve: SolveFn
    family: str = "baseline"
    exact: bool = True  # False for mechanisms whose privacy is probabilistic or approximate (PAnDA, LP+CA)
    max_k: int | None = None  # above this K the dashboard warns that a solve may be slow
    presets: tuple[Preset, ...] = ()  # named settings, e.g. the paper's own experiment
    diagnostics: type | None = None  # the TypedDict of its results' diagnostics

    def preset(self, name: str) -> Preset:
        """The preset called ``name``; ParameterError naming the known ones otherwise."""
        for p in self.presets:
            if p.name == name:
                return p
        known = ", ".join(p.name for p in self.presets) or "none"
        raise ParameterError(f"Mechanism `{self.name}` has no preset `{name}`; it has: {known}.")

    def param(self, name: str) -> Param:
        """The parameter called ``name``; ParameterError naming the known ones otherwise."""
        for p in self.params:
            if p.name == name:
                return p
        raise ParameterError(f"Mechanism `{self.name}` has no parameter `{name}`; it has: {self.param_names()}.")

    def label_for(self, params: dict[str, Any]) -> str:
        """The label of a solve with ``params``: the mechanism's, marked as ours where they carry the settings of its
        preset ``ours`` (a variant of our own, not the paper's; ε aside)."""
        for preset in self.presets:
            if preset.name == "ours" and all(params.get(k) == v for k, v in preset.params if k != "eps"):
                return f"{self.label}, our variant (not the paper's)"
        return self.label

    def param_names(self) -> str:
        """The parameters' names, comma-separated."""
        return ", ".join(p.name for p in self.params)

    def defaults(self) -> dict[str, Any]:
        """Every parameter's default value by name."""
        return {p.name: p.default for p in self.params}

    def validate(self, values: dict[str, Any] | None = None) -> dict[str, Any]:
        """Fill defaults, reject unknown names, convert and range-check every value."""
        values = dict(values or {})
        unknown = sorted(set(values) - {p.name for p in self.params})
        if unknown:
            msg = f"Mechanism `{self.name}` has no parameter(s) {unknown}; it takes: {self.param_names()}."
            raise ParameterError(msg)
        return {p.name: p.validate(values.get(p.name, p.default)) for p in self.params}


# ---------------------------------------------------------------- the registry

_REGISTRY: dict[str, Mechanism] = {}
# listing order: the classic baselines first, then each seed paper's family
FAMILY_ORDER = ("baseline", "lp", "panda", "aipo", "cmdp", "distributed")


def register(mechanism: Mechanism) -> Mechanism:
    """Add a mechanism to the registry.

    Parameters
    ----------
    mechanism
        Its name must be new.

    Returns
    -------
    Mechanism
        The same mechanism, so that a module can write ``X = register(Mechanism(...))``.
    """
    if mechanism.name in _REGISTRY:
        raise ValueError(f"mechanism {mechanism.name!r} is registered twice")
    _REGISTRY[mechanism.name] = mechanism
    return mechanism


def get_mechanism(name: str) -> Mechanism:
    """The registered mechanism called ``name``.

    Parameters
    ----------
    name
        A mechanism's name (``em``, ``lp``, ``panda-e``, ...).

    Returns
    -------
    Mechanism
        Its schema (``params``, ``presets``), labels and ``solve``.

    Raises
    ------
    ParameterError
        An unknown name; the message lists the known ones.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(m.name for m in mechanisms())
        raise ParameterError(f"Unknown mechanism `{name}`; known: {known}.") from None


def mechanisms() -> list[Mechanism]:
    """Every registered mechanism.

    Returns
    -------
    list of Mechanism
        By family (``FAMILY_ORDER``, unknown families last), then in registration order.
    """
    rank = {family: i for i, family in enumerate(FAMILY_ORDER)}
    return sorted(_REGISTRY.values(), key=lambda m: rank.get(m.family, len(rank)))

