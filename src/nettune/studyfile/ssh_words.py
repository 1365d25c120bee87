"""The small grammar of an OpenSSH client config, written from OpenSSH's own rules
(readconf.c, misc.c and match.c of openssh-portable, read at V_9_2_P1 and at the 10.x
head): how a line splits into a keyword and words, how `Host`/`Match` patterns match,
how `%h`-style tokens, `${VAR}` and `~` expand, and how times, ports and
`[user@]host[:port]` are read. Nothing here decides what a directive means
(ssh_keywords.py) or which blocks apply (ssh_config_read.py).

Text is handled as str decoded with surrogateescape, so a byte that is not UTF-8 (a
Latin-1 comment, a path) passes through unchanged, as ssh passes bytes.
"""
from __future__ import annotations

import os
import pwd
import re


class SshConfigError(ValueError):
    """What ssh would refuse, or nettune cannot honour: one line naming file, line and fix."""


WHITESPACE = " \t\r\n"


def split_keyword(line: str) -> tuple[str, str] | None:
    """(keyword, rest) of a config line as ssh reads it (trailing blanks cut, the keyword
    ends at a blank, a quote or one '='); None for a blank or comment line."""
    line = line.rstrip(WHITESPACE + "\f")
    rest = line.lstrip(WHITESPACE)
    if not rest or rest[0] == "#":
        return None
    if rest[0] == '"':  # a quoted keyword (ssh allows it): up to the closing quote
        end = rest.find('"', 1)
        if end < 0:
            return None
        keyword, rest = rest[1:end], rest[end + 1:].lstrip(WHITESPACE)
    else:
        m = re.match(r'[^ \t\r\n"=]*', rest)
        keyword = m.group(0) if m else ""
        rest = rest[len(keyword):]
        if rest[:1] == '"':
            pass  # the keyword ends at a quote, which starts the value
        else:
            rest = rest.lstrip(WHITESPACE)
            if rest[:1] == "=":
                rest = rest[1:].lstrip(WHITESPACE)
    if not keyword or keyword[0] == "#":
        return None
    return keyword.lower(), rest


def argv_split(text: str) -> list[str] | None:
    """The words of a value as ssh's argv_split makes them: blanks separate, quotes group,
    \\ escapes a quote, a backslash or (unquoted) a blank, and a word starting with '#'
    ends the line. None when a quote is not closed."""
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
            continue
        if text[i] == "#":
            break
        quote, word = "", []
        while i < n:
            c = text[i]
            if c == "\\" and i + 1 < n and (text[i + 1] in "'\"\\" or (not quote and text[i + 1] == " ")):
                word.append(text[i + 1])
                i += 2
                continue
            if not quote and c in " \t":
                break
            if not quote and c in "\"'":
                quote = c
            elif quote and c == quote:
                quote = ""
            else:
                word.append(c)
            i += 1
        if quote:
            return None
        words.append("".join(word))
    return words


def strdelim(text: str) -> tuple[str | None, str]:
    """One word of a `Match` line as OpenSSH 9.2 reads it (blanks, a quoted run, or one
    '=' separate words); (None, ...) when a quote is not closed."""
    text = text.lstrip(WHITESPACE)
    if text.startswith('"'):
        end = text.find('"', 1)
        if end < 0:
            return None, ""
        return text[1:end], text[end + 1:].lstrip(WHITESPACE)
    m = re.match(r'[^ \t\r\n"=]*', text)
    word = m.group(0) if m else ""
    rest = text[len(word):]
    if rest.startswith("="):
        rest = rest[1:]
    return word, rest.lstrip(WHITESPACE)


def match_pattern(s: str, pattern: str) -> bool:
    """ssh's wildcard match: '*' any run, '?' one character; no escapes, no classes."""
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, s, re.DOTALL) is not None


def match_pattern_list(s: str, patterns: str, lower: bool = False) -> int:
    """1 if a comma-separated pattern matches, -1 if a negated one (!pat) does, else 0."""
    positive = 0
    for sub in patterns.split(","):
        negated = sub.startswith("!")
        sub = sub[1:] if negated else sub
        if lower:
            sub = sub.lower()
        if match_pattern(s, sub):
            if negated:
                return -1
            positive = 1
    return positive


def match_hostname(host: str, patterns: str) -> bool:
    """`Match host`/`originalhost`: the name lowercased against lowercased patterns."""
    return match_pattern_list(host.lower(), patterns, lower=True) == 1


_TIME_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
INT_MAX = 2**31 - 1


def convtime(s: str) -> int | None:
    """'90', '5m', '1h30m' -> seconds; None when ssh would call it an invalid time."""
    if not s:
        return None
    total = 0
    for m in re.finditer(r"(\d+)([sSmMhHdDwW]?)|(.)", s):
        if m.group(3) is not None:
            return None
        secs = int(m.group(1)) * _TIME_UNITS[m.group(2).lower()]
        total += secs
        if total > INT_MAX:
            return None
    return total


