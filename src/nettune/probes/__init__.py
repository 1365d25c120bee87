"""Probes: what is measured during every test next to the tool's own numbers (CPU per
process and per machine). The protocol is in base.py, the members in one file each, and
registry.py says which run for a test."""
