"""The splitting rule of ``stream.text.segment`` as a regex: what ``split_runs`` computes compiled.

Group 1: a Han run (CJK unified ideographs with extensions A-F, compatibility ideographs); group 2: a
word of any other script (letters and digits, "_" excluded) with trailing ".digits" groups, so "3.11"
and "python3.11" stay one token."""

from __future__ import annotations

import re

HAN_RANGES = ((0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x20000, 0x2FA1F))
_HAN = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in HAN_RANGES)
TOKEN_RE = re.compile(rf"([{_HAN}]+)|((?:[^\W_{_HAN}])+(?:\.\d+)*)")
