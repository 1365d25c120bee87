"""`[target] kind = "ssh"`: real machines reached over SSH, inline or from an inventory.

    [target]
    kind = "ssh"
    inventory = "lab-hosts.toml"        # optional: [hosts.NAME] tables shared by many studies
    trust_on_first_use = false
    [target.hosts.pve]                  # inline hosts; a name also in the inventory
    address = "192.0.2.10"              # overrides only the fields given here
    role = "hypervisor"                 # sampled for CPU, never runs traffic

Relative paths (inventory; key and known_hosts inside an inventory) are resolved when
the file is loaded: the inventory against the study file's directory (or the current
directory), key/known_hosts in an inventory against the inventory's directory. The
validated model holds absolute paths and the merged hosts, so re-validating a dumped
model (plan.points.resolve) gives the same hosts.
"""
from __future__ import annotations

import ipaddress
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from .study_text import read_study_text
from .field_types import RoleHosts, Strict


HOST_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")  # dots: inventory and ssh_config names (pve1.example.com)
# DNS labels, plus '_' (names from /etc/hosts or an inventory: ssh and Ansible take them); never a leading '-'
DNS_NAME = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_-]{0,62})(\.[A-Za-z0-9_]([A-Za-z0-9_-]{0,62}))*\.?$")
# what OpenSSH accepts as a remote user (its ssh_valid_ruser): user@REALM and DOMAIN\user
# yes; a leading '-', control characters, quotes and shell punctuation no
USER_NAME = re.compile(r"^(?!-)(?!.*\s-)(?!.*\\$)[^\x00-\x1f\x7f'`\";&<>|(){}]{1,256}$")


def _check_address(v: str) -> str:
    try:
        return str(ipaddress.ip_address(v))
    except ValueError:
        pass
    if not DNS_NAME.match(v) or len(v) > 253:
        raise ValueError(f"{v!r} is neither an IP address nor a host name")
    return v


class SshReachSpec(Strict):
    """How a connection is made: shared by a host and each jump host on the way to it."""

    address: str | None = Field(default=None, description="IP address or DNS name; also what peers use to reach this host's server. Absent: looked up in ssh_config like `ssh NAME`.")
    user: str | None = Field(default=None, description="Login user (default: your local user name).")
    port: int = Field(default=22, ge=1, le=65535)
    key: str | None = Field(default=None, description="Private key file; default: ssh-agent, then ~/.ssh/id_*.")
    more_keys: list[str] = Field(default_factory=list, description="Set by nettune from ssh_config: the other identity files ssh offers after `key`, in its order (missing ones are skipped).")
    agent: bool | None = Field(default=None, description="Offer ssh-agent keys too (default: only when no key is given).")
    agent_path: str | None = Field(default=None, description="Set by nettune from ssh_config IdentityAgent: the agent socket to use instead of $SSH_AUTH_SOCK.")
    known_hosts: str | None = Field(default=None, description="known_hosts file to check the host key against (default ~/.ssh/known_hosts).")
    more_known_hosts: list[str] = Field(default_factory=list, description="Set by nettune from ssh_config: every other file ssh reads host keys from (UserKnownHostsFile, GlobalKnownHostsFile); missing ones are skipped.")
    trust_on_first_use: bool | None = Field(default=None, description="Per host (ssh_config StrictHostKeyChecking accept-new); default: the target's.")
    connect_timeout: float | None = Field(default=None, gt=0, description="Seconds (ssh_config ConnectTimeout); default: the target's.")
    local_commands: list[str] = Field(default_factory=list, description="Set by nettune: the commands (ssh_config Match exec) that ran to resolve this host, and what they decided.")
    unresolved: list[str] = Field(default_factory=list, description="Set by nettune: what was not run to resolve this host (a dry run runs nothing); such a host is not connected to.")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return None if v is None else _check_address(v)

    @field_validator("user")
    @classmethod
    def _user(cls, v: str | None) -> str | None:
        if v is not None and not USER_NAME.match(v):
            raise ValueError(f"{v!r} is not a valid user name")
        return v

    @field_validator("key", "known_hosts", "agent_path")
    @classmethod
    def _path(cls, v: str | None) -> str | None:
        if v is not None and ("\n" in v or "\0" in v or not v.strip()):
            raise ValueError(f"{v!r} is not a usable file path")
        return v


