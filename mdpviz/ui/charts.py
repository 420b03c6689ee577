"""plotly figures for the dashboard: metric bars, sweep curves, histograms of diagnostics, small heatmaps.

Figures leave colours of background and text to Streamlit's theme (``theme="streamlit"``), so both light and
dark themes stay legible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import NDArray
from plotly.subplots import make_subplots

MARGIN = {"l": 10, "r": 10, "t": 40, "b": 10}
RATIO_FORMAT = ".2~g"  # plain decimals for ratios: plotly's default SI prefixes print 1e-4 as "100μ"


def nice_log_ticks(low: float, high: float) -> list[float]:
    """1, 2, 5 per decade between ``low`` and ``high`` (powers of ten alone over more than three decades; the
    ends when few fit): readable log-axis ticks.

    >>> nice_log_ticks(1, 20)
    [1.0, 2.0, 5.0, 10.0, 20.0]
    >>> nice_log_ticks(2.5, 3.5)
    [2.5, 3.5]
    >>> nice_log_ticks(1e-7, 0.15)
    [1e-07, 1e-06, 1e-05, 0.0001, 0.001, 0.01, 0.1]
    """
    steps = (1.0,) if high > 1000 * low else (1.0, 2.0, 5.0)
    ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1)
             for m in steps if low * (1 - 1e-9) <= m * 10.0 ** e <= high * (1 + 1e-9)]
    ticks = [float(f"{t:.12g}") for t in ticks]
    return ticks if len(ticks) >= 3 else sorted({float(f"{low:.3g}"), *ticks, float(f"{high:.3g}")})


def zero_floor(fig: go.Figure, values: Sequence[float], **where: int) -> None:
    """An axis from 0 to 1 when every value is 0 (plotly centres a flat line on −1…1, showing impossible
    negative losses or ratios); otherwise from 0."""
    vals = np.asarray([v for v in values if v is not None], dtype=float)
    finite = vals[np.isfinite(vals)]
    if len(finite) and float(np.max(np.abs(finite))) == 0.0:
        fig.update_yaxes(range=[0, 1], **where)
    else:
        fig.update_yaxes(rangemode="tozero", **where)

SWEEP_METRICS = (("utility_loss_m", "Utility loss (m)"), ("violation_ratio", "mDP violation ratio (pairs)"),
                 ("adversary_error_m", "Adversary error (m)"), ("solve_s", "Solve time (s)"))
# the Trade-off page's panels: what privacy costs first; the solve time only where times differ measurably
PRIVACY_COST = ("privacy_cost_m", "Privacy cost (m): loss − no-privacy floor")
TRADEOFF_METRICS = (PRIVACY_COST,
                    ("claim_violation_ratio", "Violation ratio of its own claim"),
                    ("adversary_error_m", "Adversary error (m)"))


def metric_bars(df: pd.DataFrame, height: int = 300) -> go.Figure:
    """One bar group per metric (privacy cost where the table has it, else utility loss; the violation ratio of
    each mechanism's own claim where the table has it, else over all pairs; adversary error, solve time) per
    mechanism, named by its ``label`` where the table has one (else its registry name)."""
    # the privacy cost where the table has it, and the violations of each mechanism's own claim (what its verdict
    # reads) where it has those: an all-pairs ratio beside a narrower claim's verdict reads as its opposite
    swap = {"utility_loss_m": ("privacy_cost_m", "Privacy cost (m)"),
            "violation_ratio": ("claim_violation_ratio", "Violation ratio of its own claim")}
    panels = [swap[col] if col in swap and swap[col][0] in df else (col, title) for col, title in SWEEP_METRICS]
    fig = make_subplots(rows=1, cols=len(panels), subplot_titles=[t for _, t in panels], horizontal_spacing=0.07)
    names = df["label"] if "label" in df else df["mechanism"]
    for c, (col, _) in enumerate(panels, start=1):
        fig.add_trace(go.Bar(x=names, y=df[col], marker_color="#2563eb", showlegend=False,
                             hovertemplate="%{x}: %{y:.4g}<extra></extra>"), row=1, col=c)
        zero_floor(fig, df[col].tolist(), row=1, col=c)
        if col in ("violation_ratio", "claim_violation_ratio"):
            fig.update_yaxes(tickformat=RATIO_FORMAT, row=1, col=c)
        elif col == "solve_s":
            fig.update_yaxes(tickformat="~g", row=1, col=c)  # seconds as decimals, not SI prefixes (600μ)
    fig.update_layout(height=height, margin=MARGIN)
    fig.update_annotations(font_size=12)
    return fig


def sweep_curves(df: pd.DataFrame, param_label: str, current: float | None, log_x: bool,
                 metrics: Sequence[tuple[str, str]] = SWEEP_METRICS) -> go.Figure:
    """Four panels: each metric against the swept parameter, one line per mechanism (its ``mechanism`` value,
    a label); the current value marked."""
    metrics = [(c, t) for c, t in metrics if c in df] if len(df) else list(metrics)
    fig = make_subplots(rows=2, cols=2, subplot_titles=[t for _, t in metrics], vertical_spacing=0.16,
                        horizontal_spacing=0.08)
    palette = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2"]
    for n, (mech, part) in enumerate(df.groupby("mechanism", sort=False)):
        part = part.sort_values("value")
        for idx, (col, _) in enumerate(metrics):
            r, c = divmod(idx, 2)
            fig.add_trace(go.Scatter(x=part["value"], y=part[col], mode="lines+markers", name=str(mech),
                                     legendgroup=str(mech), showlegend=idx == 0,
                                     line={"color": palette[n % len(palette)]},
                                     hovertemplate=(f"{mech}<br>{param_label} = %{{x:.4g}}<br>%{{y:.4g}}"
                                                    "<extra></extra>")),
                          row=r + 1, col=c + 1)
    if current is not None:
        for idx in range(len(metrics)):
            r, c = divmod(idx, 2)
            fig.add_vline(x=current, line_dash="dash", line_color="gray", row=r + 1, col=c + 1)
    values = np.sort(df["value"].unique()) if len(df) else np.zeros(0)
    if log_x and len(values) and values.min() > 0:
        # readable ticks (1, 2, 5, 10 ...), not the sampled values (a 4-point sweep of 1–20 samples 1, 2.7, 7.4, 20)
        ticks = nice_log_ticks(float(values.min()), float(values.max()))
        fig.update_xaxes(title_text=param_label, type="log", tickvals=ticks, ticktext=[f"{v:g}" for v in ticks])
    else:
        fig.update_xaxes(title_text=param_label, type="linear")
    for idx, (col, _) in enumerate(metrics):
        r, c = divmod(idx, 2)
        zero_floor(fig, df[col].tolist() if col in df else [], row=r + 1, col=c + 1)
        if col in ("violation_ratio", "claim_violation_ratio"):
            fig.update_yaxes(tickformat=RATIO_FORMAT, row=r + 1, col=c + 1)
    fig.update_layout(height=560, margin=MARGIN, legend={"orientation": "h", "y": -0.12})
    fig.update_annotations(font_size=12)
    return fig


def histogram(values: NDArray[np.float64], title: str, height: int = 220) -> go.Figure:
    """A 40-bin histogram of the values (count on the y axis)."""
    fig = go.Figure(go.Histogram(x=np.asarray(values, float), marker_color="#2563eb", nbinsx=40))
    fig.update_layout(title={"text": title, "font": {"size": 13}}, height=height, margin=MARGIN, bargap=0.05,
                      yaxis_title="count")
    return fig


def columns_chart(arr: NDArray[np.float64], title: str, names: list[str] | None = None,
                  height: int = 220) -> go.Figure:
    """Each column of a small 2-D array against the row number (e.g. an iteration history), side by side, each
    titled by its name in ``names`` (default ``column 1`` …)."""
    n = arr.shape[1]
    names = names or [f"column {j + 1}" for j in range(n)]
    fig = make_subplots(rows=1, cols=n, subplot_titles=names[:n], horizontal_spacing=0.06)
    for j in range(n):
        fig.add_trace(go.Scatter(x=np.arange(len(arr)), y=arr[:, j], mode="lines", showlegend=False,
                                 line={"color": "#2563eb"}), row=1, col=j + 1)
    fig.update_layout(title={"text": title, "font": {"size": 13}}, height=height, margin={**MARGIN, "t": 60})
    fig.update_xaxes(title_text="row (iteration)")
    fig.update_annotations(font_size=11)
    return fig


def binned_histogram(h: dict[str, Any], title: str, height: int = 240) -> go.Figure:
    """A histogram given as counts and bin edges (log-spaced edges drawn on a log axis)."""
    edges = np.asarray(h["edges"], float)
    counts = np.asarray(h["counts"], float)
    log = bool(h.get("log10_edges")) and edges.min() > 0
    centres = np.sqrt(edges[:-1] * edges[1:]) if log else (edges[:-1] + edges[1:]) / 2
    fig = go.Figure(go.Bar(x=centres, y=counts, width=np.diff(edges), marker_color="#2563eb",
                           hovertemplate="%{x:.3g}: %{y}<extra></extra>"))
    extra = f", {h['zeros']:,} zeros not shown" if h.get("zeros") else ""
    fig.update_layout(title={"text": f"{title} (n = {h.get('n', int(counts.sum())):,}{extra})", "font": {"size": 13}},
                      height=height, margin=MARGIN, yaxis_title="count", bargap=0.05,
                      xaxis_type="log" if log else "linear")
    if log:
        log_axis(fig, "x")
    return fig


# words for the parts of the solvers' timing keys (``lp_solve_s``, ``sub_build_s``); other parts stay as they are
PHASE_WORDS = {"lp": "LP", "eps": "ε", "xi": "ξ", "sub": "subproblems", "em": "EM", "mp": "master"}


def phase_label(key: str) -> str:
    """A timing key in words: ``lp_solve_s`` → ``LP solve``, ``all_pairs_check_s`` → ``all pairs check``,
    ``eps_bar_s`` → ``ε̄``.

    >>> [phase_label(k) for k in ("lp_solve_s", "sub_build_s", "all_pairs_check_s", "eps_bar_s", "anchors_s")]
    ['LP solve', 'subproblems build', 'all pairs check', 'ε̄', 'anchors']
    """
    base = key.removesuffix("_s")
    if base == "eps_bar":
        return "ε̄"
    return " ".join(PHASE_WORDS.get(w, w) for w in base.split("_"))


def timing_bar(timings: dict[str, float], height: int = 200) -> go.Figure:
    """Horizontal bar of seconds per phase (the ``total_s`` entry is left out), each phase in words."""
    items = [(phase_label(k), v) for k, v in timings.items() if k != "total_s"]
    fig = go.Figure(go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h",
                           marker_color="#2563eb", hovertemplate="%{y}: %{x:.3g} s<extra></extra>"))
    fig.update_layout(height=height, margin=MARGIN, xaxis_title="seconds", title={"text": "Time per phase (s)",
                                                                                   "font": {"size": 13}})
    return fig


def stacked_split(parts: Sequence[tuple[str, float]], title: str, unit: str, height: int = 160) -> go.Figure:
    """One horizontal stacked bar (e.g. PAnDA's budget split); the unit is in the title (an axis title under the
    bar ran into the legend at this height).

    >>> stacked_split([("Phase I", 98.0), ("Phase II", 2.0)], "Budget", "% of ε").layout.title.text
    'Budget (% of ε)'
    """
    palette = ["#f59e0b", "#ef4444", "#2563eb", "#16a34a", "#9333ea"]
    fig = go.Figure()
    for n, (name, v) in enumerate(parts):
        fig.add_trace(go.Bar(x=[v], y=[""], orientation="h", name=name, marker_color=palette[n % len(palette)],
                             hovertemplate=f"{name}: %{{x:.3g}} {unit}<extra></extra>"))
    fig.update_layout(barmode="stack", height=height, margin=MARGIN,
                      title={"text": f"{title} ({unit})", "font": {"size": 13}},
                      legend={"orientation": "h", "y": -0.5, "traceorder": "normal"})
    return fig


def matrix_heatmap(Z: NDArray[np.float64], title: str, x_labels: Sequence[str], y_labels: Sequence[str],
                   height: int = 260) -> go.Figure:
    """A small Z matrix as a heatmap with values written in the cells."""
    fig = go.Figure(go.Heatmap(z=Z, x=list(x_labels), y=list(y_labels), colorscale="OrRd", zmin=0, zmax=1,
                               text=np.round(Z, 2), texttemplate="%{text}", colorbar={"title": "Pr"},
                               hovertemplate="true %{y} → report %{x}: %{z:.3f}<extra></extra>"))
    fig.update_layout(title={"text": title, "font": {"size": 13}}, height=height, margin=MARGIN,
                      yaxis={"autorange": "reversed", "title": "true location x"},
                      xaxis={"title": "reported y"})
    return fig


def line(x: NDArray[np.float64], ys: dict[str, NDArray[np.float64]], x_title: str, y_title: str,
         title: str = "", marks: Sequence[tuple[float, str]] = (), height: int = 300, log_y: bool = False
         ) -> go.Figure:
    """Simple lines with optional vertical marks ``(x, label)``."""
    fig = go.Figure()
    for name, y in ys.items():
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name))
    for xv, label in marks:
        fig.add_vline(x=xv, line_dash="dash", line_color="gray", annotation_text=label)
    fig.update_layout(height=height, margin=MARGIN, xaxis_title=x_title, yaxis_title=y_title,
                      title={"text": title, "font": {"size": 13}}, legend={"orientation": "h", "y": -0.25},
                      yaxis_type="log" if log_y else "linear")
    if log_y:
        log_axis(fig, "y")
    return fig


def log_axis(fig: go.Figure, axis: str = "y", **where: int) -> None:
    """Label a log axis at powers of ten only, written 10², 10³ … (plotly's default also labels 2 and 5 in
    each decade with bare mantissas: "2 5 10 2 5 100 2")."""
    update = fig.update_yaxes if axis == "y" else fig.update_xaxes
    update(dtick=1, exponentformat="power", showexponent="all", **where)


def budget_curve(curve: Sequence[dict[str, Any]], chosen: tuple[float | None, float | None],
                 lower_bound_m: float | None, eps: float, height: int = 300,
                 bound_label: str = "universal lower bound") -> go.Figure:
    """AIPO's budget search: true loss (m) against ε₁ (km⁻¹); the chosen split, the equal split (AIPO-E) and the
    lower bound (dashed, named by ``bound_label``) marked."""
    pts = sorted((float(c["eps1"]), float(c["eps2"]), float(c["loss_m"])) for c in curve
                 if c.get("loss_m") is not None)
    fig = go.Figure()
    if pts:
        e1, e2, loss = (np.array(v) for v in zip(*pts, strict=True))
        fig.add_trace(go.Scatter(x=e1, y=loss, mode="lines+markers", name="candidate splits",
                                 line={"color": "#2563eb"}, customdata=e2,
                                 hovertemplate="ε₁ = %{x:.3g} km⁻¹, ε₂ = %{customdata:.3g} km⁻¹<br>loss %{y:.1f} m"
                                               "<extra></extra>"))
        eq = int(np.argmin(np.abs(e1 - e2)))
        if abs(e1[eq] - e2[eq]) <= 1e-6 * max(eps, 1e-12):
            fig.add_trace(go.Scatter(x=[e1[eq]], y=[loss[eq]], mode="markers", name="equal split ε₁ = ε₂ (AIPO-E)",
                                     marker={"symbol": "diamond-open", "size": 14, "color": "#ea580c",
                                             "line": {"width": 2}},
                                     hovertemplate="AIPO-E: ε₁ = ε₂ = %{x:.3g} km⁻¹<br>loss %{y:.1f} m<extra></extra>"))
        if chosen[0] is not None:
            best = int(np.argmin(np.abs(e1 - float(chosen[0]))))
            fig.add_trace(go.Scatter(x=[e1[best]], y=[loss[best]], mode="markers", name="chosen (lowest loss)",
                                     marker={"symbol": "star", "size": 16, "color": "#16a34a"},
                                     hovertemplate="chosen: ε₁ = %{x:.3g} km⁻¹<br>loss %{y:.1f} m<extra></extra>"))
    if lower_bound_m is not None:
        fig.add_hline(y=lower_bound_m, line_dash="dash", line_color="gray",
                      annotation_text=f"{bound_label} {lower_bound_m:.1f} m", annotation_position="top left")
    fig.update_layout(height=height, margin=MARGIN, xaxis_title="ε₁: east–west budget (km⁻¹)",
                      yaxis_title="utility loss (m)", legend={"orientation": "h", "y": -0.3})
    return fig


def factor_histogram(factors: NDArray[np.float64], allowed: str, height: int = 260) -> go.Figure:
    """Histogram of per-pair privacy factors |Δ ln z| / (ε·d), with the budget (factor 1) as a red line."""
    f = np.asarray(factors, float)
    f = f[np.isfinite(f)]
    fig = go.Figure(go.Histogram(x=f, marker_color="#2563eb", nbinsx=60,
                                 hovertemplate="factor %{x}: %{y} pairs<extra></extra>"))
    fig.add_vline(x=1.0, line_color="#dc2626", line_width=2, annotation_text="budget: factor 1",
                  annotation_position="top left")
    top = max(1.1, float(f.max()) * 1.05) if len(f) else 1.1
    fig.update_layout(height=height, margin=MARGIN, bargap=0.05, yaxis_title="pairs (count)",
                      xaxis={"title": f"factor |Δ ln z| / ({allowed}) per pair (worst output; no unit)",
                             "range": [0, top]},
                      title={"text": f"Privacy factors of {len(f):,} pairs (≤ 1: within the budget)",
                             "font": {"size": 13}})
    return fig
