"""`askgate` command line: tenants, and `askgate run` (the whole stack on one machine)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

import orjson
from pydantic import ValidationError

from askgate.domain.errors import ConfigError
from askgate.domain.models import Remind, validation_message
from askgate.domain.signing import operator_link
from askgate.settings import Settings, load
from askgate.store import keys, tenants
from askgate.store.conn import Client, check_mode, connect

RUN_DIR = Path(os.environ.get("ASKGATE_RUN_DIR", ".run"))


def redis_url() -> str:
    """REDIS_URL, else the embedded Redis that `make run` started (.run/redis.url)."""
    url = os.environ.get("REDIS_URL")
    if url:
        return url
    saved = RUN_DIR / "redis.url"
    if saved.exists():
        return saved.read_text().strip()
    return "redis://127.0.0.1:6379/0"


def secret_key() -> str:
    """ASKGATE_SECRET_KEY, else the one `make run` generated (.run/secret_key)."""
    key = os.environ.get("ASKGATE_SECRET_KEY")
    if key:
        return key
    saved = RUN_DIR / "secret_key"
    return saved.read_text().strip() if saved.exists() else ""


def client() -> Client:
    """A client for REDIS_URL in the mode ASKGATE_REDIS_CLUSTER says (checked against the
    server: ConfigError when they disagree)."""
    url = redis_url()
    cluster = load(Settings).redis_cluster
    check_mode(url, cluster=cluster)
    return connect(url, cluster=cluster, max_connections=4, connect_timeout_s=2.0)


async def _tenant_create(name: str, max_pending: int | None, asks_per_s: int | None) -> int:
    redis = client()
    try:
        tenant, api_key = await tenants.create_tenant(
            redis, name, max_pending=max_pending, asks_per_s=asks_per_s
        )
    finally:
        await redis.aclose()
    print(f"tenant:         {tenant.id} ({name})", file=sys.stderr)
    print(f"webhook secret: {tenant.webhook_secret}", file=sys.stderr)
    print("api key (shown once; only its hash is stored):", file=sys.stderr)
    print(api_key)
    return 0


async def _tenant_list() -> int:
    redis = client()
    try:
        for tid in sorted(m.decode() for m in await redis.smembers(keys.TENANTS)):
            t = await tenants.load_tenant(redis, tid)
            if t:
                print(f"{t.id}\t{t.name}\t{', '.join(sorted(t.channels or {})) or '-'}")
    finally:
        await redis.aclose()
    return 0


async def _tenant_key(tenant_id: str) -> int:
    redis = client()
    try:
        if await tenants.load_tenant(redis, tenant_id) is None:
            print(f"no tenant {tenant_id}", file=sys.stderr)
            return 1
        print(await tenants.add_api_key(redis, tenant_id))
    finally:
        await redis.aclose()
    return 0


async def _tenant_channel(tenant_id: str, channel: str, pairs: list[str]) -> int:
    config: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            print(f"expected key=value, got {pair!r}", file=sys.stderr)
            return 2
        config[key] = value
    redis = client()
    try:
        await tenants.set_channel_config(redis, tenant_id, channel, config)
    except KeyError:
        print(f"no tenant {tenant_id}", file=sys.stderr)
        return 1
    finally:
        await redis.aclose()
    print(f"{tenant_id}: {channel} configured ({', '.join(sorted(config))})", file=sys.stderr)
    return 0


async def _tenant_outbound(tenant_id: str, cidrs: str) -> int:
    redis = client()
    try:
        nets = await tenants.set_outbound_allow(redis, tenant_id, "" if cidrs == "none" else cidrs)
    except ValueError as exc:
        print(f"askgate tenant outbound: {exc}", file=sys.stderr)
        return 2
    except KeyError:
        print(f"no tenant {tenant_id}", file=sys.stderr)
        return 1
    finally:
        await redis.aclose()
    allowed = ", ".join(nets) if nets else "public addresses only"
    print(f"{tenant_id}: outbound URLs may reach {allowed}", file=sys.stderr)
    return 0


async def _tenant_remind(tenant_id: str, pairs: list[str]) -> int:
    remind: Remind | None = None
    if pairs != ["off"]:
        values: dict[str, str] = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                print(
                    f"expected key=value (every_s, max, final_warning_s) or 'off', got {pair!r}",
                    file=sys.stderr,
                )
                return 2
            values[key] = value
        try:
            remind = Remind.model_validate_json(
                orjson.dumps(
                    {k: int(v) if v.lstrip("-").isdigit() else v for k, v in values.items()}
                )
            )
        except ValidationError as exc:
            for line in validation_message(exc):
                print(f"remind.{line}", file=sys.stderr)
            return 2
    redis = client()
    try:
        await tenants.set_remind(redis, tenant_id, remind)
    except KeyError:
        print(f"no tenant {tenant_id}", file=sys.stderr)
        return 1
    finally:
        await redis.aclose()
    said = remind.model_dump_json(exclude_none=True) if remind else "off"
    print(f"{tenant_id}: default reminders {said}", file=sys.stderr)
    return 0


async def _operator_link(tenant_id: str, ttl_s: int) -> int:
    settings = load(Settings)
    secret = secret_key()
    if len(secret) < 32:
        print(
            "askgate: ASKGATE_SECRET_KEY must be set (the key the Control UI checks links with)",
            file=sys.stderr,
        )
        return 2
    redis = client()
    try:
        if await tenants.load_tenant(redis, tenant_id) is None:
            print(f"no tenant {tenant_id}", file=sys.stderr)
            return 1
    finally:
        await redis.aclose()
    print(operator_link(settings.web_base_url, secret, tenant_id, ttl_s))
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="askgate", description="askgate administration")
    sub = parser.add_subparsers(dest="cmd", required=True)
    tp = sub.add_parser("tenant", help="manage tenants and API keys")
    tsub = tp.add_subparsers(dest="tcmd", required=True)
    create = tsub.add_parser("create", help="create a tenant and print its API key")
    create.add_argument("name")
    create.add_argument("--max-pending", type=int, default=None)
    create.add_argument("--asks-per-s", type=int, default=None)
    tsub.add_parser("list", help="list tenants")
    key = tsub.add_parser("key", help="issue another API key for a tenant")
    key.add_argument("tenant_id")
    ch = tsub.add_parser("channel", help="set a tenant's channel credentials")
    ch.add_argument("tenant_id")
    ch.add_argument("channel", help="telegram, slack, discord, …")
    ch.add_argument("settings", nargs="+", help="key=value, e.g. bot_token=123:ABC")
    out = tsub.add_parser(
        "outbound",
        help="ranges this tenant's callback and text URLs may reach beyond the "
        "public internet (replaces the list; 'none' clears it)",
    )
    out.add_argument("tenant_id")
    out.add_argument("cidrs", help="comma-separated CIDRs, e.g. 10.1.0.0/16,fd00::/8, or none")
    rm = tsub.add_parser(
        "remind", help="set a tenant's default reminders (asks without 'remind' get them)"
    )
    rm.add_argument("tenant_id")
    rm.add_argument("settings", nargs="+", help="every_s=300 max=3 [final_warning_s=120], or off")
    op = tsub.add_parser(
        "operator-link",
        help="print a signed link to the tenant's operator "
        "page in the Control UI (every pending question, live)",
    )
    op.add_argument("tenant_id")
    op.add_argument(
        "--ttl-s", type=int, default=86_400, help="how long the link works (seconds, default a day)"
    )
    run = sub.add_parser("run", help="start the whole stack (Redis if REDIS_URL is unset)")
    run.add_argument("--no-redis", action="store_true", help="never start an embedded Redis")
    args = parser.parse_args(argv)

    if args.cmd == "run":
        from askgate.dev.devstack import run_stack

        raise SystemExit(run_stack(embedded_redis=not args.no_redis))
    try:
        if args.tcmd == "create":
            code = asyncio.run(_tenant_create(args.name, args.max_pending, args.asks_per_s))
        elif args.tcmd == "list":
            code = asyncio.run(_tenant_list())
        elif args.tcmd == "key":
            code = asyncio.run(_tenant_key(args.tenant_id))
        elif args.tcmd == "outbound":
            code = asyncio.run(_tenant_outbound(args.tenant_id, args.cidrs))
        elif args.tcmd == "operator-link":
            code = asyncio.run(_operator_link(args.tenant_id, max(60, args.ttl_s)))
        elif args.tcmd == "remind":
            code = asyncio.run(_tenant_remind(args.tenant_id, args.settings))
        else:
            code = asyncio.run(_tenant_channel(args.tenant_id, args.channel, args.settings))
    except ConfigError as exc:
        print(f"askgate: {exc.message}", file=sys.stderr)
        code = 2
    raise SystemExit(code)


if __name__ == "__main__":
    main()
