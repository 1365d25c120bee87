"""An Ansible inventory as a whole, as `ansible-inventory --list` gives it: the group tree
reconciled as Ansible reconciles it (groups with no parent under `all`, hosts in no group in
`ungrouped`), group depths, and each host's variables in Ansible's default precedence:
`all`'s, every other group of the host sorted by (depth, ansible_group_priority, name), the
group_vars/ files in that order, the host's own variables, its host_vars/ files."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .ansible_static import VAULT, YAML_EXTS, Inventory, InventoryError, Vaulted, load_yaml, read_source


def vars_files(base: Path, kind: str, name: str) -> list[Path]:
    """group_vars/NAME or host_vars/NAME beside the inventory: NAME, NAME.yml/.yaml/.json,
    or the directory NAME/ (its files, sorted, recursively), as Ansible finds them."""
    for ext in YAML_EXTS:
        p = base / kind / f"{name}{ext}"
        if p.is_dir():
            return _dir_files(p)
        if p.exists():
            return [p]
    return []


def _dir_files(d: Path) -> list[Path]:
    out: list[Path] = []
    for name in sorted(os.listdir(d)):
        if name.startswith(".") or name.endswith("~"):
            continue
        p, ext = d / name, os.path.splitext(name)[1]
        if p.is_dir() and not ext:
            out += _dir_files(p)
        elif p.is_file() and ext in YAML_EXTS:
            out.append(p)
    return out


def load_vars(files: list[Path]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in files:
        data = f.read_bytes()
        if data.startswith(VAULT.encode()):
            out[f"(vault-encrypted file {f})"] = Vaulted(str(f))
            continue
        got = load_yaml(data.decode("utf-8", "surrogateescape"), str(f))
        if got is None:
            continue
        if not isinstance(got, dict):
            raise InventoryError(f"{f}: variables must be a mapping")
        out.update(got)
    return out



def read_inventory(path: Path) -> Inventory:
    inv = Inventory()
    read_source(inv, path)
    for name in list(inv.groups):  # a group with no parent is a child of all (ungrouped too)
        if name == "ungrouped" or (name != "all" and not any(name in g["children"] for g in inv.groups.values())):  # Ansible: all > ungrouped, always
            inv.add_child("all", name)
    # Ansible's reconcile_inventory: a host in `ungrouped` and in any other group, counting the
    # groups above its own (so also above `ungrouped` itself, when an inventory makes it a
    # child), leaves `ungrouped`; one left in no group is gone from the inventory
    ungrouped = inv.groups["ungrouped"]["hosts"]
    for h in list(inv.hosts):
        gs = set(groups_of(inv, h)) - {"all"}
        if "ungrouped" in gs:
            if gs - {"ungrouped"} and h in ungrouped:
                ungrouped.remove(h)
                if not any(h in body["hosts"] for body in inv.groups.values()):
                    del inv.hosts[h]
                else:
                    inv.var_groups[h] = _leave(inv, gs | {"all"}, "ungrouped")
        elif not gs:
            ungrouped.append(h)
    return inv


def _leave(inv: Inventory, groups: set[str], group: str) -> set[str]:
    """Ansible's Host.remove_group: the group goes, and so does each group above it (all
    excepted) that no group left has above it; the host's variables then come from the
    groups left only, though it is still listed in the groups it was written in."""
    groups.discard(group)
    above = lambda g: set(groups_of_group(inv, g)) - {g}  # noqa: E731
    for old in sorted(above(group) - {"all"}):
        if old in groups and not any(old in above(c) for c in groups):
            _leave(inv, groups, old)
    return groups


def groups_of_group(inv: Inventory, group: str) -> list[str]:
    """The group and every group above it."""
    out, todo = {group}, [group]
    while todo:
        g = todo.pop()
        for p, body in inv.groups.items():
            if g in body["children"] and p not in out:
                out.add(p)
                todo.append(p)
    return sorted(out)


def depths(inv: Inventory) -> dict[str, int]:
    """all = 0; a group is one deeper than its deepest parent (Ansible's Group.depth)."""
    parents: dict[str, list[str]] = {g: [] for g in inv.groups}
    for g, body in inv.groups.items():
        for c in body["children"]:
            parents.setdefault(c, []).append(g)
    memo: dict[str, int] = {"all": 0}

    def of(g: str, seen: frozenset[str]) -> int:
        if g not in memo:
            memo[g] = 1 + max((of(p, seen | {g}) for p in parents.get(g, []) if p not in seen), default=-1)
        return memo[g]

    return {g: of(g, frozenset()) for g in inv.groups}


def groups_of(inv: Inventory, host: str) -> list[str]:
    """Every group the host is in, directly or through children (all included)."""
    direct = [g for g, body in inv.groups.items() if host in body["hosts"]]
    return sorted({a for g in direct for a in groups_of_group(inv, g)} | {"all"})


def host_vars(inv: Inventory, path: Path, host: str, depth: dict[str, int]) -> dict[str, Any]:
    base = path if path.is_dir() else path.parent
    groups = sorted((g for g in inv.var_groups.get(host, groups_of(inv, host)) if g != "all"), key=lambda g: (depth[g], inv.groups[g]["priority"], g))
    merged: dict[str, Any] = dict(inv.groups["all"]["vars"])
    for g in groups:
        merged.update(inv.groups[g]["vars"])
    merged.update(load_vars(vars_files(base, "group_vars", "all")))
    for g in groups:
        merged.update(load_vars(vars_files(base, "group_vars", g)))
    merged.update(inv.hosts[host])
    merged.update(load_vars(vars_files(base, "host_vars", host)))
    return merged


def static_list(path: Path) -> dict[str, Any]:
    """The inventory as `ansible-inventory -i PATH --list` prints it (every host in
    _meta.hostvars, even one without variables)."""
    inv = read_inventory(path)
    depth = depths(inv)
    out: dict[str, Any] = {"_meta": {"hostvars": {h: host_vars(inv, path, h, depth) for h in inv.hosts}}}
    for g, body in inv.groups.items():
        listed = {k: v for k, v in (("hosts", body["hosts"] if g != "all" else []), ("children", body["children"])) if v}
        if listed:
            out[g] = listed
    return out
