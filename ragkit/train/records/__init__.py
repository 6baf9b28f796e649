"""Training and held-out records for each specialist job, built from the public data under data/benchmarks/
(training splits only): `specialists` for every job, `reader`, `relevance` and `rewriter` for their own.
Taught in lessons/09_specialists.ipynb.
"""
