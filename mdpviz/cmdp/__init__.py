"""Context-aware mDP (C-mDP, seed 002): CI test, Markov blanket discovery and prediction, the augmented LP.

One job per module: ``corpus`` (vehicle trajectories: generator, CSV loader, station slots), ``citest``
(conditional-independence test), ``blanket`` (grouping and Algorithms 1 and 2), ``classifier`` (the blanket
predictor and its metrics), ``augmented`` (augmented secrets, Eq. 13 distance, Eq. 34 cost), ``solver`` (the reduced
C-mDP LP and its violation checks), ``pipeline`` (trajectories → mechanism, held-out evaluation), ``mechanism``
(the registered ``cmdp``, ``cmdp-markov`` and ``cmdp-truemb``). The paper's six methods compared on one corpus run
through the cached solver, so that comparison sits above it, in ``mdpviz.cmdp_comparison``.
"""
