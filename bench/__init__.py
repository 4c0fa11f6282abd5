"""askgate's benchmarks: `make bench` (`python -m bench`), one module per figure.

- `asks`: asks/s through the API against two baselines doing the same Redis work
- `scaling`: the ask rate of 1 and of 2 API processes on this machine
- `wake`: answer → waiter wake-up, in-process and over HTTP
- `waiters`: long-poll waiters one API process holds, and RSS per waiter
- `sweep`: the sweeper process ending 100,000 questions due at once
- `memory`: Redis memory per pending ask and per retained final question
- `channel`: end-to-end channel latency, real workers against fake platforms

Support: `sample` (the ask and its recorded Redis calls), `procs` (child processes),
`report` (the table, docs/benchmarks.md and bench/out/*.json), `loadgen` and `bare_app`
(run as their own processes), `channels/` (one fake platform per chat channel).
"""
