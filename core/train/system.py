"""System metrics read from Linux's /proc and /sys (no psutil): CpuUse, CpuMemory,
CpuTemperature. Where the files do not exist (macOS, Windows, the browser) they report NaN.

They sample at most once a second (reading /proc on every batch would cost more than it tells).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

from .metric import Metric, MetricMetadata

_INTERVAL_S = 1.0


def read_cpu_times(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(busy, total) jiffies over all CPUs since boot, or None when unreadable."""
    try:
        first = Path(path).read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return None
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    total = sum(values[:8])  # guest times are already inside user/nice
    return total - idle, total


def read_memory(path: str = "/proc/meminfo") -> tuple[float, float] | None:
    """(used, total) in GiB: total - available, total; None when unreadable."""
    fields: dict[str, int] = {}
    try:
        for line in Path(path).read_text().splitlines():
            key, _, rest = line.partition(":")
            fields[key] = int(rest.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    total, available = fields.get("MemTotal"), fields.get("MemAvailable")
    if total is None or available is None:
        return None
    gib = 1024 * 1024  # the file counts kB
    return (total - available) / gib, total / gib


def read_temperature(root: str = "/sys/class/thermal") -> float | None:
    """The hottest thermal zone in degrees Celsius, or None."""
    temps = []
    for zone in Path(root).glob("thermal_zone*/temp"):
        try:
            temps.append(int(zone.read_text().strip()) / 1000.0)
        except (OSError, ValueError):
            continue
    return max(temps) if temps else None


class _Sampled(Metric):
    def __init__(self) -> None:
        super().__init__()
        self._last_time = -math.inf
        self._last = math.nan

    def _sample(self) -> float:
        raise NotImplementedError

    def _measure(self, item: Any, metadata: MetricMetadata) -> tuple[float, int]:
        now = time.monotonic()
        if now - self._last_time >= _INTERVAL_S:
            self._last_time = now
            self._last = self._sample()
        return self._last, 1


class CpuUse(_Sampled):
    """Percent of all CPUs busy since the previous sample."""

    name = "CpuUse"
    unit = "%"
    precision = 1

    def __init__(self, path: str = "/proc/stat") -> None:
        super().__init__()
        self.path = path
        self._prev = read_cpu_times(path)

    def _sample(self) -> float:
        now = read_cpu_times(self.path)
        prev, self._prev = self._prev, now
        if now is None or prev is None or now[1] == prev[1]:
            return math.nan
        return 100.0 * (now[0] - prev[0]) / (now[1] - prev[1])


class CpuMemory(_Sampled):
    """RAM in use by the whole machine, in GiB (total minus available)."""

    name = "CpuMemory"
    unit = "GiB"
    precision = 2

    def __init__(self, path: str = "/proc/meminfo") -> None:
        super().__init__()
        self.path = path
        self.total: float | None = None

    def _sample(self) -> float:
        found = read_memory(self.path)
        if found is None:
            return math.nan
        used, self.total = found
        return used

    def format_value(self, value: float) -> str:
        total = f" / {self.total:.2f}" if self.total else ""
        return f"{value:.2f}{total} GiB"

    def format(self, value: float, epoch: float) -> str:
        return self.format_value(value)


class CpuTemperature(_Sampled):
    """The hottest thermal zone, in degrees Celsius (NaN where the system exposes none)."""

    name = "CpuTemperature"
    unit = "°C"
    precision = 1

    def __init__(self, root: str = "/sys/class/thermal") -> None:
        super().__init__()
        self.root = root

    def _sample(self) -> float:
        found = read_temperature(self.root)
        return math.nan if found is None else found
