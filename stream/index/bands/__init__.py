"""The MinHash LSH band tables: recent entries in an in-memory multimap (memtable.py), older ones in
sorted runs on disk (runs.py), both behind ``BandTables`` (tables.py)."""
