"""Benchmarks behind `dedup bench ...`: each prints a table and saves JSON + PNG figures."""
