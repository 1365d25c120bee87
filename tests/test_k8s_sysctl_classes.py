"""The Kubernetes sysctl classes nettune decides by (studyfile/k8s_sysctl_classes.py) agree
with Kubernetes' own sources for every released minor version it covers, and a study that
can never work on a cluster is refused when its file is read. The sources are
tests/fixtures/kubernetes/real/ (SOURCES.md: repository, path, commit of each)."""
import json

import pytest

from nettune import parse_study
from nettune.errors import SpecError
from nettune.knobs.keys import linux_sysctls
from nettune.knobs.kinds.sysctl import SYSCTLS
from nettune.knobs.registry import KINDS
from nettune.studyfile.k8s_sysctl_classes import (ACTS, COPIED, DEFAULT, FIRST, LAST, NODE, SAFE_SINCE, UNRELEASED, classify,
                                                  plan_minor, safe_names, where)

from conftest import ROOT

REAL = ROOT / "tests" / "fixtures" / "kubernetes" / "real"
PSA = json.loads((REAL / "psa_baseline_sysctls.json").read_text())["releases"]
KUBELET = json.loads((REAL / "kubelet_safe_sysctls.json").read_text())


def catalog_sysctls() -> list[str]:
    """Every Linux sysctl the knob catalog can set: the sysctl kind's table and what every
    other kind writes (cc, sockbuf:max, sockbuf:default)."""
    names = [row[0] for row in SYSCTLS]
    for kind in KINDS:
        for key in (kind, f"{kind}:max", f"{kind}:default"):
            try:
                names += linux_sysctls(key) or []
            except ValueError:  # not a key this kind takes
                pass
    return list(dict.fromkeys(names))


@pytest.mark.parametrize("minor", range(FIRST, LAST + 1))
def test_safe_list_per_version_is_kubernetes_own(minor):
    """The PodSecurity baseline's allowed sysctls of release-1.N (pod-security-admission,
    policy/check_sysctls.go at that branch's commit) are exactly nettune's safe list at 1.N."""
    assert safe_names(minor) == PSA[f"1.{minor}"]["baseline_allowed"], PSA[f"1.{minor}"]["commit"]


@pytest.mark.parametrize("minor", range(FIRST, LAST + 1))
def test_every_catalog_sysctl_is_classified_per_version(minor):
    """Each catalog sysctl: where it acts is known (never "cannot tell"), and its safety as a
    pod sysctl at 1.N is the PodSecurity baseline's at 1.N (node-level ones are never per pod)."""
    allowed = set(PSA[f"1.{minor}"]["baseline_allowed"])
    names = catalog_sysctls()
    assert {"net.core.rmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_congestion_control", "net.core.somaxconn"} <= set(names)
    for name in names:
        c = classify(name, f"v1.{minor}.3")
        assert c.where in (NODE, COPIED, DEFAULT), name
        if c.where == NODE:
            assert c.safe is False and not c.per_pod and "node:NAME" in c.needs
        else:
            assert c.safe is (name in allowed), (name, minor)
            assert ("--allowed-unsafe-sysctls" in c.needs and "privileged" in c.needs) is (name not in allowed)


def test_kernel_minimums_are_the_kubelets():
    """The kernels the kubelet needs to keep a sysctl on its safe list: the Kubernetes docs
    (kernel-version-requirements.md) and pkg/util/kernel/constants.go."""
    docs = KUBELET["docs"]["safe_since"]
    consts = KUBELET["kernel_constants"]["namespaced_since"] | KUBELET["kernel_constants"]["later"]
    for name, (since, kernel) in docs.items():
        assert SAFE_SINCE[name] == (int(since.split(".")[1]), kernel), name
        assert consts[name] == kernel
    # below the minimum the kubelet drops it (and before namespacing the kernel has one value per machine)
    c = classify("net.ipv4.tcp_rmem", "v1.32.0", "4.14.300")
    assert c.safe is False and "kernel 4.14.300" in c.kernel_note and c.where == NODE
    assert classify("net.ipv4.tcp_rmem", "v1.32.0", "4.15.0").safe is True
    assert classify("net.ipv4.tcp_fin_timeout", "v1.29.0", "4.5.7").safe is False


