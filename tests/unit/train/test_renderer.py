"""Renderers: plain lines for logs, a repainted block on a terminal; the summary table."""

from __future__ import annotations

import io

from pyrite.train import InMemoryMetricLogger, LearnerSummary, MetricEntry, PlainRenderer
from pyrite.train.renderer import Progress, TerminalRenderer, default_renderer, format_duration

P = Progress("train", 2, 10, 50, 200, 3200, 4.0)
E = [MetricEntry("Loss", "0.2500 (epoch 0.3000)", 0.25, 64, 0.3)]


def test_progress_speed_and_eta() -> None:
    assert P.speed == 800.0
    assert P.eta_s == 12.0
    assert format_duration(12.0) == "0:12" and format_duration(3723) == "1:02:03"
    assert format_duration(None) == "?"


def test_plain_renderer_lines() -> None:
    out = io.StringIO()
    r = PlainRenderer(out, interval_s=0.0)
    r.update(P, E)
    r.end_split(P, {"Loss": "0.3000"})
    first, second = out.getvalue().splitlines()
    assert first == ("epoch 2/10 train iteration 50/200 | 800 items/s | ETA 0:12 | "
                     "Loss 0.2500 (epoch 0.3000)")
    assert second == "epoch 2/10 train done: Loss 0.3000 | 50 iterations in 0:04 (800 items/s)"


def test_terminal_renderer_repaints_in_place() -> None:
    out = io.StringIO()
    r = TerminalRenderer(out, fps=1e9)
    r.update(P, E)
    r.update(P, E)
    text = out.getvalue()
    assert "\x1b[3F\x1b[J" in text  # the second paint moves up over the first block's 3 lines
    assert "iteration 50/200" in text and "ETA 0:12" in text and "800 items/s" in text
    assert "Loss  0.2500 (epoch 0.3000)" in text


def test_default_renderer_is_plain_off_a_terminal() -> None:
    assert isinstance(default_renderer(io.StringIO()), PlainRenderer)


def test_summary_table() -> None:
    logger = InMemoryMetricLogger()
    for epoch, (a, b) in enumerate([(0.5, 0.7), (0.2, 0.4), (0.3, 0.3)], 1):
        logger.log(MetricEntry("Loss", "", a, 10, a), epoch, "train")
        logger.log(MetricEntry("Loss", "", b, 30, b), epoch, "train")
    summary = LearnerSummary.from_logger(logger, {"train": ["Loss"], "valid": ["Loss"]},
                                         range(1, 4))
    assert summary.table().splitlines() == [
        "| Split | Metric | Min.   | Epoch | Max.   | Epoch |",
        "|-------|--------|--------|-------|--------|-------|",
        "| Train | Loss   | 0.3000 | 3     | 0.6500 | 1     |",
    ]
    assert str(summary).startswith("TRAINING\nTotal epochs: 3\n")
