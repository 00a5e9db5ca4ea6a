"""`[[nodes]] jump`: the SSH hops to a node behind a bastion, resolved once when the
config is read. `jump = "user@bastion:22"` (comma-separated for several hops, the
first one first) is reached with the node's own identity and known_hosts; a jump that
names another [[nodes]] entry goes through that node as its config describes it
(its own jump first). Pure."""

from __future__ import annotations

import re

import msgspec

from nvq.config.types import JumpHost, NodeConfig

_HOP = re.compile(r"(?:([^@\s,]+)@)?([A-Za-z0-9._-]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}))?")


def parse_hops(text: str, node: NodeConfig) -> list[JumpHost]:
    """`user@host:port[,...]` as hops with `node`'s identity and known_hosts."""
    hops = []
    for part in text.split(","):
        m = _HOP.fullmatch(part.strip())
        if m is None or not 1 <= int(m.group(3) or 22) <= 65535:
            raise ValueError(f"{part.strip()!r} is not user@host:port nor a node's name")
        hops.append(JumpHost(host=m.group(2).strip("[]"), port=int(m.group(3) or 22),
                             user=m.group(1), identity=node.identity,
                             known_hosts=node.known_hosts))
    return hops


def one_hop(text: str) -> str:
    """`[remote] jump`: exactly one user@host:port (ValueError otherwise)."""
    if len(parse_hops(text, NodeConfig(name="remote", host="-"))) != 1:
        raise ValueError("one hop only (user@host:port)")
    return text


def resolve(nodes: list[NodeConfig]) -> list[NodeConfig]:
    """The nodes with their `hops` filled. ValueError (index, message) on a jump
    that names no node and is no host, or a loop of jumps."""
    by_name = {n.name: n for n in nodes}
    done: dict[str, list[JumpHost]] = {}

    def hops_of(node: NodeConfig, seen: tuple[str, ...]) -> list[JumpHost]:
        if node.name in done:
            return done[node.name]
        if node.name in seen:
            raise ValueError(f"jumps go round in a loop: {' -> '.join([*seen, node.name])}")
        if not node.jump:
            hops: list[JumpHost] = []
        elif node.jump in by_name:
            via = by_name[node.jump]
            hops = [*hops_of(via, (*seen, node.name)), JumpHost(
                host=via.host, port=via.port, user=via.user, identity=via.identity,
                known_hosts=via.known_hosts)]
        else:
            hops = parse_hops(node.jump, node)
        done[node.name] = hops
        return hops

    return [msgspec.structs.replace(n, hops=hops_of(n, ())) if n.jump else n for n in nodes]
