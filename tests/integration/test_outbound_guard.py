"""The outbound policy end to end: refused at ask time with a 422 naming the field,
re-checked at send time (a DNS answer that turns internal is refused and recorded
coarsely), POSTs made to the checked address, redirects never followed. Hostnames are
resolved by resolvers the tests control; receivers are local."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import httpx
import pytest
from askgate.store import keys
from askgate.store.tenants import load_tenant, set_outbound_allow
from askgate.store.webhooks import list_dead
from askgate_text.client import TextClient
from askgate_text.config import TextSettings
from askgate_webhooks.config import WebhookSettings
from askgate_webhooks.jobs import attempt_delivery
from askgate_webhooks.worker import WebhookEnqueuer
from redis import Redis as SyncRedis
from redis.asyncio import Redis

from tests.integration.http_receiver import Receiver, Reply
from tests.support.asks import SECRET, Tenant, ask_body, make_settings
from tests.support.cli import askgate_cli
from tests.support.waiting import eventually

PUBLIC = "93.184.216.34"
LOCAL = "127.0.0.0/8"


class Dns:
    """A resolver the test controls: host -> addresses (unknown hosts do not resolve)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        return self.sync(host, port)

    def sync(self, host: str, port: int) -> Sequence[str]:
        if host not in self.answers:
            raise OSError(f"{host} does not resolve")
        return self.answers[host]


GuardedClient = Callable[..., AsyncIterator[httpx.AsyncClient]]


@pytest.fixture
async def api(redis_url: str, redis: Redis) -> AsyncIterator[Any]:
    """Starts the API app with a given resolver and settings; yields a starter."""
    from askgate_api.app import create_app

    stack: list[Any] = []

    async def start(dns: Dns, **overrides: Any) -> httpx.AsyncClient:
        app = create_app(make_settings(redis_url, **overrides), resolver=dns)
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a")
        stack.append((lifespan, client))
        return client

    yield start
    for lifespan, client in reversed(stack):
        await client.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture
def sync_redis(redis_url: str) -> Iterator[SyncRedis]:
    client = SyncRedis.from_url(redis_url)
    yield client
    client.close()


async def ask(client: httpx.AsyncClient, tenant: Tenant, **extra: Any) -> httpx.Response:
    return await client.post("/v1/questions", json=ask_body(**extra), headers=tenant.headers)


# -- ask time ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/",
        "http://[::ffff:127.0.0.1]/",
        "http://2130706433/",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
async def test_internal_callback_url_is_422(api: Any, tenant: Tenant, url: str) -> None:
    """An internal callback_url is a 422 naming the field; nothing is stored."""
    client = await api(Dns({}))
    r = await ask(client, tenant, session="cb", callback_url=url)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith("callback_url must not point at a ")
    listed = await client.get("/v1/questions", params={"session": "cb"}, headers=tenant.headers)
    assert listed.json()["questions"] == []


async def test_internal_text_target_is_422_naming_its_index(api: Any, tenant: Tenant) -> None:
    """A text target's url is checked too, and the error names targets[i].url."""
    client = await api(Dns({"hook.example": [PUBLIC]}))
    targets = [
        {"channel": "web"},
        {"channel": "text", "url": "https://hook.example/a"},
        {"channel": "text", "url": "http://10.1.2.3/b"},
    ]
    r = await ask(client, tenant, targets=targets)
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(
        "targets[2].url must not point at a private address (10.1.2.3)"
    )


async def test_internal_url_in_an_escalation_step_is_422(api: Any, tenant: Tenant) -> None:
    """An escalation step's text target is checked like the ask's, named by its path."""
    client = await api(Dns({"hook.example": [PUBLIC]}))
    step = {"after_s": 60, "targets": [{"channel": "text", "url": "http://169.254.169.254/"}]}
    r = await ask(client, tenant, targets=[{"channel": "web"}], escalate=[step])
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith("escalate[0].targets[0].url must not point at")


async def test_host_resolving_inside_is_422_without_the_address(api: Any, tenant: Tenant) -> None:
    """A host that resolves to an internal address is refused; the message hides where."""
    client = await api(Dns({"jenkins.corp": ["10.0.0.7"]}))
    r = await ask(client, tenant, callback_url="https://jenkins.corp/hook")
    message = r.json()["error"]["message"]
    assert r.status_code == 422 and "10.0.0.7" not in message
    assert message.startswith("callback_url host jenkins.corp must resolve to public addresses")


async def test_unresolvable_host_is_422_with_the_same_message(api: Any, tenant: Tenant) -> None:
    """A host that does not resolve gets the same message as an internal one."""
    client = await api(Dns({}))
    r = await ask(client, tenant, callback_url="https://nowhere.example/hook")
    assert r.status_code == 422
    assert r.json()["error"]["message"].startswith(
        "callback_url host nowhere.example must resolve to public addresses"
    )


async def test_public_host_is_accepted(api: Any, tenant: Tenant) -> None:
    """A host with only public addresses is a 201."""
    client = await api(Dns({"hook.example": [PUBLIC]}))
    r = await ask(
        client,
        tenant,
        callback_url="https://hook.example/hook",
        targets=[{"channel": "web"}, {"channel": "text", "url": "https://hook.example/t"}],
    )
    assert r.status_code == 201, r.text


