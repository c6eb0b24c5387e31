"""Fixtures of the multinode tier: test hosts made of network namespaces (see ``netns``).

Tests here need root and iproute2; where namespaces cannot be made they are skipped with the
reason. Every set is removed after its test, whether the test passed or failed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from netns import Nodes, NodesUnavailable, make_nodes


@pytest.fixture()
def two_nodes() -> Iterator[Nodes]:
    """Two node namespaces joined through a bridge, unshaped (``.shape(rate_bit)`` to limit)."""
    try:
        manager = make_nodes(2)
        nodes = manager.__enter__()
    except NodesUnavailable as error:
        pytest.skip(str(error))
    try:
        yield nodes
    finally:
        manager.__exit__(None, None, None)
