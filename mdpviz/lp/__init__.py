"""Building and solving linear programs with HiGHS (highspy)."""
