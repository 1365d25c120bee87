"""What an iperf2 report of one side's rows only can say (iperf2 logs are per side)."""
from __future__ import annotations

from ..engines.result import TestResult

BOTH = "one side's iperf2 report only: sender and receiver rates both come from it"
RECEIVER_ONLY = "a UDP receiver's report only: the sender's rate is not in it (unknown)"


def one_side(res: TestResult, udp: bool) -> None:
    """A result parsed with the same rows standing for both sides: TCP delivers what was
    sent, so the rates hold, and the run says so; a UDP receiver's rows (jitter, loss)
    say nothing of what the sender sent: unknown, never the receiver's rate."""
    if not udp:
        res.warnings.append(BOTH)
        return
    res.sender_bps = res.sender_bytes = res.reverse_sender_bps = None
    for st in res.streams:
        st.sender_bps = st.sender_bytes = None
    res.warnings.append(RECEIVER_ONLY)
