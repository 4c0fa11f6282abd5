"""The outbound policy (askgate.domain.netguard): every spelling of an internal address is
refused, public ones pass, hostnames are judged by every address they resolve to (a
resolver the test controls; no real DNS), and allow-lists open ranges but never the
metadata endpoints."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence

import pytest
from askgate.domain import netguard
from askgate.domain.errors import ConfigError
from askgate.domain.netguard import Policy, Refused, Unresolved, check, check_sync, parse_cidrs
from askgate.settings import Settings, load

DNS = {
    "hook.example": ["93.184.216.34"],
    "v6.example": ["2606:2800:220:1:248:1893:25c8:1946"],
    "inside.example": ["10.0.0.5"],
    "mixed.example": ["93.184.216.34", "127.0.0.1"],
    "loop6.example": ["::1"],
    "mapped.example": ["::ffff:169.254.169.254"],
    "cgnat.example": ["100.64.1.1"],
    "zoned.example": ["fe80::1%eth0"],
    "empty.example": [],
}


async def resolve(host: str, port: int) -> Sequence[str]:
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return DNS[host]


def resolve_sync(host: str, port: int) -> Sequence[str]:
    return asyncio.run(resolve(host, port))


def judge(url: str, policy: Policy | None = None) -> netguard.Target:
    return asyncio.run(check(url, policy or Policy(), resolve))


# (url, the class named in the refusal) for every spelling the issue lists, and more.
REFUSED = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://127.0.0.1./x", "loopback"),
    ("https://127.0.0.1:8443/x", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[::ffff:127.0.0.1]/", "loopback"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::127.0.0.1]/", "loopback"),
    ("http://[2002:7f00:1::1]/", "loopback"),
    ("http://localhost/", "loopback"),
    ("http://localhost./", "loopback"),
    ("http://LOCALHOST:9000/", "loopback"),
    ("http://api.localhost/", "loopback"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://[fc00::1]/", "private"),
    ("http://[fec0::1]/", "private"),
    ("http://[::ffff:10.0.0.1]/", "private"),
    ("http://[64:ff9b::a00:1]/", "private"),
    ("http://100.64.0.1/", "CGNAT"),
    ("http://100.127.255.254/", "CGNAT"),
    ("http://169.254.1.1/", "link-local"),
    ("http://[fe80::1]/", "link-local"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://240.0.0.1/", "private"),
    ("http://192.0.2.1/", "private"),
    ("http://198.18.0.1/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://[fd00:ec2::254]/", "metadata"),
    ("http://[::ffff:169.254.169.254]/", "metadata"),
    ("http://100.100.100.200/", "metadata"),
]
NAMED_REFUSED = ["http://metadata.google.internal/computeMetadata/v1/", "http://metadata/"]
ALLOWED = [
    "http://8.8.8.8/hook",
    "https://[2606:4700::1111]/hook",
    "http://[64:ff9b::808:808]/",
    "http://100.128.0.1/",
    "https://hook.example/askgate",
    "https://v6.example:8443/x",
]
RESOLVES_INSIDE = [
    "http://inside.example/",
    "http://mixed.example/",
    "http://loop6.example/",
    "http://mapped.example/",
    "http://cgnat.example/",
    "http://zoned.example/",
    "http://empty.example/",
]


@pytest.mark.parametrize(("url", "kind"), REFUSED, ids=[u for u, _ in REFUSED])
def test_internal_address_is_refused(url: str, kind: str) -> None:
    """Every spelling of an internal address is refused, naming its class."""
    with pytest.raises(Refused) as exc:
        judge(url)
    assert exc.value.message.startswith(f"must not point at a {kind} address (")


@pytest.mark.parametrize(("url", "kind"), REFUSED, ids=[u for u, _ in REFUSED])
def test_internal_address_is_refused_by_the_sync_check(url: str, kind: str) -> None:
    """The webhook jobs' synchronous check refuses the same table."""
    with pytest.raises(Refused):
        check_sync(url, Policy(), resolve_sync)


@pytest.mark.parametrize("url", NAMED_REFUSED)
def test_metadata_names_are_refused(url: str) -> None:
    """The metadata endpoints' names are refused without resolving them."""
    with pytest.raises(Refused, match="metadata"):
        judge(url)


@pytest.mark.parametrize("url", ALLOWED)
def test_public_address_passes(url: str) -> None:
    """Public addresses and hosts that resolve only to public addresses pass."""
    target = judge(url)
    assert target.addresses and target.url == url


