"""Selecting events before analysis: time window, steps, hosts, threads, names, duration.

All criteria must hold (logical AND). Regexes use `re.search`. Name and
thread tests run once per unique name or track, not per event.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from tfpgo.errors import UserError
from tfpgo.trace.events import EventTable


@dataclass(frozen=True)
class EventFilter:
    """Keeps events that start in [start_ps, end_ps) and match every other criterion."""

    start_ps: int | None = None
    end_ps: int | None = None
    steps: frozenset[int] | None = None
    hosts: frozenset[str] | None = None
    thread_regex: str | None = None
    name_regex: str | None = None
    min_duration_ps: int = 0

    def is_empty(self) -> bool:
        return self == EventFilter()

    def apply(self, table: EventTable) -> EventTable:
        """The events of `table` that pass; step markers of dropped steps/hosts go too."""
        if self.is_empty():
            return table
        keep = np.ones(len(table), dtype=bool)
        if self.start_ps is not None:
            keep &= table.start_ps >= self.start_ps
        if self.end_ps is not None:
            keep &= table.start_ps < self.end_ps
        if self.min_duration_ps:
            keep &= table.duration_ps >= self.min_duration_ps
        if self.steps is not None:
            keep &= np.isin(table.step, np.fromiter(self.steps, np.int64, len(self.steps)))
        track_ok = np.array([self._track_ok(t.host, t.line) for t in table.tracks] or [True])
        keep &= track_ok[table.track_id]
        if self.name_regex is not None:
            pattern = _compile(self.name_regex, "--name")
            name_ok = np.array([bool(pattern.search(n)) for n in table.names] or [True])
            keep &= name_ok[table.name_id]
        result = table.subset(keep)
        result.steps = [
            m
            for m in table.steps
            if (self.steps is None or m.step in self.steps)
            and (self.hosts is None or m.host in self.hosts)
        ]
        return result

    def _track_ok(self, host: str, line: str) -> bool:
        if self.hosts is not None and host not in self.hosts:
            return False
        if self.thread_regex is not None:
            return bool(_compile(self.thread_regex, "--thread").search(line))
        return True


def _compile(pattern: str, flag: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise UserError(f"{flag} {pattern!r}: invalid regular expression ({error})") from None


def parse_steps(text: str) -> frozenset[int]:
    """`"0,2,5-7"` -> {0, 2, 5, 6, 7}."""
    steps: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, dash, high = part.partition("-")
        try:
            if dash:
                first, last = int(low), int(high)
                if last < first:
                    raise ValueError
                steps.update(range(first, last + 1))
            else:
                steps.add(int(part))
        except ValueError:
            raise UserError(f"--steps {text!r}: expected numbers and ranges like 0,2,5-7") from None
    if not steps:
        raise UserError(f"--steps {text!r}: no step given")
    return frozenset(steps)
