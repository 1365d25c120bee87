"""What a test measured, defined once: the field table (`fields.py`), the typed parts of a
result (`parts.py`), the `extra` JSON shape stored runs keep (`legacy.py`) and what a target
reports in force at a point (`point_state.py`). Every later stage imports from here."""
