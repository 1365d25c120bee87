"""The one error every ssh module raises (connection, trust, login, a lost session): its own
module, so sshtrust.py and sshconnect.py raise it without importing ssh.py, which imports them."""
from __future__ import annotations

from ...errors import NettuneError


class SshError(NettuneError, ConnectionError):
    """Cannot connect to, or lost the connection to, a host (one line, says what to do)."""

    def __init__(self, message: str, retry: bool = False):
        super().__init__(message)
        self.retry = retry  # the host may just be (re)booting: worth trying again
