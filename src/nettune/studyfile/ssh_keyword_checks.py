"""ssh's checks of the values of the keywords that have a grammar of their own (forwardings,
environment names, escape character, IPQoS, RekeyLimit, masks, tunnel devices, agent paths,
AddKeysToAgent, canonical domains and CNAME rules, PermitRemoteOpen, ControlPersist), written
from readconf.c: a value ssh rejects is rejected with ssh's words."""
from __future__ import annotations

import os
import re

from .ssh_options import FLAG, STATES, Bad, Options, one, time_value
from .ssh_words import a2port, convtime

_IPQOS = {"none", "af11", "af12", "af13", "af21", "af22", "af23", "af31", "af32", "af33", "af41", "af42", "af43",
          "cs0", "cs1", "cs2", "cs3", "cs4", "cs5", "cs6", "cs7", "ef", "le", "lowdelay", "throughput", "reliability"}


def forward(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words)
    if name == "LocalForward" and (not words or words[0] == ""):
        raise Bad("Missing target argument.")
    second = words.pop(0) if name != "DynamicForward" and words else None
    for spec in filter(None, (arg, second)):
        if any(v not in os.environ for v in re.findall(r"\$\{([^}]*)\}", spec)):
            raise Bad("Bad forwarding specification.")  # ssh expands ${VAR} in a forwarded socket path when it reads the line
        if "/" not in spec and not re.fullmatch(r"(\[[^\]]*\]|[^:\[\]]*:)*[^:\[\]]*", spec):
            raise Bad("Bad forwarding specification.")
    if active:
        o.forwards.append((name, " ".join(filter(None, (arg, second)))))

def send_env(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    for arg in words:
        if arg == "" or "=" in arg:
            raise Bad("Invalid environment name.")
        if active:
            o.send_env.append(arg)
    words.clear()

def set_env(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    for arg in words:
        if "=" not in arg:
            raise Bad("Invalid SetEnv.")
    o.keep(name, list(words), active)
    words.clear()

def escape(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words)
    if not (arg == "none" or len(arg) == 1 or (len(arg) == 2 and arg[0] == "^" and 64 <= ord(arg[1]) < 128)):
        raise Bad("Bad escape character.")
    o.keep(name, arg, active)

def ipqos(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    args = [words.pop(0) if words else None]
    if words:
        args.append(words.pop(0))
    for arg in args:
        if arg is None or not (arg.lower() in _IPQOS or re.fullmatch(r"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)", arg) and int(arg, 0) <= 255):
            raise Bad(f"Bad IPQoS value: {arg}")
    o.keep(name, args, active)

def rekey(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words, "Missing argument.")
    if arg != "default":
        m = re.fullmatch(r"(\d+)([KMGkmg]?)", arg)
        if not m:
            raise Bad(f"Bad number '{arg}': Invalid argument")
        n = int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]
        if 0 < n < 16:
            raise Bad("RekeyLimit too small")
    if words:
        if words[0] == "none":
            words.pop(0)
        else:
            time_value(o, "RekeyInterval", words, rest, active)
    o.keep(name, arg, active)

def mask(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words, "Missing StreamLocalBindMask argument.")
    m = re.match(r"[0-7]+", arg)
    if not m or int(m.group(0), 8) > 0o777:
        raise Bad("Bad mask.")
    o.keep(name, arg, active)

def tundev(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words)
    for part in arg.split(":", 1):
        if not (part.lower() == "any" or (part.isdigit() and int(part) <= 0x7fffffff - 2)):
            raise Bad("Bad tun device.")
    o.keep(name, arg, active)

def agent_path(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    """IdentityAgent (and ForwardAgent given a path): ${VAR} must be set even where the
    block does not apply, a legacy $VAR must be a valid name (ssh checks both at parse)."""
    arg = one(words)
    if name == "ForwardAgent" and arg.lower() in FLAG:
        o.keep(name, FLAG[arg.lower()], active)
        return
    for var in re.findall(r"\$\{([^}]*)\}", arg):
        if not var or var not in os.environ:
            raise Bad(f"Invalid environment expansion {arg}.")
    if arg.startswith("$") and not arg.startswith("${") and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", arg[1:]):
        raise Bad(f"Invalid environment name {arg}.")
    o.keep(name, arg, active)

def add_keys(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = words.pop(0) if words else None
    arg2 = words.pop(0) if words else None
    value = STATES["yesnoaskconfirm"].get((arg or "").lower())
    if value == 3 and arg2 is not None:
        if convtime(arg2) is None:
            raise Bad("invalid time value.")
    elif value is None and arg2 is None:
        if arg is None or convtime(arg) is None:
            raise Bad("unsupported option")
    elif value is None or arg2 is not None:
        raise Bad("unsupported option")
    o.keep(name, arg, active)

def domains(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    for i, arg in enumerate(words):
        if arg == "":
            raise Bad(f"keyword {name} empty argument")
        if arg.lower() == "none" and (i > 0 or len(words) > 1):
            raise Bad(f'keyword {name} "none" argument must appear alone.')
        if arg.lower() != "none" and (not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]*", arg) or ".." in arg):
            raise Bad(f'name "{arg}" contains invalid characters')
    o.keep(name, list(words), active)
    words.clear()

def cnames(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    for i, arg in enumerate(words):
        if arg.lower() == "none":
            if i > 0 or len(words) > 1:
                raise Bad(f'keyword {name} "none" argument must appear alone.')
        elif arg != "*" and (":" not in arg or arg.endswith(":")):
            raise Bad(f'Invalid permitted CNAME "{arg.lower()}"')
    o.keep(name, list(words), active)
    words.clear()

def remote_open(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    if not words:
        raise Bad(f"missing {name} specification")
    for i, arg in enumerate(words):
        if arg.lower() in ("none", "any"):
            if i > 0 or len(words) > 1:
                raise Bad(f'keyword {name} "{arg}" argument must appear alone.')
            continue
        host, sep, port = arg.rpartition(":") if not arg.startswith("[") else (arg[: arg.find("]") + 1], ":", arg[arg.find("]") + 2:])
        if not sep or not host or (port != "*" and not a2port(port)):
            raise Bad(f"bad port number in {name}")
    o.keep(name, list(words), active)
    words.clear()

def persist(o: Options, name: str, words: list[str], rest: str, active: bool) -> None:
    arg = one(words, "Missing ControlPersist argument.")
    if arg not in ("yes", "true", "no", "false") and convtime(arg) is None:
        raise Bad("Bad ControlPersist argument.")
    o.keep(name, arg, active)
