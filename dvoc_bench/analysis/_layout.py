"""Layout helpers that keep the figures readable from 1 to 50 tasks and 1 to 20 models.

Sizes grow with the number of bars, cells and legend entries; titles and footnotes are wrapped to the
figure's width and placed with the figure's constrained layout (``suptitle`` / ``supxlabel``), legends
sit outside the axes (never on the data), and x tick labels are measured after a layout pass and turned
upright, then shrunk, when they would overlap. :func:`overlaps` and :func:`outside_figure` are the checks
the tests run on every figure.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Iterable, Sequence
from typing import Any

from matplotlib.figure import Figure
from matplotlib.transforms import Bbox

PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
]
LINESTYLES = ["-", "--", ":", "-."]
MAX_FIG_IN = 40.0
"""No figure side grows beyond this (inches)."""


def color(i: int, n: int = 10) -> Any:
    """The ``i``-th of ``n`` colours: the ten-colour palette, or matplotlib's ``tab20`` beyond ten."""
    if n <= len(PALETTE):
        return PALETTE[i % len(PALETTE)]
    from matplotlib import colormaps

    return colormaps["tab20"](i % 20)


def line_styles(names: Sequence[tuple[Any, ...]]) -> list[tuple[Any, str]]:
    """(colour, linestyle) per group name: one colour per first key (the model), one line style per
    combination of the other keys (method, knob settings), so a model keeps its colour across settings."""
    firsts = list(dict.fromkeys(n[0] for n in names))
    rests = list(dict.fromkeys(tuple(n[1:]) for n in names))
    out = []
    for n in names:
        i, j = firsts.index(n[0]), rests.index(tuple(n[1:]))
        if len(rests) <= len(LINESTYLES):
            out.append((color(i, len(firsts)), LINESTYLES[j]))
        else:  # many settings: colours by group, styles cycle after them
            k = names.index(n)
            out.append((color(k, len(names)), linestyle(k)))
    return out


MAX_SERIES = 5
"""The most lines one panel draws: more cannot be told apart at a report's size (split into panels)."""
HANDLE_LENGTH = 4.0
"""Legend line length (in font sizes): long enough to show a dashed or dotted line's pattern on both
sides of its marker (matplotlib's 2.0 leaves one dash hidden under the marker: dashed looked solid)."""


def panel_rows(names: Sequence[tuple[Any, ...]], max_per: int = MAX_SERIES) -> list[list[int]]:
    """The groups (indices into ``names``) each panel row draws: at most ``max_per``, the groups of one
    setting of the keys after the first (method, knobs) kept together where they fit, in order."""
    rests = list(dict.fromkeys(tuple(n[1:]) for n in names))
    rows: list[list[int]] = []
    for rest in rests:
        idx = [i for i, n in enumerate(names) if tuple(n[1:]) == rest]
        for k in range(0, len(idx), max_per):
            chunk = idx[k : k + max_per]
            if rows and len(rows[-1]) + len(chunk) <= max_per:
                rows[-1] += chunk
            else:
                rows.append(chunk)
    return rows or [[]]


