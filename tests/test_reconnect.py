"""Reaching a remote host again from the journal alone (no root, no connection made)."""
from __future__ import annotations

import pytest

from nettune.knobs.base import KnobError
from nettune.knobs.remote import RemotePlaces
from nettune.targets.reconnect import NoWayToReach, Reconnector


def test_a_record_without_a_port_says_so_and_is_remembered():
    # a journal written before restores over SSH kept only the address
    rec = {"label": "pve1", "address": "198.18.7.1"}
    with RemotePlaces() as places:
        with pytest.raises(KnobError, match=r"^cannot reach pve1 \(198\.18\.7\.1\): the journal does not say how to reach it"):
            places.place(rec)
        assert "pve1 (198.18.7.1)" in places.unreachable  # asked once per host, not once per change
        with pytest.raises(KnobError, match="does not say how to reach it"):
            places.place(rec)


def test_reconnector_tells_a_missing_way_from_other_errors():
    r = Reconnector()
    try:
        with pytest.raises(NoWayToReach):
            r.host("pve1", {"address": "198.18.7.1"})
        with pytest.raises(KeyError):  # a bug or a mangled record is not "no way to reach it"
            r.host("pve1", {"port": 22})
    finally:
        r.close()