def test_the_unreleased_additions_are_masters_and_not_used_yet():
    master = set(PSA["master"]["baseline_allowed"]) - set(PSA[f"1.{LAST}"]["baseline_allowed"])
    assert master == set(UNRELEASED)
    assert not set(UNRELEASED) & set(safe_names(LAST))
    assert plan_minor("v1.37.0-alpha.1") == (LAST, "Kubernetes 1.37 is newer than nettune's lists (up to 1.36): classified as 1.36 (a newer kubelet may accept more)")


def test_versions_outside_the_lists_cannot_tell():
    assert plan_minor("v1.21.14")[0] is None and classify("net.ipv4.tcp_rmem", "v1.21.14").safe is None
    assert plan_minor("garbage")[0] is None and plan_minor(None) == (None, "")
    assert plan_minor("v1.29.3-eks-1a2b3c") == (29, "")


def test_where_a_sysctl_acts():
    assert where("net.core.rmem_max") == NODE and where("vm.swappiness") == NODE and where("kernel.pid_max") == NODE
    assert where("net.ipv4.tcp_wmem") == COPIED and where("net.core.somaxconn") == DEFAULT
    assert where("net.core.optmem_max", "6.1.0") == NODE and where("net.core.optmem_max", "6.8.0") == DEFAULT
    assert where("net.ipv6.conf.all.forwarding") == ""  # not in the table: cannot tell
    assert classify("net.ipv4.tcp_syncookies", "1.29", host_network=True).safe is False
    assert all(w in (NODE, COPIED, DEFAULT, "ipc") for w, _ in ACTS.values())


def kstudy(target: str, extra: str = "", workload: str = "") -> object:
    return parse_study(f'name = "k"\n[target]\nkind = "kubernetes"\n{target}\n[workload]\n{workload}\n{extra}')


NODES = 'node_access = true\nnodes = ["a", "b"]'


@pytest.mark.parametrize("target, extra, workload, says", [
    ('pod_sysctls = { "net.core.rmem_max" = 4194304 }', "", "",
     "'net.core.rmem_max' is node-level: one value per node, seen by every pod on it; cannot be set per pod: set it as a knob on node:NAME hosts"),
    ('network = "host"\npod_sysctls = { "net.ipv4.tcp_rmem" = "4096 87380 6291456" }', "", "", "cannot be set on pods with network = \"host\""),
    ('via = "service"', "", "", 'target.via = "service": the client connects to the Service\'s ClusterIP, which the server cannot bind to; set [workload] bind = false'),
    (NODES, '[knobs]\n"sysctl:net.core.somaxconn" = 4096\n[knobs.hosts]\n"sysctl:net.core.somaxconn" = ["node:a"]', "",
     "net.core.somaxconn is per pod network namespace; a new pod starts from the kernel default (the node's value never reaches it), so the test pods never see the node's value; set it per pod instead: [target] pod_sysctls"),
    (NODES, '[knobs]\ncc = "bbr"', "", "'cc' would act on test pod(s) server, client: a test pod cannot change its own settings"),
    ('tolerations = [{ operator = "Exists", value = "x" }]', "", "", 'operator = "Exists" takes no value'),
    ('tolerationz = []', "", "", "unknown field; did you mean 'tolerations'?"),
    ('image_pull_secrets = ["Bad_Name"]', "", "", "'Bad_Name' is not a Secret name"),
])
def test_what_can_never_work_is_refused_when_the_file_is_read(target, extra, workload, says):
    with pytest.raises(SpecError) as e:
        kstudy(target, extra, workload)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_what_can_work_is_accepted():
    kstudy(NODES, '[knobs]\ncc = "bbr"\n"sockbuf:max" = 8388608\n[knobs.hosts]\ncc = ["node:a", "node:b"]\n"sockbuf:max" = ["node:a", "node:b"]')
    kstudy('network = "host"\n' + NODES, '[knobs]\n"sysctl:net.core.somaxconn" = 4096\n[knobs.hosts]\n"sysctl:net.core.somaxconn" = ["node:a"]')
    kstudy('via = "service"', workload="bind = false")
    kstudy('pod_sysctls = { "net.core.somaxconn" = 4096, "kernel.shm_rmid_forced" = 1 }')