async def test_operator_allow_list_opens_a_range(api: Any, tenant: Tenant) -> None:
    """ASKGATE_OUTBOUND_ALLOW opens its ranges for every tenant."""
    client = await api(Dns({}), outbound_allow="10.0.0.0/8")
    assert (await ask(client, tenant, callback_url="http://10.9.9.9/h")).status_code == 201


async def test_tenant_allow_list_opens_a_range_for_that_tenant_only(
    api: Any, tenant: Tenant, other_tenant: Tenant, redis: Redis
) -> None:
    """A tenant's own ranges open them for its asks, not for another tenant's."""
    await set_outbound_allow(redis, tenant.id, "10.0.0.0/8")
    client = await api(Dns({}))
    assert (await ask(client, tenant, callback_url="http://10.9.9.9/h")).status_code == 201
    assert (await ask(client, other_tenant, callback_url="http://10.9.9.9/h")).status_code == 422


async def test_cli_sets_and_clears_a_tenants_ranges(
    tenant: Tenant, redis: Redis, redis_url: str
) -> None:
    """`askgate tenant outbound T CIDRS` stores the ranges; `none` clears them; a bad CIDR
    is refused with exit code 2."""

    async def cli(*args: str) -> int:
        done = await asyncio.to_thread(askgate_cli, redis_url, "tenant", "outbound", *args)
        return done.returncode

    assert await cli(tenant.id, "10.0.0.0/8,fd00::/8") == 0
    record = await load_tenant(redis, tenant.id)
    assert record is not None and record.outbound_allow == ("10.0.0.0/8", "fd00::/8")
    assert await cli(tenant.id, "10.0.0.0/99") == 2
    assert await cli(tenant.id, "none") == 0
    record = await load_tenant(redis, tenant.id)
    assert record is not None and record.outbound_allow == ()


# -- send time: webhooks -----------------------------------------------------------------


async def answered_with_callback(client: httpx.AsyncClient, tenant: Tenant, url: str) -> str:
    r = await ask(client, tenant, callback_url=url)
    assert r.status_code == 201, r.text
    qid = str(r.json()["id"])
    await client.post(f"/v1/questions/{qid}/skip", headers=tenant.headers)
    return qid


async def webhook_of(redis: Redis, qid: str) -> dict[str, Any]:
    import orjson

    raw = await redis.hget(keys.question(qid), "webhook")
    return dict(orjson.loads(raw))


async def test_webhook_rebinding_is_refused_at_send_time(
    api: Any, tenant: Tenant, redis: Redis, redis_url: str, sync_redis: SyncRedis
) -> None:
    """A host public at ask time but internal at send time is not posted to: the attempt
    is recorded as refused (coarse), and the delivery is a dead letter."""
    with Receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        client = await api(Dns({"rebind.example": [PUBLIC]}))
        qid = await answered_with_callback(client, tenant, f"http://rebind.example:{port}/hook")
        settings = WebhookSettings(redis_url=redis_url)
        WebhookEnqueuer(sync_redis, settings).start(qid)
        inside = Dns({"rebind.example": ["127.0.0.1"]})
        verdict = await asyncio.to_thread(
            lambda: attempt_delivery(sync_redis, settings, qid, 1, resolver=inside.sync)
        )
        assert verdict == "failed" and receiver.received == []
    hook = await webhook_of(redis, qid)
    assert hook["status"] == "failed"
    assert [a["error"] for a in hook["attempts"]] == ["refused: address not allowed"]
    (dead,) = await list_dead(redis, tenant.id)
    assert dead["last"]["error"] == "refused: address not allowed"


async def test_webhook_connects_to_the_checked_address_with_its_host(
    api: Any, tenant: Tenant, redis_url: str, sync_redis: SyncRedis
) -> None:
    """The POST goes to the address that was checked, with the URL's Host header."""
    with Receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        dns = Dns({"hook.example": ["127.0.0.1"]})
        client = await api(dns, outbound_allow=LOCAL)
        qid = await answered_with_callback(client, tenant, f"http://hook.example:{port}/hook")
        settings = WebhookSettings(redis_url=redis_url, outbound_allow=LOCAL)
        WebhookEnqueuer(sync_redis, settings).start(qid)
        assert (
            await asyncio.to_thread(
                lambda: attempt_delivery(sync_redis, settings, qid, 1, resolver=dns.sync)
            )
            == "delivered"
        )
        (req,) = receiver.received
    assert req.path == "/hook" and req.headers["host"] == f"hook.example:{port}"