@pytest.mark.parametrize("url", RESOLVES_INSIDE)
def test_host_resolving_inside_is_refused_without_saying_where(url: str) -> None:
    """A host with any non-public address is refused; the message names only the host."""
    with pytest.raises(Refused) as exc:
        judge(url)
    host = url.split("/")[2]
    assert exc.value.message.startswith(f"host {host} must resolve to public addresses only")
    assert "10.0.0.5" not in exc.value.message and "127.0.0.1" not in exc.value.message


def test_unresolvable_host_gets_the_same_message() -> None:
    """A name that does not resolve is told apart from an internal one only in the log."""
    with pytest.raises(Unresolved) as exc:
        judge("http://nowhere.example/")
    assert exc.value.message == netguard.unresolvable_message("nowhere.example")


@pytest.mark.parametrize(
    "url", ["ftp://example.com/", "http://", "javascript:alert(1)", "not a url"]
)
def test_non_http_url_is_refused(url: str) -> None:
    """Only http(s) URLs with a host are considered."""
    with pytest.raises(Refused, match="http"):
        judge(url)


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:9/", "http://[::ffff:127.0.0.1]/", "http://localhost:9/", "http://127.1/"],
)
def test_allow_list_opens_a_range_in_every_spelling(url: str) -> None:
    """An allowed CIDR opens its addresses however they are written."""
    assert judge(url, Policy(parse_cidrs("127.0.0.0/8"))).addresses


def test_allow_list_opens_resolved_hosts() -> None:
    """A host resolving into an allowed range passes."""
    assert judge("http://inside.example/", Policy(parse_cidrs("10.0.0.0/8"))).addresses == (
        "10.0.0.5",
    )


def test_allow_list_never_opens_metadata() -> None:
    """169.254.169.254 stays refused even when its whole range is allowed."""
    with pytest.raises(Refused, match="metadata"):
        judge("http://169.254.169.254/", Policy(parse_cidrs("169.254.0.0/16,0.0.0.0/0")))


def test_tenant_ranges_add_to_the_operators() -> None:
    """with_allowed adds a tenant's ranges to the operator's."""
    policy = Policy(parse_cidrs("10.0.0.0/8")).with_allowed(parse_cidrs("192.168.0.0/16"))
    assert judge("http://10.1.1.1/", policy) and judge("http://192.168.3.3/", policy)
    with pytest.raises(Refused):
        judge("http://172.16.0.1/", policy)


@pytest.mark.parametrize("text", ["10.0.0.0/33", "nope", "10.0.0.0/8,fd00::/129"])
def test_bad_cidr_is_named(text: str) -> None:
    """A CIDR that does not parse is named with how to write one."""
    with pytest.raises(ValueError, match=r"is not a CIDR; write ranges such as 10\.0\.0\.0/8"):
        parse_cidrs(text)


def test_operator_allow_list_is_validated_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """ASKGATE_OUTBOUND_ALLOW with a bad CIDR stops the service with a message naming it."""
    monkeypatch.setenv("ASKGATE_OUTBOUND_ALLOW", "10.0.0.0/8,10.0.0.0/99")
    with pytest.raises(ConfigError, match=r"ASKGATE_OUTBOUND_ALLOW: .*'10\.0\.0\.0/99' is not"):
        load(Settings)


def test_operator_allow_list_becomes_the_policy() -> None:
    """Settings.outbound_policy() holds the operator's ranges."""
    policy = Settings(outbound_allow="10.0.0.0/8, fd00::/8").outbound_policy()
    assert [str(n) for n in policy.allow] == ["10.0.0.0/8", "fd00::/8"]


def test_pinned_request_keeps_host_and_sni() -> None:
    """The POST goes to the checked address with the URL's Host header and TLS name."""
    target = judge("https://hook.example:8443/askgate?x=1")
    url, headers, extensions = target.pinned("93.184.216.34")
    assert url == "https://93.184.216.34:8443/askgate?x=1"
    assert headers == {"Host": "hook.example:8443"}
    assert extensions == {"sni_hostname": "hook.example"}


def test_pinned_request_brackets_an_ipv6_address() -> None:
    """An IPv6 address is bracketed in the URL it connects to."""
    url, headers, _ = judge("http://v6.example/x").pinned("2606:2800:220:1:248:1893:25c8:1946")
    assert url == "http://[2606:2800:220:1:248:1893:25c8:1946]/x"
    assert headers == {"Host": "v6.example"}
