"""What an iperf2 report of one side's rows only can say (iperf2 logs are per side)."""
from __future__ import annotations

from pathlib import Path

from ..engines.result import TestResult
from ..errors import NettuneError

BOTH = "one side's iperf2 report only: sender and receiver rates both come from it"
RECEIVER_ONLY = "a UDP receiver's report only: the sender's rate is not in it (unknown)"
SEQUENTIAL = ("the two directions ran one after the other (-r): each direction's rate is its own, "
              "but the run's total adds rates measured at different times")
SENDER_ONLY = "a UDP sender's report only for the reverse direction: what arrived is not in it (unknown)"


def one_side(res: TestResult, udp: bool, path: Path) -> None:
    """A result parsed with the same rows standing for both sides: TCP delivers what was
    sent, so the rates hold, and the run says so. UDP does not: a receiver's row (jitter,
    loss) says nothing of what was sent, a sender's row nothing of what arrived. Each
    stream keeps its own side's numbers, the other side's are unknown, never copied; with
    no receiver's numbers for the main direction (a sender's log, --full-duplex's client)
    the file is refused."""
    if not udp:
        res.warnings.append(BOTH)
        return
    for st in res.streams:
        if st.packets is None:  # a sender's row
            st.receiver_bps = st.receiver_bytes = None
        else:
            st.sender_bps = st.sender_bytes = None
    for label in ("forward", "reverse"):
        mine = [st for st in res.streams if st.direction == label]
        if not mine:
            continue
        received = any(st.packets is not None for st in mine)
        if label == "forward" and not received:
            raise NettuneError(f"{path}: a UDP sender's report only for the main direction (iperf2 logs each side apart): "
                               "the receiver's rate, loss and jitter are not in it; import the receiving side's log "
                               "(the server's; the client's with -R)")
        if label == "forward":
            res.sender_bps = res.sender_bytes = None
        elif received:
            res.reverse_sender_bps = None
            if res.reverse is not None:
                res.reverse.sender_bytes = None
        else:
            res.reverse_receiver_bps = None
            if res.reverse is not None:
                res.reverse.receiver_bytes = None
            res.warnings.append(SENDER_ONLY)
    res.warnings.append(RECEIVER_ONLY)
