"""Shared look of the built-in desktop scenes (D1-D4): a desktop, a window frame, pinned fonts.

The harness lists only the project's DejaVu fonts to fontconfig, so these families are the only ones Tk
can find; naming them here keeps the layout the same on every machine.
"""

import tkinter as tk

SANS = "DejaVu Sans"
MONO = "DejaVu Sans Mono"
DESKTOP = "#2f5d7c"
WINDOW = "#ececec"
TITLE = "#4a6f8f"


def desktop(panel_text="Files   Editor   Terminal"):
    """A root covering the whole screen, looking like an empty desktop with a bottom panel."""
    root = tk.Tk(className="DvocDesktop")
    w, h = root.winfo_screenwidth(), root.winfo_screenheight()
    root.geometry(f"{w}x{h}+0+0")
    root.configure(background=DESKTOP)
    root.option_add("*Font", (SANS, -13))
    root.option_add("*Background", WINDOW)
    root.option_add("*HighlightThickness", 0)
    panel = tk.Frame(root, name="panel", background="#1f2a33", height=30)
    panel.place(x=0, y=h - 30, width=w, height=30)
    tk.Label(panel, name="apps", text=panel_text, background="#1f2a33", foreground="#d8dee9").place(x=10, y=6)
    tk.Label(panel, name="clock", text="09:41", background="#1f2a33", foreground="#d8dee9").place(
        x=w - 60, y=6
    )
    return root


def window(root, name, title, x, y, width, height):
    """A decorated window (title bar drawn by the scene: no window manager runs) placed at ``x, y``."""
    top = tk.Toplevel(root, name=name, background="#9aa5b1", borderwidth=1, relief="solid")
    top.geometry(f"{width}x{height}+{x}+{y}")
    bar = tk.Frame(top, name="titlebar", background=TITLE, height=28)
    bar.pack(side="top", fill="x")
    bar.pack_propagate(False)
    tk.Label(
        bar, name="title", text=title, background=TITLE, foreground="white", font=(SANS, -13, "bold")
    ).pack(side="left", padx=10)
    tk.Label(bar, name="close", text="\u2715", background=TITLE, foreground="white").pack(
        side="right", padx=8
    )
    body = tk.Frame(top, name="body", background=WINDOW)
    body.pack(side="top", fill="both", expand=True)
    return top, body
