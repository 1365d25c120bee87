"""A directory or tarball someone sent, read as a tree of files without trusting it.

A sosreport (a directory, or a .tar.xz/.tar.gz of one) and a nettune capture are read
through this: nothing is extracted to disk, member names with `..` or absolute paths are
refused, symbolic links (a sosreport keeps /proc/net -> self/net, /sys/class/net/IF ->
../../devices/...) are followed only inside the tree, and every file is read up to a size
limit. A tarball is read once, front to back (xz cannot seek), keeping only the files a
doctor check can use.
"""
from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
import tarfile
from pathlib import Path

from ..errors import NettuneError

MAX_FILE = 16 << 20  # no file doctor reads is near this; a larger one is skipped, not truncated
MAX_TOTAL = 512 << 20
# the parts of a sosreport doctor reads (everything else of a tarball is skipped unread)
KEEP = re.compile(r"^(nettune-capture\.json|hostname|uname|lspci|dmidecode|version\.txt|proc/(?!\d+/(?!net/))|proc/\d+/net/|sys/(?!fs/|kernel/|module/|firmware/)"
                  r"|sos_commands/(networking|kernel|hardware|processor|tuned|host|pci|numa|systemd/systemd-detect-virt|date)"
                  r"|var/log/(kern\.log|messages|dmesg)$|etc/hostname$|run/systemd/container$)")


class Tree:
    """Regular files ({name: bytes}) and symbolic links ({name: target}) under one root."""

    def __init__(self, label: str):
        self.label = label
        self.files: dict[str, bytes] = {}
        self.links: dict[str, str] = {}
        self.dirs: set[str] = set()

    def _add_dirs(self, name: str) -> None:
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self.dirs.add("/".join(parts[:i]))

    def resolve(self, name: str, hops: int = 0) -> str | None:
        """The name with every link on its way followed (inside the tree); None if a link
        leaves the tree or loops."""
        if hops > 40:
            return None
        parts = [p for p in name.strip("/").split("/") if p and p != "."]
        done: list[str] = []
        for i, part in enumerate(parts):
            if part == "..":
                if not done:
                    return None
                done.pop()
                continue
            cur = "/".join(done + [part])
            if cur in self.links:
                target = self.links[cur]
                base = "" if target.startswith("/") else "/".join(done)
                rest = "/".join(parts[i + 1:])
                return self.resolve(posixpath.join(base, target.lstrip("/"), rest) if rest else posixpath.join(base, target.lstrip("/")), hops + 1)
            done.append(part)
        return "/".join(done)

    def text(self, name: str) -> str | None:
        real = self.resolve(name)
        if real is None or real not in self.files:
            return None
        return self.files[real].decode("utf-8", "replace")

    def is_dir(self, name: str) -> bool:
        real = self.resolve(name)
        return real is not None and (real in self.dirs or real == "")

    def listdir(self, name: str) -> list[str]:
        real = self.resolve(name)
        if real is None:
            return []
        prefix = real + "/" if real else ""
        names = {n[len(prefix):].split("/", 1)[0] for n in (*self.files, *self.links, *self.dirs) if n.startswith(prefix) and n != real}
        return sorted(n for n in names if n)

    def glob(self, pattern: str) -> list[str]:
        """Names (as asked, links not resolved in them) matching a glob, one path component
        per `*` as the shell matches them."""
        parts = pattern.strip("/").split("/")
        found = [""]
        for part in parts:
            nxt = []
            for base in found:
                if any(c in part for c in "*?["):
                    nxt += [posixpath.join(base, n) if base else n for n in self.listdir(base) if fnmatch.fnmatchcase(n, part)]
                else:
                    cand = posixpath.join(base, part) if base else part
                    if self.resolve(cand) is not None and (self.is_dir(cand) or self.text(cand) is not None):
                        nxt.append(cand)
            found = nxt
        return sorted(n for n in found if self.text(n) is not None)


def _safe(name: str) -> str | None:
    name = name.replace("\\", "/")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts) or name.startswith("/"):
        return None
    return "/".join(parts)


