"""Desktop scenes: real Tk applications on a private Xvfb display (docs/desktop.md).

- :mod:`dvoc_bench.scenes.desktop.display`: the virtual display of a run (Xvfb started with ``-displayfd``),
  the pinned fonts (a ``FONTCONFIG_FILE`` naming the project's DejaVu folder), the screen grab and the real
  pointer click (``xdotool``); every child process dies with the harness (``PR_SET_PDEATHSIG``).
- :mod:`dvoc_bench.scenes.desktop.runner`: the standalone script that runs one Tk application (a built-in
scene or
  your own script), hooks its ``mainloop`` and answers truth and hit-test queries over a pipe.
- :mod:`dvoc_bench.scenes.desktop.source`: desktop tasks as a scene source (``scenes/desktop/D1.yaml`` ...).
- :mod:`dvoc_bench.scenes.desktop.apps`: real GTK/Qt programs as tasks (``scenes/apps/A01.yaml`` ...,
  ``task=desktop_app``), each on its own display with a private D-Bus and AT-SPI bus;
- :mod:`dvoc_bench.scenes.desktop.atspi_runner`: the standalone script (system Python, ``python3-pyatspi``)
  that starts the bus and the program and answers accessibility-tree queries over a pipe.
"""
