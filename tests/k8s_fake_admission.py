"""What a real cluster's admission does to the pods nettune sends, for the recording fake
(tests/k8s_fake.py), taken from Kubernetes' own sources and never from nettune's code:

- PodSecurity admission (the API server, at create): the baseline and restricted checks
  of kubernetes/pod-security-admission `policy/check_*.go`, the baseline's allowed
  sysctls per release from tests/fixtures/kubernetes/real/psa_baseline_sysctls.json
  (extracted from each release-1.N branch; SOURCES.md there).
- The kubelet's sysctl admission (pkg/kubelet/sysctl/allowlist.go): a pod whose sysctl
  is neither on the safe list of the node's kubelet (the same per-release set, less the
  sysctls whose kernel minimum the node's kernel misses: kubelet_safe_sysctls.json) nor
  in the node's --allowed-unsafe-sysctls is rejected, reason SysctlForbidden, message
  "forbidden sysctl: %q not allowlisted"; a net.* sysctl with hostNetwork: "%q not
  allowed with host net enabled".
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

REAL = Path(__file__).parent / "fixtures" / "kubernetes" / "real"
PSA = json.loads((REAL / "psa_baseline_sysctls.json").read_text())["releases"]
KUBELET = json.loads((REAL / "kubelet_safe_sysctls.json").read_text())
KERNEL_MIN = {n: k for n, (_, k) in KUBELET["docs"]["safe_since"].items()}
LEVELS = ("privileged", "baseline", "restricted")


def minor(version: str) -> int:
    return int(re.match(r"v?1\.(\d+)", version).group(1))


def release(version: str) -> dict[str, Any]:
    m = minor(version)
    return PSA[f"1.{min(max(m, 22), 36)}"]


def _kernel(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def kubelet_safe(kubelet_version: str, kernel: str) -> set[str]:
    names = set(release(kubelet_version)["baseline_allowed"])
    return {n for n in names if not KERNEL_MIN.get(n) or _kernel(kernel) >= _kernel(KERNEL_MIN[n])}


def kubelet_reject(pod: dict[str, Any], kubelet_version: str, kernel: str, allowed_unsafe: list[str]) -> str | None:
    """The kubelet's SysctlForbidden message for this pod, or None when it admits it."""
    spec = pod["spec"]
    safe = kubelet_safe(kubelet_version, kernel)
    for s in (spec.get("securityContext") or {}).get("sysctls") or []:
        name = s["name"]
        allowed = name in safe or any(name == p or (p.endswith("*") and name.startswith(p[:-1])) for p in allowed_unsafe)
        if not allowed:
            return f'forbidden sysctl: "{name}" not allowlisted'
        if name.startswith("net.") and spec.get("hostNetwork"):
            return f'forbidden sysctl: "{name}" not allowed with host Net enabled'
    return None


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return list(spec.get("containers") or []) + list(spec.get("initContainers") or [])


def baseline_violations(spec: dict[str, Any], version: str) -> list[str]:
    """check_hostNamespaces, check_privileged, check_sysctls (the baseline checks nettune's pods touch)."""
    out = []
    if any(spec.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")):
        out.append("host namespaces (" + ", ".join(f"{k}=true" for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)) + ")")
    if any((c.get("securityContext") or {}).get("privileged") for c in _containers(spec)):
        out.append("privileged")
    allowed = set(release(version)["baseline_allowed"])
    bad = [s["name"] for s in (spec.get("securityContext") or {}).get("sysctls") or [] if s["name"] not in allowed]
    if bad:
        out.append("forbidden sysctls (" + ", ".join(bad) + ")")
    return out


def restricted_violations(spec: dict[str, Any]) -> list[str]:
    """check_allowPrivilegeEscalation, check_capabilities_restricted, check_runAsNonRoot,
    check_runAsUser, check_seccompProfile_restricted."""
    out, psc = [], spec.get("securityContext") or {}
    cs = _containers(spec)
    if any((c.get("securityContext") or {}).get("allowPrivilegeEscalation") is not False for c in cs):
        out.append("allowPrivilegeEscalation != false")
    for c in cs:
        caps = (c.get("securityContext") or {}).get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []) or any(a != "NET_BIND_SERVICE" for a in caps.get("add") or []):
            out.append("unrestricted capabilities")
            break
    if not psc.get("runAsNonRoot") and not all((c.get("securityContext") or {}).get("runAsNonRoot") for c in cs):
        out.append("runAsNonRoot != true")
    if psc.get("runAsUser") == 0 or any((c.get("securityContext") or {}).get("runAsUser") == 0 for c in cs):
        out.append("runAsUser=0")
    pod_seccomp = (psc.get("seccompProfile") or {}).get("type")
    for c in cs:
        t = ((c.get("securityContext") or {}).get("seccompProfile") or {}).get("type") or pod_seccomp
        if t not in ("RuntimeDefault", "Localhost"):
            out.append("seccompProfile")
            break
    return out


def podsecurity_reject(pod: dict[str, Any], level: str, version: str) -> str | None:
    """The API server's 403 text for a pod the namespace's enforce level refuses, or None."""
    if level not in LEVELS or level == "privileged":
        return None
    bad = baseline_violations(pod["spec"], version)
    if level == "restricted":
        bad += restricted_violations(pod["spec"])
    if not bad:
        return None
    name = pod["metadata"]["name"]
    return f'403 Forbidden: pods "{name}" is forbidden: violates PodSecurity "{level}:latest": ' + ", ".join(bad)