def linestyle(i: int) -> str:
    """Cycles after the colours do, so 40 lines stay distinguishable."""
    return LINESTYLES[(i // len(PALETTE)) % len(LINESTYLES)]


def clamp(v: float, lo: float, hi: float = MAX_FIG_IN) -> float:
    return max(lo, min(hi, v))


def wrap(text: str, width_in: float, fontsize: float) -> str:
    """``text`` wrapped to lines that fit ``width_in`` inches at ``fontsize`` points (DejaVu Sans: a
    character is at most about 0.62 em wide on average for our labels)."""
    chars = max(20, int(width_in * 72 / (0.62 * fontsize)))
    return "\n".join(textwrap.fill(part, chars) for part in text.split("\n"))


def legend_width_in(labels: Iterable[str], fontsize: float = 8, title: str = "") -> float:
    """Estimated width of a one-column legend with these labels (inches)."""
    longest = max([len(str(x)) for x in labels] + [len(title), 4])
    return 0.6 + longest * 0.6 * fontsize / 72


def legend_columns(n: int, height_in: float, fontsize: float = 8) -> int:
    """Columns so that ``n`` entries fit a legend ``height_in`` inches tall."""
    per_col = max(1, int((height_in - 0.4) / (1.45 * fontsize / 72)))
    return max(1, math.ceil(n / per_col))


def title(fig: Figure, text: str, fontsize: float = 10) -> None:
    """The figure's title, wrapped to its width (constrained layout keeps it inside)."""
    w = fig.get_figwidth()
    fig.suptitle(wrap(text, w - 0.3, fontsize), fontsize=fontsize)


def footnote(fig: Figure, text: str, fontsize: float = 7) -> None:
    """A note under the axes (constrained layout keeps it inside the figure)."""
    fig.supxlabel(wrap(text, fig.get_figwidth() - 0.3, fontsize), fontsize=fontsize, color="#555")


def legend_outside(fig: Figure, ax: Any, title: str | None = None, fontsize: float = 8) -> Any:
    """The legend of ``ax``'s labelled artists, outside the axes on the right (below the figure title;
    the constrained layout makes room for it)."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    ncol = legend_columns(len(handles), fig.get_figheight() - 0.8, fontsize)
    return ax.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        borderaxespad=0.0,
        title=title,
        fontsize=fontsize,
        title_fontsize=fontsize,
        ncol=ncol,
        frameon=False,
        handlelength=HANDLE_LENGTH,
    )


def renderer(fig: Figure) -> Any:
    """An Agg renderer for ``fig`` after a layout pass (attaches an Agg canvas when it has none)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def overlaps(boxes: Sequence[Bbox], pad: float = 0.0) -> list[tuple[int, int]]:
    """Index pairs of boxes that overlap by more than ``pad`` pixels in both directions."""
    out = []
    order = sorted(range(len(boxes)), key=lambda i: boxes[i].x0)
    for a_pos, i in enumerate(order):
        a = boxes[i]
        for j in order[a_pos + 1 :]:
            b = boxes[j]
            if b.x0 >= a.x1 - pad:
                break
            if min(a.x1, b.x1) - max(a.x0, b.x0) > pad and min(a.y1, b.y1) - max(a.y0, b.y0) > pad:
                out.append((i, j))
    return out


def text_boxes(texts: Iterable[Any], r: Any) -> list[Bbox]:
    return [t.get_window_extent(r) for t in texts if t.get_visible() and t.get_text().strip()]


def _wrapped(label: str, sep: str = " / ") -> str:
    return label.replace(sep, "\n") if sep in label else label


def fit_xticklabels(fig: Figure, ax: Any, labels: Sequence[str], fontsize: float = 8) -> None:
    """Put ``labels`` on the x ticks ``0..n-1``: horizontal when they fit, else broken at `` / `` into
    lines, else upright (then smaller). Upright labels make the figure taller instead of squashing the
    axes."""
    labels = [str(x) for x in labels]
    wrapped = [_wrapped(x) for x in labels]
    tries = [(labels, 0, fontsize)]
    if wrapped != labels:
        tries.append((wrapped, 0, fontsize))
    tries += [(labels, 90, size) for size in (fontsize, 7, 6, 5) if size <= fontsize]
    for texts, rot, size in tries:
        ax.set_xticks(range(len(texts)), texts, rotation=rot, fontsize=size)
        r = renderer(fig)
        boxes = text_boxes(ax.get_xticklabels(), r)
        if not overlaps(boxes):
            break
    if boxes:  # keep the axes' height: grow the figure by what the tick labels take beyond half an inch
        extra = max(b.height for b in boxes) / fig.dpi - 0.5
        if extra > 0:
            fig.set_figheight(min(MAX_FIG_IN, fig.get_figheight() + extra))


def outside_figure(fig: Figure, artists: Iterable[Any], tol: float = 1.0) -> list[Any]:
    """The artists whose drawn extent leaves the figure (by more than ``tol`` pixels)."""
    r = renderer(fig)
    fb = fig.bbox
    bad = []
    for a in artists:
        if a is None or not a.get_visible():
            continue
        b = a.get_window_extent(r)
        if b.x0 < fb.x0 - tol or b.y0 < fb.y0 - tol or b.x1 > fb.x1 + tol or b.y1 > fb.y1 + tol:
            bad.append(a)
    return bad
