"""One long-lived remote `sh` per SSH connection, for short commands.

Opening an SSH session per command costs a channel, a fork in sshd and the user's login
shell with its rc files (bash sources ~/.bashrc for ssh commands: 0.3 s on a host with
pyenv). Sampling /proc and polling for a listening port would pay that many times per
test. So SshHost.run() writes each command to one `sh` (started once per connection, as
`sudo -n sh` when sudo = true) and reads its output back between random markers:

    ( CMD ) </dev/null; printf '\\n%s %d\\n' MARK "$?"; printf '\\n%s\\n' MARK >&2

CMD is the shlex-joined argv, so values stay single words. Commands run one at a time
per host (a lock); a command that outruns its timeout closes the shell (a new one starts
on the next call) and gives exit code 124. Commands needing stdin (write_text) and
spawned processes use their own session instead.
"""
from __future__ import annotations

import asyncio
import secrets
from typing import Any


class ShellGone(Exception):
    """The helper shell ended (EOF); the caller falls back to a session per command."""


class RemoteShell:
    def __init__(self, conn: Any, proc: Any):
        self.conn, self.proc = conn, proc
        self.dead = False
        self._lock = asyncio.Lock()

    @classmethod
    async def start(cls, conn: Any, command: str, timeout: float) -> "RemoteShell | None":
        """Start `command` (sh or sudo -n sh) and check it answers; None if it does not."""
        try:
            proc = await conn.create_process(command, encoding="utf-8", errors="replace")
        except Exception:
            return None
        shell = cls(conn, proc)
        try:
            rc, out, _ = await shell.run("echo nettune-ready", timeout)
        except (ShellGone, asyncio.TimeoutError):
            shell.close()
            return None
        if rc != 0 or out.strip() != "nettune-ready":
            shell.close()
            return None
        return shell

    async def run(self, cmd: str, timeout: float) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) of one command; 124 if it timed out."""
        if self.dead:
            raise ShellGone("closed")
        mark = "NETTUNE-END-" + secrets.token_hex(8)
        script = f"( {cmd}\n) </dev/null; printf '\\n%s %d\\n' {mark} \"$?\"; printf '\\n%s\\n' {mark} >&2\n"
        async with self._lock:
            try:
                self.proc.stdin.write(script)
                out, rc_line, err = await asyncio.wait_for(self._read(mark), timeout)
            except asyncio.TimeoutError:
                self.close()
                return 124, "", f"timed out after {timeout:.0f}s"
            except (asyncio.IncompleteReadError, BrokenPipeError, ConnectionError, OSError) as e:
                self.close()
                raise ShellGone(str(e)) from None
            except Exception as e:  # asyncssh errors (connection lost...)
                self.close()
                raise ShellGone(str(e)) from None
        return int(rc_line.strip() or 255), out, err

    async def _read(self, mark: str) -> tuple[str, str, str]:
        end_out, end_err = f"\n{mark} ", f"\n{mark}\n"

        async def stdout() -> tuple[str, str]:
            data: str = await self.proc.stdout.readuntil(end_out)
            rc: str = await self.proc.stdout.readline()
            return data[: -len(end_out)], rc

        async def stderr() -> str:
            data: str = await self.proc.stderr.readuntil(end_err)
            return data[: -len(end_err)]

        (out, rc_line), err = await asyncio.gather(stdout(), stderr())
        return out, rc_line, err

    def close(self) -> None:
        if not self.dead:
            self.dead = True
            try:
                self.proc.close()
            except Exception:
                pass
