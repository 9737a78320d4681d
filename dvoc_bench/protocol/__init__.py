"""What the harness says to a model and how it reads the answer.

- :mod:`.tools`: tool schemas (``report_offset``, ``click_at``, ``select_element``).
- :mod:`.protocols`: one object per protocol (``v1`` corrected, ``paper`` faithful) that the methods
  consult for everything that differs between them: frames, drawing, missing answers, prompt texts.
- :mod:`.prompts`: the ``v1`` prompt texts; :mod:`.paper`: the ``paper`` ones.
- :mod:`.parse`: :func:`parse_reply`, the never-raising reply reader.
"""

from dvoc_bench.protocol.parse import MAX_MAGNITUDE, Parsed, parse_reply
from dvoc_bench.protocol.prompts import (
    CROSSHAIR_LINE_RE,
    OVERLAYS,
    PREDICTS,
    HistoryEntry,
    Overlay,
    Predict,
    crosshair_line,
    format_number,
    frame_statement,
    parse_crosshair_line,
    position_label,
    position_text,
)
from dvoc_bench.protocol.protocols import PROTOCOLS, PaperProtocol, Protocol, get_protocol
from dvoc_bench.protocol.tools import (
    CLICK_AT,
    FIELDS,
    REPORT_OFFSET,
    SELECT_ELEMENT,
    TOOL_NAMES,
    ToolKind,
    tools_for,
)

__all__ = [
    "CLICK_AT",
    "CROSSHAIR_LINE_RE",
    "FIELDS",
    "MAX_MAGNITUDE",
    "OVERLAYS",
    "PROTOCOLS",
    "PREDICTS",
    "REPORT_OFFSET",
    "SELECT_ELEMENT",
    "PaperProtocol",
    "Protocol",
    "TOOL_NAMES",
    "HistoryEntry",
    "Overlay",
    "Parsed",
    "Predict",
    "ToolKind",
    "crosshair_line",
    "format_number",
    "frame_statement",
    "get_protocol",
    "parse_crosshair_line",
    "parse_reply",
    "position_label",
    "position_text",
    "tools_for",
]
