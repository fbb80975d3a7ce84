"""The benchmarks, run from a checkout: ``python -m benchmarks NAME [options]`` (``pip install -e
'.[bench]'``). Each prints a table and saves JSON + PNG figures under bench-results/. Most read the real
corpora in ../shared/corpora; they are not part of the installed package."""
