"""The report: one table of every figure with its goal, notes and the method of each
figure, written to docs/benchmarks.md, and the same plus the raw numbers as JSON in
bench/out/ (git-ignored)."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.procs import ROOT

DOC = ROOT / "docs" / "benchmarks.md"
OUT = ROOT / "bench" / "out"


# A virtual machine's cores are lent: /proc/stat's steal is the time the hypervisor ran
# something else while this machine had work for the core. Latencies suffer most.
STEAL = "the hypervisor held back {:.0f}% of the CPU time the machine wanted (steal)"


@dataclass
class Row:
    figure: str
    value: str
    goal: str = ""
    ok: bool | None = None

    @property
    def mark(self) -> str:
        return "" if self.ok is None else ("PASS" if self.ok else "MISS")


@dataclass
class Figure:
    """One module's share of the report."""

    name: str
    title: str
    method: str
    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    blocks: list[str] = field(default_factory=list)  # extra markdown sections
    data: dict[str, Any] = field(default_factory=dict)  # raw numbers, JSON only
    seconds: float = 0.0
    load: str = ""  # the 1-minute load average when it started → when it ended
    steal: float | None = None  # procs.steal_share over the figure
    quiet: bool = False  # a scratch figure whose rows another one reports

    def add(self, figure: str, value: str, goal: str = "", ok: bool | None = None) -> None:
        row = Row(figure, value, goal, ok)
        self.rows.append(row)
        if not self.quiet:
            print(
                f"  {figure}: {value}" + (f"   goal {goal} {row.mark}" if goal else ""), flush=True
            )

    def note(self, text: str) -> None:
        self.notes.append(text)
        if not self.quiet:
            print(f"  - {text}", flush=True)

    def block(self, markdown: str) -> None:
        self.blocks.append(markdown)


@dataclass
class Report:
    meta: dict[str, Any]
    figures: list[Figure] = field(default_factory=list)

    def figure(self, name: str, title: str, method: str) -> Figure:
        fig = Figure(name, title, method)
        self.figures.append(fig)
        print(f"\n[{name}] {title}", flush=True)
        return fig

    def table(self) -> str:
        lines = ["| figure | measured | goal | |", "|---|---|---|---|"]
        for fig in self.figures:
            lines += [f"| {r.figure} | {r.value} | {r.goal} | {r.mark} |" for r in fig.rows]
        return "\n".join(lines)

    def markdown(self) -> str:
        m = self.meta
        md = [
            "# askgate benchmarks",
            "",
            "Written by `make bench` (`python -m bench`, the package `bench/`); rerun it to "
            "refresh this page. The raw numbers of the run are in `bench/out/` (JSON, not "
            "committed).",
            "",
            f"- Machine: {m['machine']}",
            f"- Redis: {m['redis']}",
            f"- Run: {m['when']}, {m['elapsed_s']:.0f} s"
            + (" (--quick: smaller sizes)" if m.get("quick") else ""),
            f"- Load on the machine at the start (1-minute load average): {m['load_start']}, "
            f"at the end: {m['load_end']}"
            + (f"; {STEAL.format(m['steal'] * 100)}" if m.get("steal") is not None else ""),
            "",
            self.table(),
            "",
            "Everything runs on this one 2-core machine over 127.0.0.1: a fresh "
            "`redis-server` on a free port, askgate's services, the baselines and the load "
            "generators as separate processes. The machine is a virtual one whose cores "
            "are shared with other work: absolute numbers move between runs, by a factor "
            "of two or more between hours (the steal under each figure says how much of "
            "the CPU time it wanted the hypervisor held back). Compare figures measured in "
            "the same run, by ratio. Percentiles are nearest-rank.",
            "",
        ]
        for fig in self.figures:
            md += [f"## {fig.title}", ""]
            if fig.notes:
                md += ["Notes from this run:", "", *[f"- {n}" for n in fig.notes], ""]
            md += ["How measured: " + fig.method.strip(), ""]
            if fig.load:
                md += [
                    f"This figure took {fig.seconds:.0f} s; the machine's 1-minute load "
                    f"average went {fig.load} meanwhile (2 cores)"
                    + (f"; {STEAL.format(fig.steal * 100)}" if fig.steal is not None else "")
                    + ".",
                    "",
                ]
            for block in fig.blocks:
                md += [block.strip(), ""]
        return "\n".join(md)

    def write(self, doc: bool) -> Path:
        OUT.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        data = {
            "meta": self.meta,
            "figures": [
                {**asdict(f), "rows": [{**asdict(r), "mark": r.mark} for r in f.rows]}
                for f in self.figures
            ],
        }
        text = json.dumps(data, indent=1, default=str)
        path = OUT / f"bench-{stamp}.json"
        path.write_text(text)
        (OUT / "latest.json").write_text(text)
        if doc:
            DOC.write_text(self.markdown())
        return path


def pct(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..1) of a non-empty list."""
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(p * len(s)) - 1))] if s else float("nan")
