"""Knobs: change any setting per sweep point, journal it on disk first, always put it back.

One file per kind of knob (sysctl, mtu, offload, ...), each a base.Kind (modelled on
tuned's plugins): its key's shape, parse / validate / read / apply / restore, how its
value is shown and persisted. registry.py lists the kinds; keys.py checks a knob key
against them. A run goes through:
    gate.py       pending changes a killed run left: which hosts they concern, restore them
    precheck.py   every knob of every point checked before anything changes
    items.py      one point's knobs as items: value, host, place (places.py)
    apply.py      KnobSession: apply point by point, restore everything at the end
    restore.py    put values back (end of a run, or `nettune restore` after kill -9)
    boot_batch.py boot-time changes (cmdline) of a host, applied or restored, settled by one reboot
journal.py is the write-ahead journal (fsynced before every change), remote.py reaches
remote hosts again for a restore, persist.py writes a point's knobs as installable
files, show.py reads current values.
"""
