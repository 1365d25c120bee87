"""The knob kinds, one file each (the registry is knobs/registry.py)."""
