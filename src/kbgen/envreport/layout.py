"""What surrounds a fact on a pasted line, taken off before the rules read it.

People paste environment facts inside other layouts: a logger's prefix (``[2025-10-13
18:27:05,692][DEBUG] Python: 3.12.11``, ``INFO 02-21 17:08:40 __init__.py:183] ...``), Chinese
labels (``Python版本：3.10``, read ``Python version: 3.10``), Markdown
emphasis (``is_available=**False**``, ```` `11.8` ````) and two-column Markdown tables
(``| PyTorch version | 2.1.0 |``). :func:`plain` gives the line the rules would see had it been
pasted bare; a line with none of these comes back unchanged.
"""

from __future__ import annotations

import re

_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARNING|WARN|ERROR|CRITICAL|FATAL)"
_STAMP = r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"

#: a logger's prefix: bracketed time stamps and levels (logging, loguru, lightning), a bare time
#: stamp with its level (``2024-05-01 10:00:00,123 - INFO - ``), vLLM's ``INFO 02-21 17:08:40
#: file.py:183]`` and glog's ``I0221 17:08:40.123 12 file.cc:45]``
_PREFIX = re.compile(
    r"^\s*(?:"
    rf"(?:\[(?:{_STAMP}|\d\d:\d\d:\d\d(?:[.,]\d+)?|{_LEVEL}|rank\d+)\]\s*:?\s*)+"
    rf"|{_STAMP}\s*(?:[-|:]\s*)?(?:\[?{_LEVEL}\]?\s*(?:[-|:]\s*)?)?(?:[\w.]+:\d+\s*(?:[-|:]\s*)?)?"
    rf"|{_LEVEL}\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\s+\[?[\w.]+:\d+\])?\s*"
    r"|[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w.]+:\d+\]\s*"
    r")"
)
#: a Markdown table row of exactly two cells, the first a label (not a number, not a rule ---)
_ROW = re.compile(r"^\s*\|\s*([A-Za-z][^|]{0,60}?)\s*\|\s*([^|]*?)\s*\|\s*$")


def plain(line: str) -> str:
    """``line`` without a logger's prefix, Markdown emphasis, or the pipes of a two-cell table row."""
    if line[:1] in "[0123456789 \tIWEFDTNCR":
        match = _PREFIX.match(line)
        if match and match.end() < len(line):
            line = line[match.end() :]
    if "\uff1a" in line or "\u7248\u672c" in line:  # a full-width colon; "version" in Chinese
        line = re.sub("\\s*\u7248\u672c\\s*", " version", line).replace("\uff1a", ": ")
    if "**" in line or "`" in line:
        line = line.replace("**", "").replace("`", "")
    if line.lstrip().startswith("|"):
        row = _ROW.match(line)
        if row and row.group(2) and not set(row.group(2)) <= set("-: "):
            line = f"{row.group(1).rstrip(' :')}: {row.group(2)}"
    return line
