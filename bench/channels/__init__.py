"""Fake chat platforms for the channel figure, one module per channel.

A channel module defines `SPEC`, a `base.ChannelSpec`: what an ask's target looks like,
how a tenant is configured for the channel, how its real worker process is started
against the fake, and the fake itself (`base.Platform`: records each prompt and answers
it the way a human would, through the platform). Add a channel by adding a module here
and its name to CHANNELS; `bench/channel.py` and `bench/channels/platform.py` drive it
as black boxes (processes, HTTP, the fake's own records).
"""

from __future__ import annotations

import importlib
import os

from bench.channels.base import ChannelSpec

# BENCH_CHANNELS=slack,discord measures some of them (all by default).
CHANNELS = tuple(os.environ.get("BENCH_CHANNELS", "telegram,slack,discord").split(","))


def load(name: str) -> ChannelSpec:
    if name not in CHANNELS:
        raise ValueError(f"unknown channel {name!r}; pick from {', '.join(CHANNELS)}")
    spec: ChannelSpec = importlib.import_module(f"bench.channels.{name}").SPEC
    return spec
