"""`askgate-slack` (`python -m askgate_slack`): the Slack channel worker.

Any number of replicas may run: they share the `askgate:slack` consumer group, and a
prompt is claimed in Redis before it is posted. `--check` is the liveness probe.
"""

from __future__ import annotations

from askgate.runtime.runner import worker_main

from askgate_slack.config import SERVICE, SlackSettings


def main(argv: list[str] | None = None) -> None:
    worker_main("askgate-slack", SERVICE, SlackSettings, "askgate_slack.service", argv, __doc__)


if __name__ == "__main__":
    main()