class SshHopSpec(SshReachSpec):
    """A jump host (OpenSSH ProxyJump) on the way to a host: connected first, host key checked."""

    name: str = Field(description="The hop as written (an ssh_config alias or an address).")
    address: str  # type: ignore[assignment]


class SshHostSpec(SshReachSpec):
    """One machine: where to connect, as whom, and what it is for."""

    sudo: bool = Field(default=False, description="Prefix every command with `sudo -n` (passwordless sudo required).")
    role: Literal["test", "hypervisor"] = Field(default="test", description='"hypervisor": CPU sampled during every test, never runs traffic.')
    interface: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:@-]{1,15}$", description="The test NIC (default device of interface knobs such as mtu, channels).")
    jump: list[SshHopSpec] = Field(default_factory=list, description='Jump host(s), OpenSSH ProxyJump syntax: "bastion" or "user@gw:2222,bastion"; each hop is looked up in ssh_config.')
    allow_reboot: bool = Field(default=False, description="nettune may reboot this host (boot-time knobs such as cmdline:mitigations); never allowed for this machine.")
    allow_vm_restart: bool = Field(default=False, description="This host is a VM that nettune may restart (pve_queues, libvirt_queues on its hypervisor); give its vmid or domain too.")
    allow_link_reset: bool = Field(default=False, description="nettune may change settings that bounce this host's link (mtu, channels, ring, offloads such as lro): its interface goes down and up.")
    vmid: int | None = Field(default=None, ge=100, le=999999999, description="Proxmox VE VMID of this host when it is a VM (pve_queues:VMID acts on it; `nettune run --preflight` reads its qm config: the NIC, its MAC against this host's interface, its vCPUs).")
    domain: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,63}$", description="libvirt domain name of this host when it is a VM (libvirt_queues:DOMAIN, libvirt_vcpupin:DOMAIN act on it).")
    reboot_timeout: float = Field(default=600.0, gt=0, le=7200, description="Seconds to wait for the host to answer over SSH again after a reboot.")
    override_boot_dropins: bool = Field(default=False, description="Boot-time knobs may edit a setting another package made (a /etc/default/grub.d drop-in, grubenv's tuned_params); journaled and put back like the rest.")
    resolved_from: str | None = Field(default=None, description="Set by nettune: the ssh_config file(s) this host was looked up in.")
    ignored: list[str] = Field(default_factory=list, description="Set by nettune: inventory variables that change how Ansible connects and that nettune does not honour (warned; names only, never values).")

    @field_validator("jump", mode="before")
    @classmethod
    def _jump(cls, v: Any) -> Any:
        if not isinstance(v, str):
            return v
        from .ssh_config import resolve_jump  # noqa: PLC0415 - the config reader: only for ssh targets

        # a jump written as text in an inventory checked alone: address hops (the target resolves ssh_config)
        return resolve_jump(v, None, use_config=False)


