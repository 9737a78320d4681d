"""What the harness says to a model and how it reads the answer (DESIGN §4).

- :mod:`.tools`: tool schemas (``report_offset``, ``click_at``, ``select_element``).
- :mod:`.prompts`: prompt texts per protocol (``v1`` corrected; ``paper`` faithful, in :mod:`.paper`).
- :mod:`.parse`: :func:`parse_reply`, the never-raising reply reader.
"""

from dvoc_bench.protocol.parse import MAX_MAGNITUDE, Parsed, parse_reply
from dvoc_bench.protocol.prompts import (
    CROSSHAIR_LINE_RE,
    OVERLAYS,
    PREDICTS,
    PROTOCOLS,
    HistoryEntry,
    Overlay,
    Predict,
    check_protocol,
    crosshair_line,
    dvoc_prompt,
    format_number,
    frame_statement,
    oneshot_prompt,
    overlay_label,
    parse_crosshair_line,
    position_label,
    position_text,
)
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
    "PREDICTS",
    "PROTOCOLS",
    "REPORT_OFFSET",
    "SELECT_ELEMENT",
    "TOOL_NAMES",
    "HistoryEntry",
    "Overlay",
    "Parsed",
    "Predict",
    "ToolKind",
    "check_protocol",
    "crosshair_line",
    "dvoc_prompt",
    "format_number",
    "frame_statement",
    "oneshot_prompt",
    "overlay_label",
    "parse_crosshair_line",
    "parse_reply",
    "position_label",
    "position_text",
    "tools_for",
]
