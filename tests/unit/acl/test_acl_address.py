"""Remote-address patterns of plain_acl.yml, as Java's ``RemoteAddressStrategyFactory`` reads them."""

from __future__ import annotations

import pytest

from rocketpipe.acl import AclError, parse_remote_address_strategy
from rocketpipe.acl.address import expand_ip, host_of


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*", ["1.2.3.4", "::1"], []),
        ("*.*.*.*", ["10.0.0.1"], []),
        ("192.168.0.{1,2}", ["192.168.0.1", "192.168.0.2"], ["192.168.0.3", "192.168.1.1"]),
        ("192.168.0.1,10.0.0.7", ["192.168.0.1", "10.0.0.7"], ["192.168.0.2"]),
        ("192.168.1.1-10", ["192.168.1.1", "192.168.1.10"], ["192.168.1.11", "192.168.1.0", "192.168.2.5"]),
        ("192.168.1.*", ["192.168.1.0", "192.168.1.255"], ["192.168.2.1"]),
        ("192.168.*.*", ["192.168.77.1"], ["192.169.0.1"]),
        ("192.168.1-10.*", ["192.168.5.200"], ["192.168.11.1"]),
        ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
        ("::1", ["::1", "0:0:0:0:0:0:0:1"], ["::2"]),
        ("1050:0000:0000:0000:0005:0600:300c:*", ["1050::5:600:300c:1"], ["1050::5:600:300d:1"]),
        ("1050::0005:0600:300c:1-200", ["1050::5:600:300c:1ff"], ["1050::5:600:300c:201"]),
    ],
)
def test_patterns_match_as_java(pattern: str, yes: list[str], no: list[str]) -> None:
    strategy = parse_remote_address_strategy(pattern)
    assert [ip for ip in yes if strategy.match(ip)] == yes
    assert [ip for ip in no if strategy.match(ip)] == []


def test_blank_pattern_matches_nothing() -> None:
    assert not parse_remote_address_strategy(None).match("127.0.0.1")
    assert not parse_remote_address_strategy("  ").match("127.0.0.1")


@pytest.mark.parametrize("pattern", ["192.168.0.300", "hello", "192.168.1.{1,x}", "192.168.1.-10", "192.168.1.20-10"])
def test_malformed_patterns_raise(pattern: str) -> None:
    with pytest.raises(AclError):
        parse_remote_address_strategy(pattern)


def test_expand_ip_and_host_of() -> None:
    assert expand_ip("::1", 8) == "0000:0000:0000:0000:0000:0000:0000:0001"
    assert expand_ip("10.0.0.1", 8) == "10.0.0.1"
    assert host_of("127.0.0.1:5555") == "127.0.0.1"
    assert host_of("[::1]:5555") == "::1"