class SshTargetSpec(Strict, RoleHosts):
    """Real machines (VMs, servers, hypervisors) reached over SSH."""

    kind: Literal["ssh"]
    hosts: dict[str, SshHostSpec] = Field(default_factory=dict, description="[target.hosts.NAME] tables; merged over the inventory's.")
    inventory: str | None = Field(default=None, description="TOML file with [hosts.NAME] tables (same fields), or an Ansible inventory (INI or YAML), shared by many studies.")
    group: str | None = Field(default=None, description="With an Ansible inventory: only the hosts of this group (its children included).")
    ssh_config: str | None = Field(default=None, description="OpenSSH client config to look hosts up in (like `ssh -F`; default ~/.ssh/config).")
    trust_on_first_use: bool = Field(default=False, description="Accept and record the key of a host never seen before (never a changed key).")
    connect_timeout: float = Field(default=10.0, gt=0, description="Seconds to wait for each connection.")
    reconnect_timeout: float = Field(default=180.0, ge=0, le=3600, description="After a lost connection (a VM restarted by a knob, a network blip), keep trying this long before the test fails.")
    left_out: dict[str, str] = Field(default_factory=dict, description="Set by nettune: inventory hosts not reached over SSH (ansible_connection=local, ...), and why.")
    inventory_read: str | None = Field(default=None, description="Set by nettune: how the inventory was read (ansible-inventory, or nettune's reader, nothing run).")
    merged: bool = Field(default=False, description="Set by nettune: the inventory and ssh_config were read into `hosts`; validating this model again does not read them again.")

    @model_validator(mode="before")
    @classmethod
    def _merge_inventory(cls, data: Any, info: ValidationInfo) -> Any:
        if not isinstance(data, dict) or data.get("merged"):
            return data  # a dumped study validated again (plan.points.resolve): hosts are final
        # loaded here, not at import: the config and inventory readers cost every command start-up time
        from .ansible_inventory import is_ansible, read_ansible  # noqa: PLC0415
        from .ssh_words import SshConfigError  # noqa: PLC0415

        base = Path((info.context or {}).get("base_dir") or ".")
        data = dict(data)
        cfg = None
        if data.get("ssh_config"):
            cfg = _absolute(base, str(data["ssh_config"]))
            if not cfg.is_file():
                raise ValueError(f"ssh_config {cfg} does not exist; fix the path (it is read like `ssh -F PATH`)")
            data["ssh_config"] = str(cfg)
        own = data.get("hosts") or {}
        if not isinstance(own, dict):
            return data  # let field validation report the type error
        merged: dict[str, dict[str, Any]] = {}
        left_out: dict[str, str] = {}
        how = None
        if data.get("inventory"):
            path = _absolute(base, str(data["inventory"]))
            data["inventory"] = str(path)
            if is_ansible(path):
                merged, left_out, how = read_ansible(path, data.get("group"))
            elif data.get("group"):
                raise ValueError(f"group {data['group']!r}: groups come from an Ansible inventory (INI or YAML), not a TOML one")
            else:
                merged = {name: dict(fields) for name, fields in load_inventory(path).items()}
        elif data.get("group"):
            raise ValueError("group is set but there is no inventory; add inventory = \"hosts.ini\" (an Ansible inventory)")
        for name in [n for n in merged if not HOST_NAME.match(n) and n not in own]:
            # an inventory host the study cannot name (an IPv6 address as its name): left out with
            # the way to use it, not the whole study refused (a name in [target.hosts] still is)
            left_out[name] = (f"{name!r} is not a name nettune can give a host (letters, digits, '.', '-' or '_', at most 64): "
                              f"to use it, name it in the inventory and give the address apart (e.g. h1 ansible_host={name})")
            del merged[name]
        for name, fields in own.items():
            if name in left_out:
                raise ValueError(f"hosts.{name}: the inventory says {left_out[name]}; nettune reaches hosts over SSH (kind = \"local\" tests this machine)")
            merged[name] = merged.get(name, {}) | (dict(fields) if isinstance(fields, dict) else {})
        for name, fields in merged.items():
            try:
                merged[name] = _reach(name, fields, cfg)
            except SshConfigError as e:
                raise ValueError(f"hosts.{name}: {e}") from None
        return {**data, "hosts": merged, "left_out": left_out, "inventory_read": how, "merged": True}

    @model_validator(mode="after")
    def _check(self) -> "SshTargetSpec":
        if not self.hosts:
            why = "; ".join(f"{h}: {w}" for h, w in self.left_out.items())
            raise ValueError("no hosts: add [target.hosts.NAME] tables or an inventory file" + (f" (left out: {why})" if why else ""))
        for h in self.hosts:
            if not HOST_NAME.match(h):
                raise ValueError(f"host name {h!r}: use letters, digits, '.', '-' or '_' (at most 64)")
        for field in ("vmid", "domain"):  # one VM is one host
            seen: dict[Any, str] = {}
            for h, spec in self.hosts.items():
                v = spec.model_dump()[field]
                if v is not None and v in seen:
                    raise ValueError(f"hosts {seen[v]} and {h} both say {field} = {v!r}; a VM is one host")
                if v is not None:
                    seen[v] = h
        if not self.test_hosts:
            raise ValueError('every host has role = "hypervisor"; at least one must run tests')
        return self

    def reboot_refusal(self, hosts: tuple[str, ...]) -> str | None:
        """Why a boot-time knob on these hosts (all, when empty) cannot be set: one of them
        does not allow a reboot."""
        return self.disruption_refusal("reboot", "allow_reboot", hosts)

    def disruption_refusal(self, what: str, opt_in: str, hosts: tuple[str, ...]) -> str | None:
        """Why a change that causes `what` (a reboot, a VM restart, a link reset) on these
        hosts (all, when empty) cannot be made: one of them lacks the opt-in field."""
        for name in hosts or tuple(self.hosts):
            spec = self.hosts.get(name)
            if spec is not None and not spec.model_dump()[opt_in]:
                article = "an" if what[0] in "aeiou" else "a"
                return (f"needs {article} {what} of {name}, which does not allow one: add {opt_in} = true to [target.hosts.{name}] "
                        f"(inventory: {opt_in} = true; Ansible: nettune_{opt_in}=true)")
        return None

    def disruption_seconds(self, what: str, host: str) -> float:
        """The most the run waits for a reboot of `host` (its reboot_timeout) or for a
        restarted VM to answer again (reconnect_timeout): what the ETA counts for it."""
        if what == "reboot":
            spec = self.hosts.get(host)
            return float(spec.reboot_timeout) if spec is not None else max((h.reboot_timeout for h in self.hosts.values()), default=600.0)
        return float(self.reconnect_timeout)

    def vm_host(self, field: str, name: str) -> str | None:
        """The study host that is the VM `name` on its hypervisor (its `vmid` or `domain`
        field says so), or None."""
        for h, spec in self.hosts.items():
            v = spec.model_dump()[field]
            if v is not None and str(v) == name:
                return h
        return None


