"""The headline numbers of one result beside the map: the verdict box, the privacy cost (loss − the no-privacy
floor, against the exact LP's), utility loss, violations against the claim, adversary error, solve time per phase
and the LP's size in words."""

from __future__ import annotations

import streamlit as st

from mdpviz.explain import format_s
from mdpviz.mechanisms import Result
from mdpviz.metrics import Evaluation
from mdpviz.problem import Problem
from mdpviz.reference import own_model_words, with_own_lp
from mdpviz.verdict import Verdict, against_claim, verdict

from . import cache, charts, glossary


def phase_text(timings: dict[str, float]) -> str:
    """Seconds per phase as one short line (``total_s`` left out): ``anchors 0.3 ms · LP solve 1.2 s``.

    >>> phase_text({"anchors_s": 0.0003, "lp_solve_s": 1.2, "total_s": 1.3})
    'anchors 0.3 ms · LP solve 1.2 s'
    """
    return " · ".join(f"{charts.phase_label(k)} {format_s(v)}" for k, v in timings.items()
                      if k != "total_s" and isinstance(v, (int, float)))


# words for the LP-size keys the solvers report; other keys are turned into words by lp_size_label
LP_SIZE_LABELS = {"wem_entries": "weighted-EM entries", "pricing_lps": "pricing LPs",
                  "pricing_rows_max": "rows per pricing LP (max)", "pricing_rows_mean": "rows per pricing LP (mean)",
                  "master_rows": "master LP rows", "atoms_used": "atoms used", "nonzeros": "nonzeros",
                  "sub_variables_max": "subproblem variables (max)",
                  "sub_constraints_max": "subproblem constraints (max)",
                  "lp_pair_rows_as_rows": "LP pair rows held as rows at the end (the others pooled or bounds)"}


def lp_size_label(key: str) -> str:
    """A readable name of an LP-size key: ``pricing_rows_mean`` → ``rows per pricing LP (mean)``.

    >>> lp_size_label("master_variables"), lp_size_label("cuts_max")
    ('master variables', 'cuts (max)')
    """
    if key in LP_SIZE_LABELS:
        return LP_SIZE_LABELS[key]
    words = key.split("_")
    if words[-1] in ("max", "mean", "min", "total") and len(words) > 1:
        return f"{' '.join(words[:-1])} ({words[-1]})"
    return " ".join(words)


def lp_size_text(lp_size: dict[str, int]) -> str:
    """The LP's sizes as one line of counts with readable names."""
    return " · ".join(f"{v:,} {lp_size_label(k)}" for k, v in lp_size.items())


VERDICT_BOX = {"ok": (st.success, ":material/verified_user:"), "info": (st.info, ":material/info:"),
               "warning": (st.warning, ":material/warning:"), "error": (st.error, ":material/gpp_bad:")}


def verdict_box(result: Result, ev: Evaluation | None, label: str) -> Verdict:
    """The plain-words verdict (``mdpviz.verdict``) in a box coloured by its level, then the mechanism's message."""
    v = verdict(result, ev, label=label)
    box, icon = VERDICT_BOX[v.level]
    box(v.plain or v.headline, icon=icon)
    glossary.terms_line(v.plain or v.headline)
    if not result.ok:
        st.caption("Try a smaller K or |Y|, a faster mechanism, or a longer time limit.")
    with st.expander("Technical account: the verdict and what the solver did"):
        st.caption(v.headline)
        if v.claim_line:
            st.caption(f"**Against the claim:** {v.claim_line}")
        if result.message:
            st.caption(f"**What happened:** {result.message}")
    return v


