"""askgate under chaos (`make chaos`): a mixed workload while processes are killed -9 and
restarted at random, then a check that nothing accepted was lost or doubled.

- processes.py: the services as processes (kill -9, restart), Redis with AOF.
- platforms.py: local fake receivers (webhooks, the text platform).
- channels.py: what a channel plug-in is (its fake platform, its worker, its targets,
  how a human answers through it, what to verify), and the text channel's.
- chat.py: what the chat platforms' plug-ins share; telegram.py, slack.py, discord.py
  run each worker against its platform's fake from tests/integration and tap there.
- workload.py: agents that ask and wait (the Python client), humans that answer, some
  of them late.
- verify.py / report.py: the checks and docs/reliability.md.
"""