def a2port(s: str) -> int | None:
    """A port number 0..65535, or a service name from /etc/services; None if neither."""
    if s.isascii() and s.isdigit():
        return int(s) if int(s) <= 65535 else None
    import socket  # noqa: PLC0415

    try:
        return socket.getservbyname(s, "tcp")
    except (OSError, UnicodeError):
        return None


def atoi(s: str | None) -> int | None:
    """A decimal integer as ssh's atoi_err accepts (no sign games, within int)."""
    if s is None or not re.fullmatch(r"-?\d+", s) or abs(int(s)) > INT_MAX:
        return None
    return int(s)


def parse_user_host_port(s: str) -> tuple[str | None, str, int | None] | None:
    """[user@]host[:port] (host may be [v6addr]); None when ssh would reject it."""
    user = None
    if "@" in s:
        user, _, s = s.rpartition("@")
        if not user:
            return None
    if s.startswith("["):
        end = s.find("]")
        if end < 0:
            return None
        host, rest = s[: end + 1], s[end + 1:]
    else:
        m = re.match(r"[^:/]*", s)
        host, rest = (m.group(0) if m else ""), s[len(m.group(0)) if m else 0:]
    if rest and rest[0] != ":":
        return None
    port_text = rest[1:]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host:
        return None
    port = None
    if port_text:
        port = a2port(port_text)
        if not port:
            return None
    return user, host, port


def parse_ssh_uri(s: str) -> tuple[str | None, str, int | None] | None | bool:
    """ssh://[user@]host[:port]: False when s is not such a URI, None when it is a bad one."""
    if not s.startswith("ssh://"):
        return False
    rest = s[6:]
    if "/" in rest:  # a path is not allowed in a jump host
        return None
    user = None
    if "@" in rest:
        user, _, rest = rest.rpartition("@")
        from urllib.parse import unquote  # noqa: PLC0415

        user = unquote(user)
    got = parse_user_host_port(rest)
    if got is None:
        return None
    return user, got[1], got[2]


def passwd_home() -> str:
    """The home ssh uses for '~' and %d: the passwd entry's, not $HOME."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return os.path.expanduser("~")


def local_user() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        import getpass  # noqa: PLC0415

        return getpass.getuser()


def tilde_expand(path: str) -> str:
    """~ and ~/x from the passwd home, ~user/x from that user's; otherwise unchanged."""
    if not path.startswith("~"):
        return path
    head, sep, tail = path[1:].partition("/")
    if head:
        try:
            home = pwd.getpwnam(head).pw_dir
        except KeyError:
            raise SshConfigError(f"{path}: no such user {head!r}") from None
    else:
        home = passwd_home()
    tail = tail.lstrip("/")
    return home.rstrip("/") + "/" + tail if (sep or head) else home.rstrip("/") + "/"


def expand(text: str, tokens: dict[str, str] | None, dollar: bool, what: str) -> str:
    """%X tokens (when given) and ${VAR} (when dollar) as ssh's percent_dollar_expand:
    an unknown token or an unset variable is an SshConfigError naming `what`."""
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if dollar and text.startswith("${", i):
            end = text.find("}", i + 2)
            if end < 0:
                raise SshConfigError(f"{what}: environment variable {text[i:]!r} has no closing '}}'")
            var = text[i + 2:end]
            if not var:
                raise SshConfigError(f"{what}: an empty ${{}}")
            if var not in os.environ:
                raise SshConfigError(f"{what}: environment variable ${{{var}}} is not set (ssh refuses the configuration: "
                                     "\"invalid environment variable expansion\"); set it or write the value")
            out.append(os.environ[var])
            i = end + 1
            continue
        if c != "%" or tokens is None:
            out.append(c)
            i += 1
            continue
        if i + 1 >= len(text):
            raise SshConfigError(f"{what}: a '%' at the end (write %% for a percent sign)")
        t = text[i + 1]
        if t == "%":
            out.append("%")
        elif t in tokens:
            out.append(tokens[t])
        else:
            raise SshConfigError(f"{what}: unknown token %{t} (ssh: \"unknown key %{t}\")")
        i += 2
    return "".join(out)


def is_numeric_address(host: str) -> str | None:
    """The canonical text of an IP address as ssh prints it (127.1 -> 127.0.0.1), or None."""
    import ipaddress  # noqa: PLC0415
    import socket  # noqa: PLC0415

    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if re.fullmatch(r"[0-9.xXa-fA-F]+", host) and any(ch.isdigit() for ch in host):
        try:  # inet_aton's shorthand forms (127.1, 0x7f.1), as getaddrinfo(AI_NUMERICHOST) takes them
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return None
    return None
