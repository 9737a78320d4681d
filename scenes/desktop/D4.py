"""D4: a dense file table: 24 nearly identical rows, each with its own small Open button."""

import tkinter as tk

from _desk import MONO, SANS, desktop, window

root = desktop()
win, body = window(root, "win", "Exports \u2014 File Manager", 200, 36, 880, 700)
head = tk.Frame(body, name="head", background="#d5dbe1")
head.pack(side="top", fill="x")
table = tk.Frame(body, name="table", background="white")
table.pack(side="top", fill="both", expand=True)
COLS = [("name", "Name", 30), ("size", "Size", 9), ("modified", "Modified", 17), ("owner", "Owner", 9)]
for col, (key, title, width) in enumerate(COLS):
    tk.Label(
        head,
        name=key,
        text=title,
        width=width,
        anchor="w",
        background="#d5dbe1",
        font=(SANS, -12, "bold"),
        padx=6,
    ).grid(row=0, column=col, sticky="w", pady=3)
tk.Label(head, name="action", text="", width=6, background="#d5dbe1").grid(row=0, column=len(COLS))

owners = ("ada", "alan", "grace")
for i in range(24):
    month, day = 1 + i // 8, 3 + (i * 5) % 26
    name = f"report-2024-{month:02d}-{day:02d}.csv"
    values = (
        name,
        f"{12 + (i * 37) % 90}.{i % 10} KB",
        f"2024-{month:02d}-{day:02d} 0{i % 10}:{(i * 7) % 60:02d}",
        owners[i % 3],
    )
    shade = "white" if i % 2 == 0 else "#f1f4f7"
    for col, ((key, _, width), value) in enumerate(zip(COLS, values, strict=True)):
        font = (MONO, -12) if key == "name" else (SANS, -12)
        tk.Label(
            table, name=f"{key}_{i}", text=value, width=width, anchor="w", background=shade, font=font, padx=6
        ).grid(row=i, column=col, sticky="nsew")
    cell = tk.Frame(table, name=f"cell_{i}", background=shade)
    cell.grid(row=i, column=len(COLS), sticky="nsew")
    tk.Button(
        cell,
        name=f"open_{i}",
        text="Open",
        font=(SANS, -11),
        padx=6,
        pady=0,
        borderwidth=1,
        background="#e8edf2",
    ).pack(padx=6, pady=1)

tk.Label(body, name="status", text="24 items, 1.7 MB", anchor="w").pack(side="bottom", fill="x", padx=6)
root.mainloop()