def open_tree(path: Path) -> Tree:
    """A directory or a tarball as a Tree; one line naming the file and the fix otherwise."""
    if path.is_dir():
        return _from_dir(path)
    if path.is_file():
        try:
            ok = tarfile.is_tarfile(path)
        except OSError as e:
            raise NettuneError(f"--from {path}: cannot read it: {e.strerror or e}") from None
        if ok:
            return _from_tar(path)
        raise NettuneError(f"--from {path}: neither a directory nor a tarball (give a sosreport's directory or .tar.xz, or a nettune capture .tar.gz)")
    raise NettuneError(f"--from {path}: no such file or directory")


def _strip_top(names: list[str]) -> str:
    """The one top directory every member shares (sosreport-HOST-DATE/), else ''."""
    tops = {n.split("/", 1)[0] for n in names if n}
    if len(tops) == 1 and all("/" in n or n in tops for n in names):
        top = next(iter(tops))
        if top not in ("proc", "sys", "sos_commands", "nettune-capture.json"):
            return top + "/"
    return ""


def _from_tar(path: Path) -> Tree:
    tree = Tree(str(path))
    total = 0
    try:
        with tarfile.open(path, "r:*") as tar:
            members = []
            for m in tar:
                name = _safe(m.name)
                if name is None:
                    continue
                members.append((name, m))
            top = _strip_top([n for n, _ in members])
            for name, m in members:
                rel = name[len(top):] if top and name.startswith(top) else name
                if not rel or not KEEP.match(rel):
                    continue
                if m.issym():
                    tree.links[rel] = m.linkname
                    tree._add_dirs(rel)
                elif m.isdir():
                    tree.dirs.add(rel)
                    tree._add_dirs(rel)
                elif m.isfile() and m.size <= MAX_FILE and total + m.size <= MAX_TOTAL:
                    f = tar.extractfile(m)
                    if f is not None:
                        tree.files[rel] = f.read(MAX_FILE)
                        total += m.size
                        tree._add_dirs(rel)
                elif m.islnk():
                    target = _safe(m.linkname)
                    if target and target.startswith(top) and target[len(top):] in tree.files:
                        tree.files[rel] = tree.files[target[len(top):]]
                        tree._add_dirs(rel)
    except (tarfile.TarError, OSError, EOFError) as e:
        raise NettuneError(f"--from {path}: not a readable tarball ({e}); give the sosreport's .tar.xz/.tar.gz as sos wrote it, or its unpacked directory") from None
    return tree


def _from_dir(root: Path) -> Tree:
    tree = Tree(str(root))
    total = 0
    root_s = str(root)
    for dirpath, dirnames, filenames in os.walk(root_s, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root_s)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/")
        keep_dirs = []
        for d in dirnames:
            rel = f"{rel_dir}/{d}" if rel_dir else d
            full = os.path.join(dirpath, d)
            if os.path.islink(full):
                tree.links[rel] = os.readlink(full)
                tree._add_dirs(rel)
            elif not _skip_dir(rel):
                tree.dirs.add(rel)
                tree._add_dirs(rel)
                keep_dirs.append(d)
        dirnames[:] = keep_dirs
        for f in filenames:
            rel = f"{rel_dir}/{f}" if rel_dir else f
            full = os.path.join(dirpath, f)
            if not KEEP.match(rel):
                continue
            try:
                st = os.lstat(full)
            except OSError:
                continue
            if stat.S_ISLNK(st.st_mode):
                tree.links[rel] = os.readlink(full)
                tree._add_dirs(rel)
            elif stat.S_ISREG(st.st_mode) and st.st_size <= MAX_FILE and total + st.st_size <= MAX_TOTAL:
                fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as fh:
                    tree.files[rel] = fh.read(MAX_FILE)
                total += st.st_size
                tree._add_dirs(rel)
    return tree


_TOPS = ("proc", "sys", "sos_commands", "var", "etc", "run")
_SKIP = re.compile(r"^(sys/(fs|kernel|module|firmware)|proc/\d+/(?!net$)[^/]+|var/(?!log$)[^/]+|run/(?!systemd$)[^/]+|sos_commands/(?!networking|kernel|hardware|processor|tuned|host|pci|numa|systemd|date)[^/]+)$")


def _skip_dir(rel: str) -> bool:
    """A directory of an unpacked sosreport none of whose files doctor reads."""
    return rel.split("/", 1)[0] not in _TOPS or bool(_SKIP.match(rel))
