"""The live console (``dedup console``) and the commands that read documents back (``dedup show``,
``dedup diff``): readers of the verdict, dead-letter and documents topics, never writers.

model.py      ConsoleState: verdicts, tombstones and dead letters -> the figures a person watches
diff.py       two texts -> shared and differing passages (difflib)
document_reader.py  DocumentReader: the document at a position of the documents topic; VerdictIndex
feed.py       Feed: a thread that tails the verdict and dead-letter topics into a ConsoleState
web.py        the aiohttp application: the page (static/, uPlot vendored) and its JSON API
command.py    the ``console``, ``show`` and ``diff`` commands
"""
