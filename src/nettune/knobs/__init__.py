"""Knobs: change any setting per sweep point, journal it on disk first, always put it back.

One file per kind of knob (sysctl, mtu, offload, ...), all following the protocol in
base.py (parse / validate / read / apply / restore). journal.py is the write-ahead
journal (fsynced before every change), session.py applies a study's knobs point by
point, restore.py puts values back (at the end of a run, or after kill -9 from
`nettune restore`), persist.py writes a point's knobs as installable files.
"""
