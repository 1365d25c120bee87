"""What `ssh DESTINATION` would use, computed as ssh.c does after reading its options:
the command line first (`-l`, `-p`, `-i`, `-J`, `-o`: they win), the config files (first
value wins), the final pass, then ssh's defaults and the expansions of `~`, `%h`-style
tokens and `${VAR}` in file names. `ssh -G` prints the same values (compared in
tests/test_ssh_conformance.py)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .local_commands import redact
from .ssh_config_read import SYSTEM_CONFIG, Evaluation, Pass, Reader, canonical_host, tokens
from .ssh_keywords import KEYWORDS, Bad, Options, parse_jump
from .ssh_words import SshConfigError, argv_split, expand, local_user, passwd_home, split_keyword, tilde_expand

DEFAULT_IDENTITIES = ["~/.ssh/id_rsa", "~/.ssh/id_ecdsa", "~/.ssh/id_ecdsa_sk", "~/.ssh/id_ed25519", "~/.ssh/id_ed25519_sk",
                      "~/.ssh/id_xmss", "~/.ssh/id_dsa"]  # ssh's order (readconf.c fill_default_options)
DEFAULT_USER_KNOWN_HOSTS = ["~/.ssh/known_hosts", "~/.ssh/known_hosts2"]
DEFAULT_GLOBAL_KNOWN_HOSTS = ["/etc/ssh/ssh_known_hosts", "/etc/ssh/ssh_known_hosts2"]
_COMMAND_LINE_REFUSED = {"host", "match", "include"}


@dataclass
class Resolution:
    destination: str  # as typed
    hostname: str  # where ssh connects (canonical: lowercased name or numeric address)
    user: str
    port: int
    identity_files: list[str]  # expanded, in the order ssh offers them
    identities_explicit: bool  # named by the config or command line (else ssh's defaults)
    identities_only: bool
    identity_agent: str | None  # None: $SSH_AUTH_SOCK; "none"; or a socket path
    user_known_hosts: list[str]  # expanded; [] for `none`
    global_known_hosts: list[str]
    strict: str  # yes | no | ask | accept-new
    connect_timeout: int | None  # seconds; None: no limit of ssh's own
    jump: str | None  # ProxyJump as ssh keeps it (`-J` wins over the config)
    proxy_command: str | None
    options: Options
    evaluation: Evaluation
    config: str  # the file(s) read, for messages
    unsupported: list[str] = field(default_factory=list)

    @classmethod
    def of_jump(cls, jump: str) -> "Resolution":
        """A host known only by the jump hosts before it (a study's own `jump = "..."`)."""
        return cls(destination="(the study's host)", hostname="", user="", port=22, identity_files=[], identities_explicit=False,
                   identities_only=False, identity_agent=None, user_known_hosts=[], global_known_hosts=[], strict="ask",
                   connect_timeout=None, jump=jump, proxy_command=None, options=Options(), evaluation=Evaluation(), config="")


@dataclass
class CommandLine:
    """What `ssh` is given before the destination, in order (Ansible builds such a line):
    ("o", "Key=Value"), ("l", user), ("p", port), ("i", key file), ("J", jump hosts)."""

    args: list[tuple[str, str]] = field(default_factory=list)
    config: Path | None = None  # -F

    def first(self, flag: str, value: str) -> None:
        """A value that must win over everything given so far (a study's own field)."""
        self.args.insert(0, (flag, value))


def _command_line(cl: CommandLine, opts: Options) -> None:
    """ssh's options in argv order; each one only sets what is still unset, as in ssh."""
    from .ssh_words import a2port, match_pattern_list  # noqa: PLC0415

    for flag, value in cl.args:
        where = f"ssh -{flag} {value}"
        try:
            if flag == "l":
                opts.v.setdefault("User", value)
            elif flag == "p":
                port = a2port(value)
                if not port:
                    raise Bad(f"Bad port '{value}'")
                opts.v.setdefault("Port", port)
            elif flag == "i":
                if not os.path.exists(tilde_expand(value)):
                    continue  # ssh.c: "Warning: Identity file ... not accessible", and the file is not used
                if value not in opts.identity_files:
                    opts.identity_files.append(value)
            elif flag == "J":
                if "ProxyJump" in opts.v:
                    raise Bad("Only a single -J option is permitted")
                if "ProxyCommand" in opts.v:
                    raise Bad("Cannot specify -J with ProxyCommand")
                parse_jump(value)
                opts.v["ProxyJump"] = value.split("#", 1)[0].rstrip()
            else:
                got = split_keyword(value)
                if got is None:
                    continue
                kw, rest = got
                entry = KEYWORDS.get(kw)
                if kw in _COMMAND_LINE_REFUSED:
                    raise Bad(f"{kw.capitalize()} directive not supported as a command-line option")
                if entry is None:
                    ignored = opts.get("IgnoreUnknown")
                    if ignored is not None and match_pattern_list(kw, ignored, lower=True) == 1:
                        continue
                    raise Bad(f"Bad configuration option: {kw}")
                words = argv_split(rest)
                if words is None:
                    raise Bad("invalid quotes")
                entry[1](opts, entry[0], words, rest, True)
                if words:
                    raise Bad(f"keyword {kw} extra arguments at end of line")
        except Bad as e:
            raise SshConfigError(f"{redact(where)}: {e} (ssh refuses this command line)") from None


def evaluate(destination: str, config: Path | None, cl: CommandLine | None = None) -> Resolution:
    """Everything ssh decides for `ssh [command line] destination` before it connects."""
    cl = cl or CommandLine()
    config = cl.config or config
    opts, ev = Options(), Evaluation()
    _command_line(cl, opts)
    reader = Reader(opts, ev)
    p = Pass(host=destination, original=destination)
    read_files(reader, config, p)
    host = destination
    if opts.get("Hostname") is not None:
        host = expand(str(opts.get("Hostname")), {"h": destination}, False, f"{opts.where('Hostname')}: Hostname {opts.get('Hostname')}")
    host = canonical_host(host, opts)
    if opts.get("CanonicalizeHostname", 0):
        p.want_final = True
    if p.want_final:
        opts.v["Hostname"] = host
        read_files(reader, config, Pass(host=host, original=destination, final=True))
    return _defaults(destination, host, opts, ev, config)


def read_files(reader: Reader, config: Path | None, p: Pass) -> None:
    if config is not None:
        if str(config).lower() == "none":
            return
        if not reader.read(config, p, user_conf=True, check_perm=False):
            raise SshConfigError(f"ssh_config {config}: Can't open user config file: No such file or directory")
        return
    reader.read(Path(passwd_home()) / ".ssh" / "config", p, user_conf=True, check_perm=True)
    reader.read(SYSTEM_CONFIG, p, user_conf=False, check_perm=False)


def _defaults(destination: str, host: str, opts: Options, ev: Evaluation, config: Path | None) -> Resolution:
    where = str(config) if config is not None else f"{Path(passwd_home()) / '.ssh' / 'config'} + {SYSTEM_CONFIG}"
    user = str(opts.get("User") or local_user())
    port = int(opts.get("Port") or 22)
    opts.v.setdefault("User", user)
    opts.v.setdefault("Port", port)
    tok = tokens(opts, host, destination)
    tok["k"] = str(opts.get("HostKeyAlias") or destination)  # ssh.c: in file names, the destination as typed (Match exec: the host)
    explicit = bool(opts.identity_files)
    files = []
    for f in opts.identity_files or DEFAULT_IDENTITIES:
        at = opts.origin.get(f"IdentityFile:{f}", "")
        files.append(expand(tilde_expand(f), tok, True, f"{'ssh_config ' + at + ': ' if at else ''}IdentityFile {f}"))
    ukh = opts.get("UserKnownHostsFile") or DEFAULT_USER_KNOWN_HOSTS
    if ukh and ukh[0].lower() == "none":
        ukh = []
    gkh = opts.get("GlobalKnownHostsFile") or DEFAULT_GLOBAL_KNOWN_HOSTS
    if gkh and gkh[0].lower() == "none":
        gkh = []
    agent = opts.get("IdentityAgent")
    if agent is not None and agent.lower() not in ("none", "ssh_auth_sock"):
        agent = expand(tilde_expand(_legacy_env(agent)), tok, True, f"{opts.where('IdentityAgent')}: IdentityAgent {agent}")
    elif agent is not None and agent.lower() == "ssh_auth_sock":
        agent = None
    jump = opts.get("ProxyJump")
    if jump is not None and jump.lower() != "none" and jump.split("#", 1)[0].strip().lower() == "none":
        raise SshConfigError(f"{opts.where('ProxyJump')}: ProxyJump {jump}: OpenSSH 9.2 takes 'none' followed by a comment as a "
                             "jump host named 'none' (`ssh -G` shows `proxyjump none`), newer ones may not; nettune cannot tell "
                             "which is meant: remove the comment (no jump host), or name the jump host")
    if jump is not None and jump.lower() == "none":
        jump = None
    command = opts.get("ProxyCommand")
    if command is not None and command.lower() == "none":
        command = None
    if jump is not None:
        hops = parse_jump(jump)
        juser, jhost, jport = hops[-1]
        if jhost == host and (jport or 22) == port and (juser or user) == user:
            raise SshConfigError(f"ssh {destination}: jumphost loop via {jhost} (ssh refuses it)")
    timeout = opts.get("ConnectTimeout")
    return Resolution(
        destination=destination, hostname=host, user=user, port=port, identity_files=files, identities_explicit=explicit,
        identities_only=bool(opts.get("IdentitiesOnly", 0)), identity_agent=agent,
        user_known_hosts=[expand(tilde_expand(f), tok, True, f"{opts.where('UserKnownHostsFile')}: UserKnownHostsFile {f}") for f in ukh],
        global_known_hosts=[tilde_expand(f) for f in gkh], strict=str(opts.get("StrictHostKeyChecking") or "ask"),
        connect_timeout=None if timeout in (None, -1, 0) else int(timeout), jump=jump, proxy_command=command,
        options=opts, evaluation=ev, config=where, unsupported=list(opts.unsupported))


def _legacy_env(value: str) -> str:
    """IdentityAgent $NAME (the old form): that variable's value."""
    if value.startswith("$") and not value.startswith("${"):
        if value[1:] not in os.environ:
            raise SshConfigError(f"IdentityAgent {value}: the environment variable is not set")
        return os.environ[value[1:]]
    return value
