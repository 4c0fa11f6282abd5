"""Where askgate may send a tenant's URL (`callback_url`, a text target's `url`): the one
outbound policy, checked when the ask arrives and again before every POST.

A URL is refused when its host is, or resolves to, an address that is not public:
loopback, link-local, private (RFC 1918, ULA fc00::/7), shared CGNAT 100.64/10,
multicast, unspecified, broadcast, reserved or documentation ranges, and the cloud
metadata endpoints, in every spelling. Hosts are read by the same WHATWG parser that
validates the ask (pydantic's), so `127.1`, `2130706433`, `0x7f000001`, `0177.0.0.1` and
`[::ffff:127.0.0.1]` are all 127.0.0.1; IPv4-mapped, -compatible, 6to4, Teredo and
NAT64 addresses are judged by the IPv4 address inside them; `localhost`, `*.localhost`
and the metadata names are refused by name. Every resolved address must pass, and the
POST then connects to one of those checked addresses (keeping Host and TLS SNI), so a
DNS answer that changes between the check and the connection (rebinding) cannot steer
it elsewhere. Redirects are never followed (the HTTP clients are built that way).

An operator opens ranges for everyone (`ASKGATE_OUTBOUND_ALLOW`, comma-separated CIDRs)
and per tenant (`askgate tenant outbound`); the metadata endpoints stay closed even then.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pydantic_core

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
# host, port -> the host's addresses as text ("203.0.113.7", "2001:db8::1").
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
SyncResolver = Callable[[str, int], Sequence[str]]

# What a tenant is shown for a refused POST; the detail goes to the operator's log only.
REFUSED = "refused: address not allowed"
RESOLVE_TIMEOUT_S = 5.0

METADATA_NAMES = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.tencentyun.com",
    }
)
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, DigitalOcean, …
        "169.254.170.2",  # AWS ECS task metadata
        "169.254.169.253",  # AWS VPC DNS
        "fd00:ec2::254",  # AWS over IPv6
        "fd00:ec2::23",
        "100.100.100.200",  # Alibaba Cloud
        "192.0.0.192",  # Oracle Cloud
    )
)
LOOPBACK = ipaddress.IPv4Address("127.0.0.1")
_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_COMPAT = ipaddress.ip_network("::/96")


class Refused(Exception):
    """A URL the policy refuses. `message` is safe to show the tenant who gave the URL
    (it never says what an internal name resolves to); `detail` is for logs."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail


class Unresolved(Exception):
    """The host did not resolve (maybe for a moment): refused at ask time with the same
    message as an internal host, retried at send time."""

    def __init__(self, host: str, detail: str) -> None:
        super().__init__(f"{host}: {detail}")
        self.host = host
        self.message = unresolvable_message(host)


def parse_cidrs(text: str | Iterable[str]) -> tuple[Network, ...]:
    """Comma-separated CIDRs (or a list of them) as networks; ValueError names a bad one."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out: list[Network] = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        try:
            out.append(ipaddress.ip_network(item, strict=False))
        except ValueError:
            raise ValueError(
                f"{item!r} is not a CIDR; write ranges such as 10.0.0.0/8 or fd00::/8, "
                "separated by commas"
            ) from None
    return tuple(out)


def _inner_v4(ip: Address) -> list[ipaddress.IPv4Address]:
    """The IPv4 addresses an IPv6 address carries (mapped, compatible, NAT64, 6to4,
    Teredo): where a packet to it may end up."""
    if isinstance(ip, ipaddress.IPv4Address):
        return []
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _NAT64 or (ip in _COMPAT and int(ip) > 1):
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def address_class(ip: Address) -> str | None:
    """Why `ip` is not a public address ('loopback', 'private', …), or None."""
    if ip in METADATA_ADDRESSES:
        return "metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_loopback:
        return "loopback"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address):
        if ip in _CGNAT:
            return "CGNAT"
        if ip == ipaddress.IPv4Address("255.255.255.255"):
            return "broadcast"
    elif ip.is_site_local:
        return "private"
    if ip.is_private:
        return "private"
    if ip.is_reserved or not ip.is_global:
        return "reserved"
    return None


@dataclass(frozen=True)
class Policy:
    """The ranges opened on top of the public internet (empty: only public addresses)."""

    allow: tuple[Network, ...] = ()

    def with_allowed(self, more: Iterable[Network]) -> Policy:
        return Policy((*self.allow, *more))

    def _allowed(self, ip: Address) -> bool:
        return any(ip in net for net in self.allow)

    def refusal(self, ip: Address) -> str | None:
        """Why a connection to `ip` is refused, or None when it is allowed. An IPv6
        address that carries an IPv4 one is judged by where it leads: the IPv4 address."""
        candidates: list[Address] = [*_inner_v4(ip)] or [ip]
        for candidate in candidates:
            kind = address_class(candidate)
            if kind == "metadata":
                return kind  # never opened: an allow-list is for receivers, not for this
            if kind is not None and not (self._allowed(candidate) or self._allowed(ip)):
                return kind
        return None


@dataclass(frozen=True)
class Target:
    """A URL whose every address passed the policy, and how to reach one of them."""

    url: str
    host: str  # as in the URL ('example.com', '[2001:db8::1]')
    addresses: tuple[str, ...] = field(default=())

    def pinned(self, address: str) -> tuple[str, dict[str, str], dict[str, str]]:
        """(url to connect to, headers, httpx extensions) for a POST to `address`:
        the URL's host replaced by the checked address, Host and TLS SNI kept."""
        original = httpx.URL(self.url)
        url = original.copy_with(host=address)
        host = self.host.strip("[]")
        return str(url), {"Host": original.netloc.decode("ascii")}, {"sni_hostname": host}