async def test_webhook_redirect_is_not_followed(
    api: Any, tenant: Tenant, redis: Redis, redis_url: str, sync_redis: SyncRedis
) -> None:
    """A 3xx (here to the metadata address) is a final answer: nothing is followed."""
    redirect = Reply(302, {"Location": "http://169.254.169.254/latest/meta-data/"})
    with Receiver(default=redirect) as receiver:
        client = await api(Dns({}), outbound_allow=LOCAL)
        qid = await answered_with_callback(client, tenant, receiver.url)
        settings = WebhookSettings(redis_url=redis_url, outbound_allow=LOCAL)
        WebhookEnqueuer(sync_redis, settings).start(qid)
        assert await asyncio.to_thread(attempt_delivery, sync_redis, settings, qid, 1) == "failed"
        assert len(receiver.received) == 1
    hook = await webhook_of(redis, qid)
    assert [a["status_code"] for a in hook["attempts"]] == [302]


async def test_webhook_connection_error_is_coarse(
    api: Any, tenant: Tenant, redis: Redis, redis_url: str, sync_redis: SyncRedis
) -> None:
    """A refused connection shows as 'connection failed', never the raw error."""
    with Receiver() as closed:
        url = closed.url
    client = await api(Dns({}), outbound_allow=LOCAL)
    qid = await answered_with_callback(client, tenant, url)
    settings = WebhookSettings(redis_url=redis_url, outbound_allow=LOCAL)
    WebhookEnqueuer(sync_redis, settings).start(qid)
    await asyncio.to_thread(attempt_delivery, sync_redis, settings, qid, 1)
    hook = await webhook_of(redis, qid)
    assert hook["attempts"][0] == {"at": hook["attempts"][0]["at"], "error": "connection failed"}


# -- send time: the text channel ---------------------------------------------------------


@pytest.fixture
async def text_service(redis_url: str, redis: Redis) -> AsyncIterator[Any]:
    """Starts the text channel (the kit's service, the text adapter) with a resolver the
    test gives; stops it after the test."""
    from askgate.channels import ChannelService
    from askgate_text.adapter import TextAdapter

    running: list[tuple[Any, TextClient]] = []

    async def start(dns: Dns, **overrides: Any) -> None:
        settings = TextSettings(
            redis_url=redis_url,
            secret_key=SECRET,
            delivery_backoff_s=0.01,
            consumer_block_ms=50,
            **overrides,
        )
        service = ChannelService("text", settings)
        client = TextClient(settings, service.redis, resolver=dns)
        service.use(TextAdapter(service.redis, client))
        await service.start()
        running.append((service, client))
        await eventually(lambda: redis.exists(keys.channel_live("text")), "the text worker", 30)

    yield start
    for service, client in running:
        await service.close()
        await client.aclose()


async def delivery(client: httpx.AsyncClient, tenant: Tenant, qid: str) -> dict[str, Any]:
    """The question once its text target's delivery settled (bounded wait)."""

    async def settled() -> bool:
        q = (await client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
        return q["deliveries"][0]["status"] in ("delivered", "failed")

    await eventually(settled, "the text delivery to settle", 30)
    return dict((await client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json())


async def test_text_rebinding_is_refused_at_send_time(
    api: Any, tenant: Tenant, text_service: Any
) -> None:
    """A text target turning internal after the ask is not posted to; the delivery fails
    with the coarse class, and with no other target the question ends delivery_failed."""
    with Receiver() as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        await text_service(Dns({"chat.example": ["127.0.0.1"]}))
        client = await api(Dns({"chat.example": [PUBLIC]}))
        r = await ask(
            client, tenant, targets=[{"channel": "text", "url": f"http://chat.example:{port}/in"}]
        )
        q = await delivery(client, tenant, r.json()["id"])
        assert receiver.received == []
    assert q["deliveries"][0]["error"] == "refused: address not allowed"
    await eventually(lambda: _ended(client, tenant, q["id"]), "the question to end", 30)


async def _ended(client: httpx.AsyncClient, tenant: Tenant, qid: str) -> bool:
    q = (await client.get(f"/v1/questions/{qid}", headers=tenant.headers)).json()
    return bool((q["status"], q["reason"]) == ("no_answer", "delivery_failed"))


async def test_text_tenant_allow_list_applies_at_send_time(
    api: Any, tenant: Tenant, redis: Redis, text_service: Any
) -> None:
    """A tenant's own ranges let its prompt through to an on-prem platform."""
    await set_outbound_allow(redis, tenant.id, LOCAL)
    with Receiver() as receiver:
        await text_service(Dns({}))
        client = await api(Dns({}))
        r = await ask(client, tenant, targets=[{"channel": "text", "url": receiver.url}])
        q = await delivery(client, tenant, r.json()["id"])
        assert q["deliveries"][0]["status"] == "delivered" and len(receiver.received) == 1


async def test_text_redirect_is_not_followed(api: Any, tenant: Tenant, text_service: Any) -> None:
    """A platform answering 307 to an internal address fails the target (HTTP 307)."""
    redirect = Reply(307, {"Location": "http://10.0.0.1/"})
    with Receiver(default=redirect) as receiver:
        await text_service(Dns({}), outbound_allow=LOCAL)
        client = await api(Dns({}), outbound_allow=LOCAL)
        r = await ask(client, tenant, targets=[{"channel": "text", "url": receiver.url}])
        q = await delivery(client, tenant, r.json()["id"])
        assert len(receiver.received) == 1
    assert q["deliveries"][0]["error"] == "HTTP 307"
