#!/usr/bin/env python3
"""Test hosts on one machine for multi-node runs: network namespaces joined through a bridge.

    scripts/netns_nodes.py up --name lab --nodes 2 [--rate 1e9]   # make lab-0, lab-1, lab-br
    scripts/netns_nodes.py shape --name lab --rate 1e9             # limit the links (tc tbf)
    scripts/netns_nodes.py shape --name lab --off                  # remove the limit
    scripts/netns_nodes.py down --name lab                         # delete the set
    scripts/netns_nodes.py down --stale                            # delete sets of dead test runs

Then run in a node with ``ip netns exec lab-0 ...`` and ``GLOO_SOCKET_IFNAME=pnet0``; node i's
address is 198.18.0.(i+1). Needs root and iproute2. The implementation is the test tier's
(``tests/multinode/netns.py``); this script only parses arguments.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "multinode"))

from netns import IFNAME, Nodes, NodesUnavailable, list_namespaces, remove_stale, unavailable_reason  # noqa: E402


def _count(name: str) -> int:
    """How many nodes the set ``name`` has (from the namespaces present)."""
    present = set(list_namespaces())
    count = 0
    while f"{name}-{count}" in present:
        count += 1
    if count == 0:
        raise NodesUnavailable(f"no node namespaces named {name}-0...; make them with `up --name {name}`")
    return count


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="make a set of node namespaces")
    up.add_argument("--name", required=True, help="set name; namespaces are NAME-0.. and NAME-br")
    up.add_argument("--nodes", type=int, default=2, help="node count (default 2)")
    up.add_argument("--rate", type=float, help="limit every inter-node link to RATE bit/s each way")
    shape = commands.add_parser("shape", help="change the inter-node shaping of a set")
    shape.add_argument("--name", required=True)
    group = shape.add_mutually_exclusive_group(required=True)
    group.add_argument("--rate", type=float, help="bit/s each way, e.g. 1e9")
    group.add_argument("--off", action="store_true", help="remove the shaping")
    down = commands.add_parser("down", help="delete a set (or the sets of dead test runs)")
    target = down.add_mutually_exclusive_group(required=True)
    target.add_argument("--name")
    target.add_argument("--stale", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    reason = unavailable_reason()
    if reason is not None:
        print(f"error: {reason}", file=sys.stderr)
        return 2
    try:
        if args.command == "up":
            nodes = Nodes(name=args.name, count=args.nodes)
            nodes.create()
            if args.rate:
                nodes.shape(args.rate)
            for namespace, addr in zip(nodes.namespaces, nodes.addrs, strict=True):
                print(f"{namespace} {addr} {IFNAME}")
        elif args.command == "shape":
            nodes = Nodes(name=args.name, count=_count(args.name))
            nodes.unshape() if args.off else nodes.shape(args.rate)
        elif args.stale:
            print("\n".join(remove_stale()))
        else:
            nodes = Nodes(name=args.name, count=_count(args.name))
            nodes.destroy()
    except NodesUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