def _split(url: str) -> tuple[str, int, Address | None]:
    """(host without brackets or trailing dot, port, the address when the host is one)."""
    try:
        parsed = pydantic_core.Url(url)
    except pydantic_core.ValidationError:
        raise Refused("must be an http(s) URL", f"unparsable URL {url!r}") from None
    host = (parsed.host or "").lower()
    if parsed.scheme not in ("http", "https") or not host:
        raise Refused("must be an http(s) URL", f"scheme {parsed.scheme!r} host {host!r}")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    bare = host[1:-1] if host.startswith("[") else host.rstrip(".")
    try:
        return bare, port, ipaddress.ip_address(bare)
    except ValueError:
        pass
    try:  # what getaddrinfo would still read as an IPv4 address (inet_aton's forms)
        if bare and all(c in "0123456789abcdefx." for c in bare):
            return bare, port, ipaddress.IPv4Address(socket.inet_aton(bare))
    except OSError:
        pass
    return bare, port, None


def _refuse_address(policy: Policy, ip: Address, host: str) -> None:
    kind = policy.refusal(ip)
    if kind is not None:
        raise Refused(
            f"must not point at a {kind} address ({host}); give a public http(s) URL "
            "(an operator can open private ranges with ASKGATE_OUTBOUND_ALLOW)",
            f"{host} is {ip}, {kind}",
        )


def _is_localhost(host: str) -> bool:
    return host == "localhost" or host.endswith(".localhost")


def _judge(policy: Policy, url: str, host: str, addresses: Sequence[str]) -> Target:
    if not addresses:
        raise Refused(unresolvable_message(host), f"{host} resolved to nothing")
    for text in addresses:
        ip = ipaddress.ip_address(text.split("%", 1)[0])  # drop an IPv6 zone id
        kind = policy.refusal(ip)
        if kind is not None:
            # One message for "resolves inside" and "does not resolve": the tenant learns
            # nothing about names that exist only on the inside.
            raise Refused(unresolvable_message(host), f"{host} resolves to {ip} ({kind})")
    return Target(url, host, tuple(dict.fromkeys(addresses)))


def unresolvable_message(host: str) -> str:
    return (
        f"host {host} must resolve to public addresses only; give a public http(s) URL "
        "(an operator can open private ranges with ASKGATE_OUTBOUND_ALLOW)"
    )


def _literal(policy: Policy, url: str) -> tuple[Target | None, str, int]:
    """The target when the host needs no resolving (an address, or localhost, which is
    127.0.0.1 without asking DNS: RFC 6761), else (None, host, port)."""
    host, port, ip = _split(url)
    if host in METADATA_NAMES:
        raise Refused("must not point at a cloud metadata endpoint", f"{host} is metadata")
    if ip is None and _is_localhost(host):
        ip = LOOPBACK
    if ip is not None:
        _refuse_address(policy, ip, host)
        return Target(url, host, (str(ip),)), host, port
    return None, host, port


async def check(url: str, policy: Policy, resolver: Resolver) -> Target:
    """The URL's checked target, or Refused. Resolves the host through `resolver`."""
    target, host, port = _literal(policy, url)
    if target is not None:
        return target
    try:
        addresses = await asyncio.wait_for(resolver(host, port), RESOLVE_TIMEOUT_S)
    except (OSError, TimeoutError, UnicodeError) as exc:
        raise Unresolved(host, str(exc) or type(exc).__name__) from None
    return _judge(policy, url, host, addresses)


def check_sync(url: str, policy: Policy, resolver: SyncResolver) -> Target:
    """`check` for synchronous code (the webhook jobs)."""
    target, host, port = _literal(policy, url)
    if target is not None:
        return target
    try:
        addresses = resolver(host, port)
    except (OSError, UnicodeError) as exc:
        raise Unresolved(host, str(exc) or type(exc).__name__) from None
    return _judge(policy, url, host, addresses)


def _addresses(infos: Iterable[tuple[Any, ...]]) -> list[str]:
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """The machine's resolver (getaddrinfo), without blocking the event loop."""
    loop = asyncio.get_running_loop()
    return _addresses(await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM))


def system_resolver_sync(host: str, port: int) -> Sequence[str]:
    return _addresses(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
