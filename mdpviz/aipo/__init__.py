"""AIPO (seed 003): interpolation-based ℓp mDP over a lattice of anchors, one job per module.

- ``lattice``: the anchor lattice over the plane and the interpolation of a point's row from its cell's anchors.
- ``plane_check``: ε-mDP of the interpolated mechanism checked over the plane, not only at the anchors.
- ``mechanism``: the registered mechanisms ``aipo``, ``aipo-e``, ``aipo-r`` (the anchor LP and the interpolation).
"""
