"""One loopback rule for every server: the endpoint, the panel and the MCP server ask the same."""

from __future__ import annotations

import pytest

from em_plugin.access import is_loopback
from em_plugin.endpoint import start_endpoint
from em_plugin.errors import ConfigurationError


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.10", "::1", "[::1]", "localhost", "LocalHost", " 127.0.0.1 "]
)
def test_loopback_names_and_addresses(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.org", "", "local"])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_the_endpoint_refuses_what_the_rule_calls_public() -> None:
    # Refused before anything starts: no store is opened, no port bound.
    with pytest.raises(ConfigurationError, match="--token-file"):
        start_endpoint("memory:", host="0.0.0.0", port=0)
