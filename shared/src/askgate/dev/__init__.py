"""For people, not for services: the `askgate` CLI, `make run`'s whole-stack supervisor
and the embedded redis-server. No service imports this package."""