def _reach(name: str, fields: dict[str, Any], cfg: Path | None) -> dict[str, Any]:
    """A host's fields once ssh_config is applied: an Ansible host as Ansible's ssh command
    reaches it; a host with no address as `ssh NAME`; a host with an address as written
    (only its jump hosts looked up)."""
    from .ssh_config import resolve, resolve_jump  # noqa: PLC0415

    ssh = fields.pop("_ssh", None)
    if ssh is not None:
        cl, destination = ssh
        out = resolve(name, cfg, fields, cl, destination)
        out["resolved_from"] = f"inventory + {out['resolved_from']}"
        return out
    if not fields.get("address"):
        return resolve(name, cfg, fields)
    if isinstance(fields.get("jump"), str):
        fields["jump"] = resolve_jump(fields["jump"], cfg)
    return fields


def _absolute(base: Path, value: str) -> Path:
    path = Path(value).expanduser()
    return (path if path.is_absolute() else base / path).resolve()


def load_inventory(path: Path) -> dict[str, dict[str, Any]]:
    """[hosts.NAME] tables of an inventory file, each checked, paths made absolute."""
    if not path.exists():
        raise ValueError(f"inventory {path} does not exist (write one, or create it with `nettune lab up FILE --ssh --inventory {path}`)")
    text = read_study_text(path, "an inventory TOML file")  # UTF-8, size, directory: a SpecError naming it
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"inventory {path} is not valid TOML: {e}") from None
    except RecursionError:
        raise ValueError(f"inventory {path}: arrays or inline tables nested hundreds of levels deep") from None
    extra = set(data) - {"hosts", "comment"}
    if extra:
        raise ValueError(f"inventory {path}: unknown top-level key(s) {', '.join(sorted(extra))}; hosts go in [hosts.NAME] tables")
    hosts = data.get("hosts", {})
    if not isinstance(hosts, dict):
        raise ValueError(f"inventory {path}: 'hosts' must be tables [hosts.NAME]")
    out: dict[str, dict[str, Any]] = {}
    for name, fields in hosts.items():
        if not isinstance(fields, dict):
            raise ValueError(f"inventory {path}: hosts.{name} must be a table")
        fields = dict(fields)
        for k in ("key", "known_hosts"):
            if isinstance(fields.get(k), str):
                p = Path(fields[k]).expanduser()
                fields[k] = str(p if p.is_absolute() else (path.parent / p).resolve())
        try:
            SshHostSpec.model_validate(fields)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            where = ".".join(str(x) for x in first["loc"])
            raise ValueError(f"inventory {path}: hosts.{name}{'.' + where if where else ''}: {first['msg'].removeprefix('Value error, ')}") from None
        out[name] = fields
    return out
