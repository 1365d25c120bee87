"""Who may use a test server: the address it binds to and the credentials it requires.

An `Access` is what one test's command lines need; engines turn it into options
(engines.iperf3 / engines.iperf2), run.credentials makes one per test from the study's
credentials. What the tools do with them, measured on this machine (iperf3 3.12 with
OpenSSL, iperf 2.1.8):

iperf3 (authentication, when `iperf3 --version` lists it among its optional features):
  the server gets --rsa-private-key-path and --authorized-users-path (lines
  `user,sha256hex("{user}password")`), the client --username, --rsa-public-key-path and
  the password in the IPERF3_PASSWORD environment variable (never on a command line).
  A client without them gets "test authorization failed" and runs no test; a one-off
  (-1) server does not count that connection and goes on waiting for nettune's client.
  Before 3.17 the credentials are encrypted with PKCS#1 v1.5 padding (3.12 here: a token
  its client sent decrypts with PKCS#1 v1.5, not with OAEP); 3.17 switched to OAEP and
  added --use-pkcs1-padding for older peers, which nettune passes to the 3.17+ side of
  a pair whose other side is older (from the 3.17 manual; no 3.17 binary here).
iperf2 (--permit-key=KEY, TCP only): a client without the key is dropped before its
  traffic is counted. 2.1.8 loses streams with it when -P > 1 (the server fails to read
  the key of some connections: "read key failed"; measured 0 of 8 tests complete with
  -P 4 on the lab), so a key is used for -P 1 only. UDP servers cannot use a key.
  The key is a command-line argument (iperf2 reads it nowhere else): it is replaced by
  <secret> in every stored command line and output.
"""
from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

SECRET = "<secret>"  # what a secret is replaced by in stored command lines and outputs


@dataclass(frozen=True)
class Iperf3Credentials:
    """One study's iperf3 credentials; the private key and password never leave memory
    except into the server hosts' private files and the client's environment."""

    user: str
    password: str
    private_pem: str
    public_pem: str

    def users_file(self) -> str:
        return users_line(self.user, self.password) + "\n"


def users_line(user: str, password: str) -> str:
    """An --authorized-users-path line: iperf3 hashes "{user}password" with SHA-256."""
    return f"{user},{hashlib.sha256(('{' + user + '}' + password).encode()).hexdigest()}"


def new_iperf3_credentials() -> Iperf3Credentials:
    """A fresh RSA-2048 key pair (PEM: PKCS#8 private key, SubjectPublicKeyInfo public
    key, both as iperf3 reads them), a random user name and password."""
    from cryptography.hazmat.primitives import serialization  # noqa: PLC0415 - only when auth is used
    from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: PLC0415

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return Iperf3Credentials("nettune-" + secrets.token_hex(6), secrets.token_urlsafe(24), private.decode(), public.decode())


def new_permit_key() -> str:
    return secrets.token_hex(16)  # iperf2 refuses keys that are too long; 32 hex digits are fine


def iperf3_has_auth(version_output: str) -> bool:
    """`iperf3 --version` of a build with OpenSSL lists "authentication" among its
    "Optional features available" (3.12 here does); older or OpenSSL-less builds do not."""
    m = re.search(r"optional features available:(.*)", version_output or "", re.IGNORECASE)
    return bool(m) and "authentication" in m.group(1).lower()


@dataclass(frozen=True)
class Access:
    """What one test's server and client need so that only nettune's client uses it.

    Paths are on the host that uses them (server files on the server host, the public
    key on the client host). `password` goes to the client's environment only.
    """

    bind: str | None = None  # the server's -B: the address its peers reach it at
    user: str | None = None
    password: str | None = None
    private_key: str | None = None
    users_file: str | None = None
    public_key: str | None = None
    server_pkcs1: bool = False  # --use-pkcs1-padding on a 3.17+ server with an older client
    client_pkcs1: bool = False  # ... on a 3.17+ client with an older server
    permit_key: str | None = None

    @property
    def iperf3_auth(self) -> bool:
        return bool(self.user and self.private_key and self.public_key)

    def secrets(self) -> list[str]:
        return [s for s in (self.password, self.permit_key) if s]

    def summary(self) -> dict[str, object]:
        """What is stored with each run (no secret): how this test's server was kept."""
        how = "iperf3-rsa" if self.iperf3_auth else "permit-key" if self.permit_key else None
        return {"bind": self.bind, "auth": how}


def placeholder(bind: str | None = None) -> Access:
    """Access for `--dry-run`: the options as they will be, the secrets as names."""
    return Access(bind=bind, user="<user>", password="<password>", private_key="<dir>/private.pem",
                  users_file="<dir>/users.csv", public_key="<dir>/public.pem", permit_key="<key>")


def redact(text: str, secret_values: list[str]) -> str:
    for s in secret_values:
        if s:
            text = text.replace(s, SECRET)
    return text
