"""Counters of `pyrite.compile` in this process (`pyrite.webgpu.stats()["compile"]`)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CompileStats:
    captures: int = 0  # steps run eagerly while recorded
    replays: int = 0  # steps replayed from a program
    fallbacks: int = 0  # steps refused (then run eagerly for good), one per signature
    guard_misses: int = 0  # replays declined because a traced value took another path
    reasons: dict[str, int] = field(default_factory=dict)  # why steps were refused

    def as_dict(self) -> dict[str, object]:
        return {"captures": self.captures, "replays": self.replays,
                "fallbacks": self.fallbacks, "guard_misses": self.guard_misses,
                "reasons": dict(self.reasons)}


STATS = CompileStats()

__all__ = ["STATS", "CompileStats"]
