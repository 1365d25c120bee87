"""Which lines of an OpenSSH client config apply to a destination, in ssh's order.

Follows ssh.c and readconf.c (OpenSSH 9.2; tests/test_ssh_conformance.py compares the
result with the installed `ssh -G` on real configurations):
  - files: `ssh_config = PATH` is read alone, like `ssh -F PATH`; otherwise
    ~/.ssh/config (from the passwd entry's home, as ssh takes it), then
    /etc/ssh/ssh_config. ~/.ssh/config and every included file must be owned by root or
    you and not writable by group or others, or ssh refuses them ("Bad owner or
    permissions"); Include globs relative paths under ~/.ssh (/etc/ssh for the system
    file), at most 16 deep;
  - every line is checked, in blocks that apply or not; an unknown keyword is refused
    unless an earlier applying `IgnoreUnknown` names it;
  - `Host` patterns match the destination as typed (case matters); `Match host` and
    `originalhost` compare lowercased; `Match exec` runs its command (tokens expanded) only
    when local commands are allowed (local_commands.py), else counts as not matching and
    is named in `pending`;
  - a second, final pass when a `Match final` was seen or CanonicalizeHostname is on:
    the host name canonicalized and lowercased, the same files read again into the same
    values (so only what is still unset is added), `Match final`/`canonical` true.
"""
from __future__ import annotations

import glob as globmod
import hashlib
import os
import socket
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .local_commands import FLAG, may_run, redact
from .ssh_keywords import KEYWORDS, Bad, Options
from .ssh_words import (SshConfigError, argv_split, expand, is_numeric_address, local_user, match_hostname,
                        match_pattern, match_pattern_list, passwd_home, split_keyword, strdelim)

SYSTEM_CONFIG = Path("/etc/ssh/ssh_config")
MAX_DEPTH = 16
EXEC_TIMEOUT = 60.0


@dataclass
class Pass:
    host: str  # what `Host` lines match: the destination as typed, canonical in the final pass
    original: str  # the destination as typed (%n, Match originalhost)
    final: bool = False
    want_final: bool = False


@dataclass
class Evaluation:
    """What reading the files did besides setting values: commands run or not run."""

    ran: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def thishost() -> str:
    return socket.gethostname()


def connection_hash(host: str, port: int, user: str) -> str:
    """%C: SHA-1 of local host name, host, port and user, as ssh computes it."""
    return hashlib.sha1(f"{thishost()}{host}{port}{user}".encode(errors="surrogateescape")).hexdigest()


def tokens(opts: Options, host: str, original: str) -> dict[str, str]:
    """The %-tokens of Match exec and of file names (ssh's DEFAULT_CLIENT_PERCENT_EXPAND_ARGS)."""
    port = int(opts.get("Port") or 22)
    user = str(opts.get("User") or local_user())
    me = thishost()
    return {"C": connection_hash(host, port, user), "L": me.split(".")[0], "d": passwd_home(), "h": host,
            "k": str(opts.get("HostKeyAlias") or host), "l": me, "n": original, "p": str(port), "r": user,
            "u": local_user(), "i": str(os.getuid())}