def metrics_panel(prob: Problem, result: Result, ev: Evaluation) -> None:
    """The headline numbers of one result, with units, and the violations stated against the claim."""
    viol = ev["violations"]
    ref = with_own_lp(cache.reference(prob, result.eps), prob, result)  # the exact LP's own solve is its yardstick
    loss = float(ev["utility_loss_m"])
    share = ref.share_of_lp(loss)
    st.metric("Privacy cost (m)", f"{ref.privacy_cost_m(loss):.1f}",
              delta=None if share is None else f"{share:.3g}× the exact LP's", delta_color="off", delta_arrow="off",
              help="Utility loss minus the no-privacy floor, in metres: what privacy costs the user. The floor is "
                   "the loss if every secret reported its cheapest output (no privacy at all); no mechanism goes "
                   "below it. The exact LP (Optimal LP, ε-mDP on all pairs) has the least privacy cost of all.")
    if ref.lp_m is not None:
        lp_text = f"; the exact LP's privacy cost is {ref.lp_m - ref.floor_m:.1f} m"
    elif ref.lp_bound_m is not None:  # the LP stopped early: its certified bound is what is known
        lp_text = f"; the exact LP's is at least {ref.lp_bound_m - ref.floor_m:.1f} m (its solve: {ref.lp_status})"
    else:
        lp_text = "; solve the Optimal LP on this problem to compare with the least possible"
    st.caption(f"= utility loss {loss:.1f} m − no-privacy floor {ref.floor_m:.1f} m{lp_text}")
    if own := own_model_words(result):
        st.caption(own[0].upper() + own[1:])
    st.metric("Utility loss (m)", f"{loss:.1f}",
              help="Expected cost Σ_x p_x Σ_y c(x, y)·Z[x, y] in metres: lower is better for the user.")
    all_pairs_help = (f"Ordered pairs (x, x') with some y where Z[x,y] > e^(ε·d)·Z[x',y] (relative tolerance "
                      f"{viol['tolerance']:g}), over all pairs of X. Worst pair uses {viol['worst_factor']:.3g}× "
                      "the allowed ε·d.")
    measured = against_claim(result, ev)
    if measured is None:  # a narrower claim that nothing measures: the all-pairs count, labelled as such
        st.metric("Violations (all pairs; not claimed)", f"{viol['violated_pairs']:,}",
                  help=f"{all_pairs_help} This mechanism claims less than all pairs and reports no check of its "
                       "claim: this is the all-pairs check.")
        st.caption(f"of {viol['checked_pairs']:,} ordered pairs of secrets checked")
    elif measured.check == "all pairs":
        st.metric("Violations of its claim", f"{measured.violated:,}", help=all_pairs_help)
        st.caption(f"of {measured.checked:,} ordered pairs of secrets checked")
    else:
        st.metric("Violations of its claim", f"{measured.violated:,}",
                  help="Measured by our exact check against what this mechanism claims (leaks outside Z, such as "
                       "PAnDA's uploaded anchor sets, included).")
        st.caption(f"of {measured.checked:,} claimed {measured.unit} checked. Over all pairs of secrets (not "
                   f"claimed): {viol['violated_pairs']:,} of {viol['checked_pairs']:,} violate ε-mDP")
    checked = str(viol.get("metric", prob.metric))
    where = (f"in the {checked} metric" if checked == prob.metric else
             f"in ℓ{checked[1]} distance in the planar projection, the metric this mechanism claims (the problem's "
             f"own is {prob.metric})" if checked.endswith("-planar") else
             f"in the {checked} metric this mechanism claims (the problem's own is {prob.metric})")
    st.caption(f"At ε = {result.eps:.3g} km⁻¹ {where}")
    st.metric("Adversary error (m)", f"{ev['adversary_error_m']:.1f}",
              help="Expected distance between the true location and the Bayes-optimal attacker's guess, metres: "
                   "higher is more private.")
    total = result.timings.get("total_s", sum(result.timings.values()))
    st.metric("Solve time", format_s(total), help="Wall-clock seconds of the solve (from the cache: as measured "
                                                     "when it was first solved).")
    phases = phase_text(result.timings)
    if phases:
        st.caption(f"Per phase: {phases}")
    if result.lp_size:
        st.caption("LP: " + lp_size_text(result.lp_size))
    st.caption(f"Status: **{result.status}**")
    if len(result.claim) <= 60:
        st.caption(f"Privacy claim: {result.claim}")
    else:
        with st.expander("Privacy claim"):
            st.caption(result.claim)
