"""Benchmarks run by ``python -m mdpviz bench SUITE``: each module exposes ``main(argv) -> int``."""
