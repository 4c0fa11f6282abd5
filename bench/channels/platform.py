"""The fake platform as its own process, playing the chat platform and the human.

    python -m bench.channels.platform CHANNEL --worker-port P --tenant T [--think-ms 500]

Prints JSON lines: `{"base": url}` once serving, `{"ready": true}` once the worker has
connected. Reads commands on stdin, one JSON object per line:

    {"cmd": "answer", "on": true}   answer each prompt --think-ms after it arrived (or not)
    {"cmd": "count"}                → {"prompts": n, "answered": n, "summaries": n}
    {"cmd": "count", "convs": [c…]} → {"prompts": how many of those conversations have one}
    {"cmd": "dump", "path": P}      writes every record to P as JSON → {"dumped": P}

End of stdin stops it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from bench.channels import load
from bench.channels.base import Platform, Prompt, Worker


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Recorder:
    """The hooks: when each prompt arrived, when it was answered, when it was summarised."""

    def __init__(self, think_s: float) -> None:
        self.think_s = think_s
        self.answering = True
        self.platform: Platform | None = None
        self.prompts: dict[str, list[float]] = {}
        self.answered_at: dict[str, float] = {}
        self.summaries: dict[str, float] = {}

    def ready(self) -> None:
        emit({"ready": True})

    def prompt(self, prompt: Prompt) -> None:
        self.prompts.setdefault(prompt.conv, []).append(prompt.t)
        if self.answering:
            asyncio.get_running_loop().call_later(self.think_s, self._answer, prompt)

    def _answer(self, prompt: Prompt) -> None:
        assert self.platform is not None
        self.platform.answer(prompt)

    def answered(self, conv: str, t: float) -> None:
        self.answered_at[conv] = t

    def summary(self, conv: str, t: float) -> None:
        self.summaries.setdefault(conv, t)


async def main(channel: str, think_s: float, worker: Worker) -> None:
    rec = Recorder(think_s)
    platform = rec.platform = load(channel).platform(rec, worker)
    emit({"base": await platform.start()})
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        while line := await reader.readline():
            cmd = json.loads(line)
            if cmd["cmd"] == "answer":
                rec.answering = bool(cmd["on"])
                emit({"answering": rec.answering})
            elif cmd["cmd"] == "count" and "convs" in cmd:
                emit({"prompts": sum(1 for c in cmd["convs"] if c in rec.prompts)})
            elif cmd["cmd"] == "count":
                emit(
                    {
                        "prompts": sum(len(v) for v in rec.prompts.values()),
                        "answered": len(rec.answered_at),
                        "summaries": len(rec.summaries),
                    }
                )
            elif cmd["cmd"] == "dump":
                records = {
                    "prompts": rec.prompts,
                    "answered": rec.answered_at,
                    "summaries": rec.summaries,
                }
                # A blocking write, on purpose: nothing is being measured during a dump.
                Path(cmd["path"]).write_text(json.dumps(records))  # noqa: ASYNC240
                emit({"dumped": cmd["path"]})
    finally:
        await platform.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("channel")
    parser.add_argument("--think-ms", type=float, default=500.0)
    parser.add_argument("--worker-port", type=int, required=True)
    parser.add_argument("--tenant", required=True)
    args = parser.parse_args()
    import uvloop

    uvloop.run(main(args.channel, args.think_ms / 1000, Worker(args.worker_port, args.tenant)))
