"""askgate under chaos (`make chaos`): a mixed workload while processes are killed -9 and
restarted at random, then a check that nothing accepted was lost or doubled.

- processes.py: the services as processes (kill -9, restart), Redis with AOF.
- platforms.py: local fake receivers (webhooks, the text platform).
- channels.py: one plug-in per chat channel (its fake platform, its worker, its targets,
  how a human answers through it, what to verify); add Telegram/Slack/Discord here.
- workload.py: agents that ask and wait (the Python client), humans that answer.
- verify.py / report.py: the checks and docs/reliability.md.
"""
