"""Linear programs with HiGHS (highspy), one layer per module.

- ``highs``: any sparse LP through HiGHS (``solve_lp``), with time limits, progress and honest statuses.
- ``mdp_lp``: the optimal-mDP LP as sparse matrices and its pair sets; ``solve_mdp_lp`` hands it to HiGHS in one
  piece (the monolithic engine).
- ``cone``: the cone every column lies in, and the exact repair into it that every engine and mechanism uses.
- ``structured``: the same LP solved by structure (``solve_structured``: ``restricted`` rows and columns,
  ``pricing`` its certificate, ``conic`` column generation for dense instances; ``outcome`` what both return).
- ``optimal``: the optimal rows on a problem's d, p, c by the engine a parameter dict names (``solver``,
  ``gap_tol``, ``engine``; the monolithic engine's ``pairs``, ``spanner_t``, ``method``, ``repair``).
- ``neighbours``: the neighbour LP of the Benders and PAnDA papers (pairs within η), by connected components.
- ``benders``: the Benders decomposition of that LP (seed 004); ``benders_master`` its master LP, ``benders_sub``
  its subproblems and cuts.

The mechanisms choose among them (``mechanisms.lp``, ``mechanisms.lp_bd``, DISTA-LP's cells); nothing here imports a
mechanism or the registry.
"""
