"""`nettune doctor --from PATH`: the hosts of a nettune capture or of a sosreport as views.

PATH is a directory or a tarball (doctor/archive.py reads it without extracting or
trusting it). A nettune capture (nettune-capture.json inside) gives back every host it
recorded; anything else laid out like a sosreport (sos_commands/, proc/, sys/) is one host
read through doctor/sosreport.py.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..errors import NettuneError
from .archive import open_tree
from .base import HostView
from .capture import NAME, capture_views
from .sosreport import SosSource


def views_from(path: Path, interface: str | None = None) -> tuple[list[HostView], dict[str, str], str]:
    """(views, addresses, what was read: "nettune capture" or "sosreport")."""
    tree = open_tree(path)
    doc = tree.text(NAME)
    if doc is not None:
        try:
            data = json.loads(doc)
        except ValueError as e:
            raise NettuneError(f"--from {path}: {NAME} is not valid JSON ({e}); capture again with `nettune doctor --capture`") from None
        views, addresses = capture_views(data, str(path))
        if interface:
            raise NettuneError(f"--from {path}: --interface applies to a sosreport; a nettune capture already names each host's interface")
        return views, addresses, "nettune capture"
    if not any(tree.is_dir(d) for d in ("sos_commands", "proc", "sys")):
        raise NettuneError(f"--from {path}: neither a nettune capture ({NAME}) nor a sosreport (no sos_commands/, proc/ or sys/ in it)")
    src = SosSource(tree)
    name = src.hostname() or path.name.removesuffix(".tar.xz").removesuffix(".tar.gz")
    return [HostView(name, None, interface=interface, source=src)], {}, "sosreport"