class Reader:
    def __init__(self, opts: Options, ev: Evaluation):
        self.opts, self.ev = opts, ev

    # -- files ---------------------------------------------------------------------
    def read(self, path: Path, p: Pass, user_conf: bool, check_perm: bool, depth: int = 0,
             never: bool = False, active: list[bool] | None = None) -> bool:
        """Apply one file; False when it does not exist (ssh skips a missing default file)."""
        if depth > MAX_DEPTH:
            raise SshConfigError(f"ssh_config {path}: Too many recursive configuration includes (more than {MAX_DEPTH})")
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise SshConfigError(f"ssh_config {path}: cannot read it: {e.strerror}") from None
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if stat.S_ISDIR(st.st_mode):
                return True  # ssh reads a directory as an empty file
            if check_perm and ((st.st_uid not in (0, os.getuid())) or st.st_mode & 0o022):
                raise SshConfigError(f"ssh_config {path}: Bad owner or permissions (ssh refuses it: it must belong to root or you "
                                     f"and not be writable by group or others); chmod go-w {path}")
            data = f.read(1 << 22)
        if str(path) not in self.ev.files:
            self.ev.files.append(str(path))
        active = active if active is not None else [True]
        for n, raw in enumerate(data.split(b"\n"), 1):
            line = raw.decode("utf-8", "surrogateescape")
            try:
                self.line(line, p, user_conf, depth, never, active, f"{path} line {n}")
            except Bad as e:
                raise SshConfigError(f"ssh_config {path} line {n}: {_printable(str(e))} (ssh refuses this configuration)") from None
        return True

    def line(self, line: str, p: Pass, user_conf: bool, depth: int, never: bool, active: list[bool], where: str) -> None:
        self.opts.at = where
        got = split_keyword(line)
        if got is None:
            return
        kw, rest = got
        if not rest.strip(" \t\r\n"):
            raise Bad(f'no argument after keyword "{kw}"')
        if kw == "match":
            active[0] = self.match(rest, p, where) and not never
            return
        handler = KEYWORDS.get(kw)
        if handler is None and kw not in ("host", "include"):
            ignored = self.opts.get("IgnoreUnknown")
            if ignored is not None and match_pattern_list(kw, ignored, lower=True) == 1:
                return
            raise Bad(f"Bad configuration option: {kw}")
        words = argv_split(rest)
        if words is None:
            raise Bad("invalid quotes")
        if kw == "host":
            active[0] = self.host(words, p, never)
        elif kw == "include":
            self.include(words, p, user_conf, depth, active, where)
        elif handler is not None:
            name, handle = handler
            handle(self.opts, name, words, rest, active[0])
            if words:
                raise Bad(f"keyword {kw} extra arguments at end of line")

    def host(self, words: list[str], p: Pass, never: bool) -> bool:
        on = False
        for arg in words:
            if arg == "":
                raise Bad("keyword host empty argument")
            if never:
                return False
            negated = arg.startswith("!")
            if match_pattern(p.host, arg[1:] if negated else arg):
                if negated:
                    return False
                on = True
        return on

    def include(self, words: list[str], p: Pass, user_conf: bool, depth: int, active: list[bool], where: str) -> None:
        outer = active[0]
        for arg in words:
            if arg == "":
                raise Bad("keyword include empty argument")
            if arg.startswith("~") and not user_conf:
                raise Bad(f"bad include path {arg}.")
            if not arg.startswith(("/", "~")):
                arg = ("~/.ssh/" if user_conf else "/etc/ssh/") + arg
            pattern = os.path.expanduser(arg.replace("~", passwd_home(), 1) if arg.startswith("~/") or arg == "~" else arg)
            for f in sorted(globmod.glob(pattern)):
                found = self.read(Path(f), p, user_conf, True, depth + 1, never=not outer, active=active)
                if not found:
                    raise Bad(f"Can't open user config file {f}")
                active[0] = outer  # a Match inside an include does not change the including file's state
        words.clear()

    # -- Match ---------------------------------------------------------------------
    def match(self, rest: str, p: Pass, where: str) -> bool:
        o = self.opts
        user = str(o.get("User") or local_user())
        if p.final:
            host = str(o.get("Hostname"))
        elif o.get("Hostname") is not None:
            host = expand(str(o.get("Hostname")), {"h": p.original}, False, f"{where}: Hostname")
        else:
            host = p.original
        result, attributes, text = True, 0, rest
        while True:
            attrib, text = strdelim(text)
            if attrib is None:
                raise Bad("invalid quotes")
            if attrib == "":
                break
            if attrib.startswith("#"):
                break
            negate = attrib.startswith("!")
            name = (attrib[1:] if negate else attrib).lower()
            arg: str | None = None
            if "=" in name and name.split("=")[0] in ("host", "originalhost", "user", "localuser", "localnetwork", "tagged", "exec", "command", "version"):
                name, _, arg = name.partition("=")  # OpenSSH 10: Match host=pattern
            if name == "all":
                nxt, _ = strdelim(text)
                if attributes > 1 or (nxt and not nxt.startswith("#")):
                    raise Bad(f"'{attrib}' cannot be combined with other Match attributes")
                return result and not negate
            attributes += 1
            if name in ("canonical", "final"):
                if name == "final":  # `Match !final` too: ssh 9.2 asks for the final pass on either (readconf.c)
                    p.want_final = True
                if p.final == negate:
                    result = False
                continue
            if arg is None:
                arg, text = strdelim(text)
            if arg is None or (arg == "" and name not in ("tagged", "command")) or arg.startswith("#"):
                raise Bad(f"Missing Match criteria for {name}")
            if name == "host":
                hit = match_hostname(host, arg)
            elif name == "originalhost":
                hit = match_hostname(p.original, arg)
            elif name == "user":
                hit = match_pattern_list(user, arg) == 1
            elif name == "localuser":
                hit = match_pattern_list(local_user(), arg) == 1
            elif name == "tagged":
                tag = str(o.get("Tag") or "")
                hit = (arg == "") if tag == "" else match_pattern_list(tag, arg) == 1
            elif name == "sessiontype":
                hit = match_pattern_list("exec", arg) == 1  # nettune runs commands: an exec session
            elif name == "localnetwork":
                hit = _on_local_network(arg)
            elif name == "exec":
                if not result:
                    continue  # ssh skips the command when an earlier criterion failed
                hit = self.exec(expand(arg, tokens(o, host, p.original), False, f"{where}: Match exec"), where)
            elif name in ("command", "version"):
                raise SshConfigError(f"ssh_config {where}: Match {name} cannot be evaluated for nettune's connections "
                                     f"({'nettune runs many commands' if name == 'command' else 'which OpenSSH is meant is not known'}); "
                                     "write the block with Host or Match host")
            else:
                raise Bad(f"Unsupported Match attribute {name}")
            if hit == negate:
                result = False
        if attributes == 0:
            raise Bad("One or more attributes required for Match")
        return result

    def exec(self, cmd: str, where: str) -> bool:
        shown = redact(cmd)
        if not may_run():
            self.ev.pending.append(f"Match exec {shown!r} ({where}) not run, taken as not matching; {FLAG} runs it as ssh would")
            return False
        shell = os.environ.get("SHELL") or "/bin/sh"
        try:
            r = subprocess.run([shell, "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=EXEC_TIMEOUT)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise SshConfigError(f"ssh_config {where}: match exec {shown!r} error ({e})") from None
        if r.returncode < 0:
            raise SshConfigError(f"ssh_config {where}: match exec {shown!r} error (killed by signal {-r.returncode})")
        self.ev.ran.append(f"ran Match exec {shown!r} ({where}): exit {r.returncode}, {'matched' if r.returncode == 0 else 'not matched'}")
        return r.returncode == 0


def _on_local_network(cidrs: str) -> bool:
    import ipaddress  # noqa: PLC0415

    try:
        from pyroute2 import IPRoute  # noqa: PLC0415

        with IPRoute() as ipr:
            mine = [ipaddress.ip_address(a.get_attr("IFA_ADDRESS")) for a in ipr.get_addr()]
    except Exception:  # noqa: BLE001 - no netlink: no local network known
        mine = []
    try:
        nets = [(n.startswith("!"), ipaddress.ip_network(n.lstrip("!"), strict=False)) for n in cidrs.split(",")]
    except ValueError:
        raise Bad(f"invalid CIDR list {cidrs}") from None
    for addr in mine:
        hits = [neg for neg, n in nets if addr.version == n.version and addr in n]
        if hits and not any(hits):
            return True
    return False


def _printable(text: str) -> str:
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def canonical_host(name: str, opts: Options) -> str:
    """ssh's host name after the first pass: an address in its canonical form, a name
    lowercased and, with CanonicalizeHostname, completed from CanonicalDomains; with
    CanonicalizePermittedCNAMEs, a name the resolver calls by another (a CNAME, an /etc/hosts
    alias) that a rule allows is replaced by it, and a name that does not resolve is refused,
    as ssh.c (resolve_canonicalize, check_follow_cname) does."""
    numeric = is_numeric_address(name)
    if numeric is not None:
        return numeric
    name = name.lower()
    mode = opts.get("CanonicalizeHostname", 0)
    # ssh.c: `ProxyJump none` still counts as a jump here (its jump_host is set), `ProxyCommand none` does not
    direct = str(opts.get("ProxyCommand") or "none").lower() == "none" and opts.get("ProxyJump") is None
    if mode and (direct or mode == 2):
        found = _canonicalize(name, opts, direct)
        if found is not None:
            return found
    rules = [r for r in opts.get("CanonicalizePermittedCNAMEs") or [] if r.lower() != "none"]
    if rules and (direct or mode == 2):  # ssh looks the bare name up, to follow its CNAME
        cname = _canonname(name)
        if cname is None:
            if direct:
                raise SshConfigError(f'ssh: Could not resolve hostname {name} (CanonicalizePermittedCNAMEs makes ssh look it up before '
                                     "connecting, and it refuses a name that does not resolve)")
            return name
        return _follow_cname(name, cname, opts, direct)
    return name


def _canonicalize(name: str, opts: Options, direct: bool) -> str | None:
    """The canonical name, or None when none resolves (ssh's resolve_canonicalize)."""
    if name.endswith("."):
        cname = _canonname(name)
        return _follow_cname(name[:-1], cname, opts, direct) if cname is not None else _not_found(name, opts)
    if name.count(".") > int(opts.get("CanonicalizeMaxDots", 1)):
        return None
    for domain in opts.get("CanonicalDomains") or []:
        if domain.lower() == "none":
            break
        full = f"{name}.{domain}"
        cname = _canonname(full + ".")
        if cname is not None:
            return _follow_cname(full, cname, opts, direct)
    return _not_found(name, opts)


def _follow_cname(name: str, cname: str, opts: Options, direct: bool) -> str:
    """ssh's check_follow_cname: the resolver's name for `name` when a rule allows it."""
    mode = opts.get("CanonicalizeHostname", 0)
    if not cname or cname == name or not mode or (not direct and mode != 2):
        return name
    for rule in opts.get("CanonicalizePermittedCNAMEs") or []:
        source, _, target = rule.partition(":")
        if match_pattern_list(name, source.lower(), lower=True) == 1 and match_pattern_list(cname, target.lower(), lower=True) == 1:
            return cname
    return name


def _canonname(name: str) -> str | None:
    """The resolver's canonical name for `name` (lowercased), "" when it gives none; None
    when the name does not resolve."""
    try:
        got = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM, flags=socket.AI_CANONNAME)
    except (OSError, UnicodeError):
        return None
    return next((a[3] for a in got if a[3]), "").lower()


def _not_found(name: str, opts: Options) -> None:
    """Nothing resolved: ssh goes on with the name as it is (None), unless told not to."""
    if opts.get("CanonicalizeFallbackLocal", 1):
        return None
    raise SshConfigError(f"ssh: Could not resolve host \"{name}\" (CanonicalizeHostname with CanonicalizeFallbackLocal no: ssh refuses to connect)")
