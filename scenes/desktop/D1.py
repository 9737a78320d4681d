"""D1: a settings dialog (labels, entries, check buttons, radio buttons, OK / Cancel / Apply)."""

import tkinter as tk

from _desk import SANS, WINDOW, desktop, window

root = desktop()
sw, sh = root.winfo_screenwidth(), root.winfo_screenheight()
dlg, body = window(root, "dlg", "Settings", (sw - 460) // 2, (sh - 430) // 2 - 20, 460, 430)

form = tk.Frame(body, name="form", background=WINDOW)
form.pack(side="top", fill="x", padx=18, pady=(16, 6))
fields = [
    ("name", "Display name", "Ada Lovelace"),
    ("email", "Email", "ada@example.org"),
    ("server", "Sync server", "sync.example.org"),
    ("port", "Port", "8443"),
]
for row, (key, label, value) in enumerate(fields):
    tk.Label(form, name=f"{key}_label", text=label + ":", anchor="e", width=12).grid(
        row=row, column=0, sticky="e", pady=4
    )
    entry = tk.Entry(
        form,
        name=key,
        width=30,
        relief="sunken",
        borderwidth=1,
        background="white",
        highlightthickness=1,
        highlightcolor="#6b8fb3",
    )
    entry.insert(0, value)
    entry.grid(row=row, column=1, sticky="w", padx=(8, 0), pady=4)

opts = tk.LabelFrame(body, name="options", text=" Options ", padx=10, pady=6)
opts.pack(side="top", fill="x", padx=18, pady=6)
checks = [
    ("notify", "Enable notifications", 1),
    ("login", "Start at login", 0),
    ("usage", "Send anonymous usage data", 0),
    ("updates", "Check for updates automatically", 1),
]
variables = {key: tk.IntVar(root, value=on, name=f"opt_{key}") for key, _, on in checks}  # kept alive
for key, label, _ in checks:
    tk.Checkbutton(opts, name=key, text=label, variable=variables[key], anchor="w").pack(side="top", fill="x")

theme = tk.Frame(body, name="theme", background=WINDOW)
theme.pack(side="top", fill="x", padx=18, pady=4)
tk.Label(theme, name="label", text="Theme:").pack(side="left")
mode = tk.StringVar(root, value="light")
for value in ("light", "dark", "system"):
    tk.Radiobutton(theme, name=value, text=value.capitalize(), value=value, variable=mode).pack(
        side="left", padx=6
    )

buttons = tk.Frame(body, name="buttons", background=WINDOW)
buttons.pack(side="bottom", fill="x", padx=14, pady=12)
tk.Button(buttons, name="apply", text="Apply", width=8).pack(side="right", padx=4)
tk.Button(buttons, name="cancel", text="Cancel", width=8, command=dlg.withdraw).pack(side="right", padx=4)
tk.Button(
    buttons, name="ok", text="OK", width=8, default="active", font=(SANS, -13, "bold"), command=dlg.destroy
).pack(side="right", padx=4)

root.mainloop()
