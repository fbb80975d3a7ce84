"""The batch path, the one the product runs: ``BlockIndex.query_many`` / ``insert_many`` /
``query_insert_many`` over a whole batch of documents at once (calls.py), its query and insert halves,
and the batch's keys and root buckets resolved once."""
