"""One document at a time: ``BlockIndex.query`` / ``insert`` / ``delete`` / ``expire``. The product runs
deletes and expiry here, and the documents a batch run hands over one by one (a replaced or redelivered
id, a subset of tables: batch/calls.py); ``Detector.probe`` queries here."""
