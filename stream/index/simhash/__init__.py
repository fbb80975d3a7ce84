"""The SimHash block tables: buckets keyed by fingerprint blocks, re-split when they grow (simhash/table.py),
their read cache and arena of cached root buckets, the compiled distance kernels and the statistics."""
