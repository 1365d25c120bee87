"""The built-in lab target: hosts are network namespaces on a Linux bridge."""
from __future__ import annotations

from typing import Any

from ..base import TargetBase
from ..facts import linux_facts
from ...errors import NettuneError
from ...studyfile.lab_link import LinkSpec, UnderlaySpec
from ...studyfile.lab_target import LabTargetSpec
from . import lab_nodes
from . import lab_placement as placement
from .labnet import LabNet, require_root, study_layout
from ..scratch import scratch_namespaces
from .lab_host import LabHost as LabHost
from ...record.point_state import PointState



class LabTarget(TargetBase):
    kind = "lab"

    def __init__(self, study: Any):
        require_root()
        spec = study.target
        self.layout = study_layout(study)
        self.net = LabNet(self.layout)
        self.hosts = {
            h: LabHost(h, self.layout.ns(h), self.layout.address(h), self.layout.ns_if(h)) for h in spec.hosts
        }
        self._mtu: int | None = None
        self._queues: int | None = None
        self._underlay_mtu = 1500
        self._shaping: Any = (None, None)  # the link and underlay values in force
        self._created = False  # close() removes only a lab this target began to create
        self._borrowed: dict[str, Any] | None = None  # a lab `nettune lab up` left: its configuration, put back at close

    def prepare(self, resolved: Any) -> PointState:
        spec = resolved.target
        under = spec.underlay or UnderlaySpec()
        placed = placement.nodes_for(spec, resolved.workload)
        if self._mtu is None and not self._borrow():  # a lab `nettune lab up` left is used as it is
            self._created = True
            self.layout.nodes = placed
            self.net.up(spec.mtu, spec.queues, under.mtu)
            self._mtu, self._queues, self._underlay_mtu = spec.mtu, spec.queues, under.mtu
        self._apply_settings(spec, under, placed)
        return self.state()

    def _apply_settings(self, spec: Any, under: Any, placed: Any) -> None:
        """The point's lab settings on a lab that is up: where hosts sit, queues, MTU, shaping."""
        for host, node in placement.moves(self.layout.nodes, placed):
            self.net.move_host(host, node, self._mtu or spec.mtu, self._queues or 1)
        if spec.queues != self._queues:
            for h in self.layout.hosts:
                self.net.recreate_veth(h, spec.mtu, spec.queues)  # keeps the shaping in force
        elif spec.mtu != self._mtu:
            self.net.set_mtu(spec.mtu)
        if self.layout.nodes and under.mtu != self._underlay_mtu:
            lab_nodes.set_underlay_mtu(self.layout, under.mtu)
        shaping = (spec.link.model_dump() if spec.link else None, under.model_dump() if spec.underlay else None)
        if shaping != self._shaping:  # a point whose link values differ re-shapes every link
            self.net.set_shaping(spec.link, spec.underlay)
        self._mtu, self._queues, self._underlay_mtu, self._shaping = spec.mtu, spec.queues, under.mtu, shaping

    def keep(self) -> None:
        """`nettune lab up`: the lab is the user's from now on. A run of the same study uses
        it and leaves it up (its configuration as found); `nettune lab down` removes it."""
        link, underlay = self._shaping
        self.net.save_state(kept=True, owner="", config={"mtu": self._mtu, "queues": self._queues, "underlay_mtu": self._underlay_mtu,
                                                         "link": link, "underlay": underlay, "nodes": self.layout.nodes})

    def _borrow(self) -> bool:
        """Use the lab `nettune lab up` left for this study (its record says kept and all its
        namespaces are there): nothing is created, and close() puts back what was found."""
        from pyroute2 import netns  # noqa: PLC0415

        st = self.net.record()
        config = st.get("config")
        if not st.get("kept") or not isinstance(config, dict):
            return False
        if list(st.get("hosts") or []) != self.layout.hosts or str(st.get("subnet")) != str(self.layout.subnet):
            raise NettuneError(f"lab {self.layout.study!r} is up (nettune lab up) with hosts {', '.join(st.get('hosts') or [])} on "
                               f"{st.get('subnet')}, not this study's ({', '.join(self.layout.hosts)} on {self.layout.subnet}); "
                               f"`nettune lab down {self.layout.study}` first, or give this study another name")
        present = set(netns.listnetns())
        if not all(n in present for n in self.layout.namespaces()):
            return False  # removed by hand since: a lab of this run's own, created anew
        self._borrowed = config
        self.layout.nodes = config.get("nodes")
        self._mtu, self._queues, self._underlay_mtu = config.get("mtu"), config.get("queues"), config.get("underlay_mtu") or 1500
        self._shaping = (config.get("link"), config.get("underlay"))
        self.net.adopt(LinkSpec.model_validate(config["link"]) if config.get("link") else None,
                       UnderlaySpec.model_validate(config["underlay"]) if config.get("underlay") else None)
        self.net.save_state()  # this run uses it now: `lab down` keeps it until the run ends
        return True

    def _give_back(self) -> None:
        """Put the user's lab back as `nettune lab up` left it, and leave it up."""
        c = self._borrowed or {}
        spec = LabTargetSpec.model_validate({"kind": "lab", "hosts": list(self.layout.hosts), "mtu": c.get("mtu") or 1500,
                                             "queues": c.get("queues") or 1, "nodes": c.get("nodes"), "link": c.get("link"),
                                             "underlay": c.get("underlay")})
        self._apply_settings(spec, spec.underlay or UnderlaySpec(), c.get("nodes"))
        self.net.save_state(owner="")

    def state(self) -> PointState:
        """The hosts' interfaces as they are now (after knobs, e.g. an mtu knob), the links'
        qdiscs and the nodes' underlay and overlay."""
        out: dict[str, Any] = {"hosts": self.net.state()}
        if self.net.shaped_once:
            out["shaping"] = self.net.shaping_state()
        if self.layout.nodes:
            out["nodes"] = lab_nodes.node_state(self.layout)
        return PointState.model_validate(out)

    def up(self, mtu: int, queues: int, underlay_mtu: int = 1500) -> None:
        """Create the lab at this MTU and queue count without a study point (tests stand a
        lab up with it)."""
        self._created = True
        self.net.up(mtu, queues, underlay_mtu)
        self._mtu, self._queues, self._underlay_mtu = mtu, queues, underlay_mtu

    def facts(self) -> dict[str, dict[str, Any]]:
        base = linux_facts(next(iter(self.hosts.values())))
        state = self.net.state() if self._mtu is not None else {}
        return {h: base | {"namespace": self.layout.ns(h), "interface": state.get(h, {})} for h in self.hosts}

    def scratch(self, queues: int = 1, only: list[str] | None = None, each: bool = False) -> Any:
        return scratch_namespaces({n: self.hosts[n].interface or "" for n in (self.hosts if only is None else only)}, queues, each)

    def close(self) -> None:
        # A run refused before its lab existed (journal, knob check, a live run of the same
        # name) must not remove a lab of the same name that belongs to someone else.
        if self._created:
            self.net.down()
        elif self._borrowed is not None:
            try:
                self._give_back()
            finally:
                self.net.netlink.close()
            return
        self.net.netlink.close()
