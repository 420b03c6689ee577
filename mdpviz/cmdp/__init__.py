"""Context-aware mDP (C-mDP, seed 002): CI test, Markov blanket discovery and prediction, the augmented LP.

One job per module: ``corpus`` (vehicle trajectories: generator, CSV loader, station slots), ``citest``
(conditional-independence test), ``blanket`` (grouping and Algorithms 1 and 2), ``classifier`` (the blanket
predictor and its metrics), ``augmented`` (augmented secrets, Eq. 13 distance, Eq. 34 cost), ``solver`` (the reduced
C-mDP LP and its violation checks), ``pipeline`` (trajectories → mechanism, held-out evaluation), ``compare`` (the
paper's six methods on one corpus).
"""
