"""PAnDA (Liu & Qiu, CCS 2025): anchor selection, Phase I cost, safety margins and AnPO, one job per module.

- ``selection``: the decay functions h, selection probabilities w and seeded anchor sampling (Phase I).
- ``budget``: the closed-form Phase I privacy cost ε̄·d for every pair of secrets.
- ``margins``: surrogate probabilities v and the safety margins ξ̂ (Algorithms 1–2).
- ``anpo``: the AnPO linear program over the anchors (tightened or relaxed), reduced exactly before solving.
- ``evaluate``: Phase II sampling, the violation rates V_pair, V_cf, V_pure and the two utility losses.

The registered mechanisms ``panda-e``, ``panda-p`` and ``panda-l`` live in ``mdpviz.panda.mechanism``.
"""
