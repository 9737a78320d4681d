"""Pixels: the DVOC overlay, the Set-of-Mark tags and their layout, what is sent to a model (resize and
crop), and the render pool. Pure functions on arrays; imports core and the detector's types only."""
