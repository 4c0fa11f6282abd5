"""`askgate-discord` (`python -m askgate_discord`): the Discord channel worker.

Any number of replicas may run: they share the `askgate:discord` consumer group, a prompt
is claimed in Redis before it is posted, and any replica can take any interaction.
`--check` is the liveness probe.
"""

from __future__ import annotations

from askgate.runtime.runner import worker_main

from askgate_discord.config import SERVICE, DiscordSettings


def main(argv: list[str] | None = None) -> None:
    worker_main(
        "askgate-discord", SERVICE, DiscordSettings, "askgate_discord.service", argv, __doc__
    )


if __name__ == "__main__":
    main()
