"""Remote-address patterns of plain_acl.yml (L2): :func:`parse_remote_address_strategy`.

Mirrors ``RemoteAddressStrategyFactory`` and the address helpers of ``AclUtils``. A pattern is:

* blank: matches nothing (``BlankRemoteAddressStrategy``);
* ``*``, ``*.*.*.*`` or ``*:*:*:*:*:*:*:*``: matches every address (``NullRemoteAddressStrategy``);
* ``192.168.0.{1,2}`` (braces last) or ``192.168.0.1,192.168.0.2``: any of the listed addresses
  (``MultipleRemoteAddressStrategy``);
* ``192.168.1.*``, ``192.168.*.*``, ``192.168.1.1-10``, ``192.168.1-10.*``, IPv6
  ``1050::0005:0600:300c:*`` or ``…:1-200``: one ``*`` or ``a-b`` part, the parts before it
  fixed (``RangeRemoteAddressStrategy``);
* otherwise one IPv4 / IPv6 address (``OneRemoteAddressStrategy``).

Addresses are strings without port (``"127.0.0.1"``). A malformed pattern raises
:class:`~.errors.AclError` with Java's message.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from dataclasses import dataclass

from .errors import AclError

__all__ = ["RemoteAddressStrategy", "expand_ip", "parse_remote_address_strategy"]


@dataclass(frozen=True, slots=True)
class RemoteAddressStrategy:
    """A compiled address pattern: ``match(ip) -> bool``.

    Attributes:
        pattern: the pattern as written in the ACL file.
        match: True when the address (no port) is matched by the pattern.
    """

    pattern: str
    match: Callable[[str], bool]


def _is_v4(addr: str) -> bool:
    try:
        ipaddress.IPv4Address(addr)
    except ValueError:
        return False
    return True


def _is_v6(addr: str) -> bool:
    try:
        ipaddress.IPv6Address(addr)
    except ValueError:
        return False
    return True


def _split(text: str, sep: str) -> list[str]:
    """``StringUtils.split``: empty tokens dropped."""
    return [t for t in text.split(sep) if t]


def expand_ip(addr: str, part: int) -> str:
    """``AclUtils.expandIP``: upper-case, ``::`` widened to ``part`` groups, groups padded to 4."""
    addr = addr.upper()
    pad = part - addr.count(":")
    if pad > 0:
        addr = addr.replace("::", ":" * (pad + 1))
    return ":".join(g.rjust(4, "0") if len(g) < 4 else g for g in addr.split(":"))


def _int_or_fail(text: str, base: int, pattern: str) -> int:
    try:
        return int(text.strip(), base)
    except ValueError:
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}") from None


def _verify_scope(pattern: str, index: int) -> None:
    """``AclUtils.verify`` / ``isScope``: the first ``index`` parts are valid numbers."""
    if ":" in pattern:
        parts = _split(expand_ip(pattern, 8), ":")
        ok = all(0 <= _int_or_fail(p, 16, pattern) <= 0xFFFF for p in parts[:index])
    else:
        parts = _split(pattern, ".")
        ok = len(parts) == 4 and all(0 <= _int_or_fail(p, 10, pattern) <= 255 for p in parts[:index])
    if not ok:
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")


def _multiple(pattern: str, addrs: list[str]) -> RemoteAddressStrategy:
    wanted: set[str] = set()
    for a in addrs:
        if _is_v4(a):
            wanted.add(a)
        elif _is_v6(a):
            wanted.add(expand_ip(a, 8))
        else:
            raise AclError(f"Netaddress examine Exception netaddress is {a}")

    def match(ip: str) -> bool:
        return (expand_ip(ip, 8) if _is_v6(ip) else ip) in wanted

    return RemoteAddressStrategy(pattern, match)


def _range_bounds(value: str, base: int, top: int, pattern: str) -> tuple[int, int] | None:
    value = value.strip()
    if value == "*":
        return 0, top
    if "-" in value:
        if value.startswith("-"):
            raise AclError(f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} ")
        ends = _split(value, "-")
        start, end = _int_or_fail(ends[0], base, pattern), _int_or_fail(ends[-1], base, pattern)
        if not (0 <= start <= top and 0 <= end <= top and start <= end):
            raise AclError(
                f"RangeRemoteAddressStrategy netaddress examine scope Exception start is {start} , end is {end}"
            )
        return (start, end) if end > 0 else None
    return None


def _range_v4(pattern: str) -> RemoteAddressStrategy:
    parts = _split(pattern, ".")
    for index in (1, 2, 3):
        if index >= len(parts):
            break
        bounds = _range_bounds(parts[index], 10, 255, pattern)
        if bounds is None:
            continue
        _verify_scope(pattern, index - 1)
        head = ".".join(p.strip() for p in parts[:index]) + "."
        start, end = bounds

        def match(ip: str, head: str = head, index: int = index, start: int = start, end: int = end) -> bool:
            if not _is_v4(ip) or not ip.startswith(head):
                return False
            return start <= int(ip.split(".")[index]) <= end

        return RemoteAddressStrategy(pattern, match)
    raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")


def _v6_head(pattern: str) -> str:
    """``AclUtils.v6ipProcess``: the expanded fixed part of an IPv6 range pattern."""
    star, minus = "*" in pattern, "-" in pattern
    if star and minus:
        last = pattern.rfind(":")
        return expand_ip(pattern[: pattern[:last].rfind(":")], 6)
    return expand_ip(pattern[: pattern.rfind(":")], 7)


def _range_v6(pattern: str) -> RemoteAddressStrategy:
    star, minus = pattern.find("*"), pattern.find("-")
    if star > -1 and star != len(pattern) - 1:
        raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
    parts = _split(pattern, ":")
    for index in range(1, len(parts)):
        bounds = _range_bounds(parts[index], 16, 0xFFFF, pattern)
        if bounds is None:
            continue
        if minus > -1 and minus <= pattern.rfind(":"):
            raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")
        head = _v6_head(pattern)
        groups = len(_split(head, ":"))
        start, end = bounds

        def match(ip: str, head: str = head, groups: int = groups, start: int = start, end: int = end) -> bool:
            if not _is_v6(ip):
                return False
            full = expand_ip(ip, 8).upper()
            if not full.startswith(head):
                return False
            return start <= int(full[5 * groups : 5 * groups + 4], 16) <= end

        return RemoteAddressStrategy(pattern, match)
    raise AclError(f"Netaddress examine scope Exception netaddress is {pattern}")


def _one(pattern: str) -> RemoteAddressStrategy:
    if not (_is_v4(pattern) or _is_v6(pattern)):
        raise AclError(f"Netaddress examine Exception netaddress is {pattern}")
    want = expand_ip(pattern, 8).upper()

    def match(ip: str) -> bool:
        return expand_ip(ip, 8).upper() == want

    return RemoteAddressStrategy(pattern, match)


def parse_remote_address_strategy(pattern: str | None) -> RemoteAddressStrategy:
    """Compile a ``whiteRemoteAddress`` / ``globalWhiteRemoteAddresses`` pattern.

    Mirrors ``RemoteAddressStrategyFactory.getRemoteAddressStrategy``.

    Raises:
        AclError: the pattern is malformed (Java's ``AclException`` messages).
    """
    text = (pattern or "").strip()
    if not text:
        return RemoteAddressStrategy(text, lambda ip: False)
    if text in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return RemoteAddressStrategy(text, lambda ip: True)
    if text.endswith("}"):
        sep = ":" if ":" in text else "."
        parts = _split(text, sep)
        if sep == "." and len(parts) < 4:
            raise AclError(f"MultipleRemoteAddressStrategy has got a/some wrong format IP(s) {text}")
        last = parts[-1]
        if not last.startswith("{"):
            raise AclError(f"MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress {text}")
        prefix = text[: text.index("{")]
        return _multiple(text, [prefix + item for item in _split(last[1:-1], ",")])
    if "," in text:
        return _multiple(text, _split(text, ","))
    if "*" in text or "-" in text:
        return _range_v6(text) if ":" in text else _range_v4(text)
    return _one(text)


def host_of(remote_address: str) -> str:
    """The address part of ``"ip:port"`` (``[v6]:port`` brackets removed), as Java's ``parse`` cuts it."""
    host = remote_address.rsplit(":", 1)[0] if ":" in remote_address else remote_address
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host
