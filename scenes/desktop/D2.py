"""D2: an editor window whose toolbar has icon-only buttons (icons drawn pixel by pixel, no text)."""

import math
import tkinter as tk

from _desk import MONO, WINDOW, desktop, window

S = 24  # icon size, px


def icon(root, paint):
    """A ``S x S`` PhotoImage whose pixels ``paint(x, y)`` colours (``None``: transparent)."""
    img = tk.PhotoImage(master=root, width=S, height=S)
    for y in range(S):
        for x in range(S):
            c = paint(x + 0.5, y + 0.5)
            if c:
                img.put(c, (x, y))
    return img


def box(x, y, x0, y0, x1, y1):
    return x0 <= x <= x1 and y0 <= y <= y1


def ring(x, y, cx, cy, r, w):
    return abs(math.hypot(x - cx, y - cy) - r) <= w / 2


def seg(x, y, ax, ay, bx, by, w):
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - ax - t * dx, y - ay - t * dy) <= w / 2


INK, BLUE, RED, GREEN, GOLD = "#37474f", "#1e6fb8", "#c62828", "#2e7d32", "#e0a100"
ICONS = {
    "new": lambda x, y: (
        INK
        if (box(x, y, 5, 3, 19, 21) and not box(x, y, 6.5, 4.5, 17.5, 19.5))
        else ("white" if box(x, y, 5, 3, 19, 21) else None)
    ),
    "open": lambda x, y: GOLD if (box(x, y, 3, 8, 21, 20) or box(x, y, 3, 5, 10, 8)) else None,
    "save": lambda x, y: (
        BLUE
        if box(x, y, 3, 3, 21, 21) and not box(x, y, 7, 4, 17, 10) and not box(x, y, 8, 14, 16, 21)
        else ("white" if box(x, y, 7, 4, 17, 10) else None)
    ),
    "cut": lambda x, y: (
        INK
        if (
            ring(x, y, 7, 17, 3.5, 2)
            or ring(x, y, 17, 17, 3.5, 2)
            or seg(x, y, 9, 14, 18, 3, 2)
            or seg(x, y, 15, 14, 6, 3, 2)
        )
        else None
    ),
    "copy": lambda x, y: (
        INK
        if (
            (box(x, y, 3, 3, 15, 16) and not box(x, y, 5, 5, 13, 14))
            or (box(x, y, 9, 8, 21, 21) and not box(x, y, 11, 10, 19, 19))
        )
        else None
    ),
    "undo": lambda x, y: (
        GREEN
        if (
            (ring(x, y, 12, 14, 7, 2.5) and y < 15)
            or seg(x, y, 5, 14, 2, 9, 2.5)
            or seg(x, y, 5, 14, 10, 12, 2.5)
        )
        else None
    ),
    "redo": lambda x, y: (
        GREEN
        if (
            (ring(x, y, 12, 14, 7, 2.5) and y < 15)
            or seg(x, y, 19, 14, 22, 9, 2.5)
            or seg(x, y, 19, 14, 14, 12, 2.5)
        )
        else None
    ),
    "find": lambda x, y: INK if (ring(x, y, 10, 10, 6, 2.5) or seg(x, y, 14.5, 14.5, 21, 21, 3.5)) else None,
    "print": lambda x, y: (
        INK
        if (
            (box(x, y, 3, 9, 21, 17) and not box(x, y, 7, 14, 17, 21))
            or (box(x, y, 7, 3, 17, 21) and not box(x, y, 8, 4, 16, 20))
        )
        else ("white" if box(x, y, 7, 3, 17, 21) else None)
    ),
    "delete": lambda x, y: (
        RED
        if (
            box(x, y, 4, 5, 20, 7)
            or box(x, y, 10, 2, 14, 5)
            or (box(x, y, 6, 8, 18, 21) and not (box(x, y, 8, 9, 16, 19) and int(x) % 3 != 0))
        )
        else None
    ),
    "settings": lambda x, y: (
        INK
        if (
            ring(x, y, 12, 12, 6.5, 3)
            or (
                ring(x, y, 12, 12, 9, 3)
                and int((math.atan2(y - 12, x - 12) + math.pi) / (math.pi / 4)) % 2 == 0
            )
        )
        else None
    ),
    "help": lambda x, y: (
        BLUE
        if (
            ring(x, y, 12, 12, 9.5, 2)
            or (ring(x, y, 12, 9, 3.5, 2) and (x > 10 or y < 9))
            or box(x, y, 11, 13, 13, 15)
            or box(x, y, 11, 17, 13, 19)
        )
        else None
    ),
}

root = desktop()
sw, sh = root.winfo_screenwidth(), root.winfo_screenheight()
win, body = window(root, "win", "notes.txt \u2014 Editor", 150, 70, 980, 620)
toolbar = tk.Frame(body, name="toolbar", background="#dfe3e8", borderwidth=1, relief="raised")
toolbar.pack(side="top", fill="x")
images = {}
groups = [
    ("new", "open", "save"),
    ("cut", "copy"),
    ("undo", "redo"),
    ("find", "print", "delete"),
    ("settings", "help"),
]
for g, names in enumerate(groups):
    if g:
        tk.Frame(toolbar, name=f"sep{g}", width=2, height=28, background="#b0b8c0").pack(side="left", padx=6)
    for name in names:
        images[name] = icon(root, ICONS[name])
        tk.Button(
            toolbar,
            name=name,
            image=images[name],
            relief="flat",
            borderwidth=1,
            padx=3,
            pady=3,
            background="#dfe3e8",
            activebackground="#c9d6e3",
        ).pack(side="left", padx=1, pady=3)
text = tk.Text(
    body, name="text", font=(MONO, -13), background="white", relief="flat", padx=8, pady=6, borderwidth=0
)
text.pack(side="top", fill="both", expand=True)
text.insert(
    "1.0",
    "Meeting notes\n\n- ship the desktop scenes\n- measure per-step cost\n- check the real "
    "clicks against the toolkit\n",
)
status = tk.Label(body, name="status", text="Ln 1, Col 1    UTF-8", anchor="w", background=WINDOW)
status.pack(side="bottom", fill="x")

root.mainloop()
