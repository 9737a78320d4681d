"""D3: a node editor drawn on one canvas: nodes, ports and wires exist only as canvas items.

Every item carries its element tag first (``blur.body``, ``blur.out`` ...); truth comes from
``canvas.bbox(tag)`` and hit tests from ``find_overlapping``, never from a widget tree.
"""

import tkinter as tk

from _desk import SANS, desktop, window

root = desktop()
win, body = window(root, "win", "Graph \u2014 Node Editor", 90, 50, 1100, 680)
c = tk.Canvas(body, name="c", background="#262a30", highlightthickness=0, borderwidth=0)
c.pack(fill="both", expand=True)
for gx in range(0, 1100, 32):  # a dotted grid, untagged decoration
    for gy in range(0, 660, 32):
        c.create_rectangle(gx, gy, gx + 1, gy + 1, fill="#3a4048", outline="")

W, HEAD, ROW = 170, 26, 24
NODES = {  # key: (title, x, y, inputs, outputs, header colour)
    "image": ("Image Input", 60, 120, [], ["image"], "#3f7f5f"),
    "blur": ("Gaussian Blur", 330, 70, ["image", "radius"], ["image"], "#3f5f8f"),
    "edges": ("Edge Detect", 330, 300, ["image"], ["edges"], "#3f5f8f"),
    "threshold": ("Threshold", 600, 120, ["image", "level"], ["mask"], "#7f5f3f"),
    "mix": ("Mix", 600, 360, ["a", "b", "factor"], ["image"], "#6f3f7f"),
    "output": ("Viewer", 860, 230, ["image"], [], "#8f3f3f"),
}
ports = {}
for key, (title, x, y, ins, outs, colour) in NODES.items():
    h = HEAD + ROW * max(len(ins), len(outs), 1) + 10
    c.create_rectangle(x, y, x + W, y + h, fill="#3b4049", outline="#15181c", width=2, tags=(f"{key}.body",))
    c.create_rectangle(
        x, y, x + W, y + HEAD, fill=colour, outline="#15181c", width=2, tags=(f"{key}.header",)
    )
    c.create_text(
        x + 10,
        y + HEAD / 2,
        text=title,
        anchor="w",
        fill="white",
        font=(SANS, -13, "bold"),
        tags=(f"{key}.title",),
    )
    for i, name in enumerate(ins):
        py = y + HEAD + 8 + ROW * i + ROW / 2 - 4
        c.create_text(
            x + 16,
            py,
            text=name,
            anchor="w",
            fill="#c8ccd2",
            font=(SANS, -12),
            tags=(f"{key}.in.{name}.label",),
        )
        ports[(key, "in", name)] = (x, py)
    for i, name in enumerate(outs):
        py = y + HEAD + 8 + ROW * i + ROW / 2 - 4
        c.create_text(
            x + W - 16,
            py,
            text=name,
            anchor="e",
            fill="#c8ccd2",
            font=(SANS, -12),
            tags=(f"{key}.out.{name}.label",),
        )
        ports[(key, "out", name)] = (x + W, py)

WIRES = [
    (("image", "out", "image"), ("blur", "in", "image")),
    (("image", "out", "image"), ("edges", "in", "image")),
    (("blur", "out", "image"), ("threshold", "in", "image")),
    (("blur", "out", "image"), ("mix", "in", "a")),
    (("edges", "out", "edges"), ("mix", "in", "b")),
    (("threshold", "out", "mask"), ("mix", "in", "factor")),
    (("mix", "out", "image"), ("output", "in", "image")),
]
for n, (a, b) in enumerate(WIRES):
    (ax, ay), (bx, by) = ports[a], ports[b]
    mid = max(60, (bx - ax) / 2)
    c.create_line(
        ax,
        ay,
        ax + mid,
        ay,
        bx - mid,
        by,
        bx,
        by,
        smooth=True,
        width=3,
        fill="#9aa7b4",
        tags=(f"wire{n + 1}",),
    )
    c.tag_lower(f"wire{n + 1}", "image.body")
for (key, side, name), (px, py) in ports.items():
    colour = "#f2c14e" if side == "out" else "#7fc8f8"
    c.create_oval(
        px - 6,
        py - 6,
        px + 6,
        py + 6,
        fill=colour,
        outline="#15181c",
        width=2,
        tags=(f"{key}.{side}.{name}", "port"),
    )

root.mainloop()
