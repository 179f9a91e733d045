"""The live dashboard's server side: the broadcaster replays a run to late pages and streams
new events live, `/train/events` is server-sent events that end after the run's end, and the
page and its scripts are served, in `pyrite serve`'s app and in the dashboard's own server."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from pyrite.server import create_app
from pyrite.server.dashboard import (
    Broadcaster,
    DashboardRenderer,
    DashboardServer,
    dashboard_app,
)
from pyrite.train import Progress, start_event

from .conftest import TestClient


def step(n: int) -> dict[str, Any]:
    return {"type": "step", "split": "train", "step": n, "metrics": {"Loss": 1.0 / n}}


END = {"type": "end", "state": "done", "message": ""}


def parse(body: str) -> tuple[list[dict[str, Any]], list[str]]:
    """(the events' data, their ids) of a server-sent events body."""
    events, ids = [], []
    for block in body.split("\n\n"):
        for line in block.splitlines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
            elif line.startswith("id: "):
                ids.append(line[4:])
    return events, ids


def test_a_late_page_gets_the_whole_run_and_the_stream_ends_after_the_end() -> None:
    b = Broadcaster()
    for event in [step(99), start_event(2, {"lr": 0.1}, "tiny"), step(1), step(2), END]:
        b.publish(event)
    with TestClient(dashboard_app(b)) as client:
        response = client.get("/train/events")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["cache-control"] == "no-cache"
    assert response.text.startswith("retry: ")
    events, ids = parse(response.text)
    # a start begins a new run: the event before it is forgotten
    assert [e["type"] for e in events] == ["start", "step", "step", "end"]
    assert events[1] == step(1)
    assert ids == [f"{b.token}.{n}" for n in (2, 3, 4, 5)]
    assert b.ends_delivered == 1 and b.streams == 0


def test_a_reconnecting_page_gets_what_followed_its_last_event() -> None:
    b = Broadcaster()
    for event in [start_event(1), step(1), step(2), END]:
        b.publish(event)
    with TestClient(dashboard_app(b)) as client:
        again = client.get("/train/events", headers={"Last-Event-ID": f"{b.token}.2"})
        other = client.get("/train/events", headers={"Last-Event-ID": "deadbeef.3"})
    assert [e.get("step") for e in parse(again.text)[0]] == [2, None]
    assert len(parse(other.text)[0]) == 4  # another server's id: the whole run


def test_events_published_from_another_thread_reach_a_connected_page() -> None:
    b = Broadcaster()
    b.publish(start_event(1))

    def train() -> None:
        deadline = time.monotonic() + 10
        while not b.streams and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # a quiet while: the stream sends keep-alive comments
        for n in range(1, 4):
            b.publish(step(n))
        b.publish(END)

    trainer = threading.Thread(target=train)
    trainer.start()
    with TestClient(dashboard_app(b, keepalive_s=0.05)) as client:
        body = client.get("/train/events").text
    trainer.join()
    events, _ = parse(body)
    assert [e["type"] for e in events] == ["start", "step", "step", "step", "end"]
    assert ": keep-alive" in body  # the stream waited for the trainer with comments


def test_nan_becomes_null_and_close_ends_waiting_streams() -> None:
    b = Broadcaster()
    b.publish({"type": "step", "metrics": {"Loss": float("nan")}})
    assert b.events() == [{"type": "step", "metrics": {"Loss": None}}]
    b.close()
    with TestClient(dashboard_app(b)) as client:
        events, _ = parse(client.get("/train/events").text)  # ends although no `end` came
    assert events == [{"type": "step", "metrics": {"Loss": None}}]


def test_the_page_and_its_scripts_are_served() -> None:
    with TestClient(dashboard_app(Broadcaster())) as client:
        page = client.get("/train/live")
        script = client.get("/train/live.js")
        shared = client.get("/demos/shared/dashboard.js")
        css = client.get("/demos/shared/dashboard.css")
        home = client.get("/", follow_redirects=False)
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert 'src="live.js"' in page.text and "/demos/shared/dashboard.css" in page.text
    assert "EventSource" in script.text and "text/javascript" in script.headers["content-type"]
    assert "export function createDashboard" in shared.text
    assert css.status_code == 200
    assert home.status_code == 307 and home.headers["location"] == "/train/live"


def test_pyrite_serve_app_serves_the_dashboard_when_given_one(web_dir: Path) -> None:
    b = Broadcaster()
    b.publish(start_event(1))
    b.publish(END)
    with TestClient(create_app(web_dir, dashboard=b)) as client:
        assert client.get("/train/live").status_code == 200
        assert [e["type"] for e in parse(client.get("/train/events").text)[0]] == \
            ["start", "end"]
    with TestClient(create_app(web_dir)) as client:
        assert client.get("/train/events").status_code == 404


def test_dashboard_server_streams_a_renderers_events_over_http() -> None:
    with DashboardServer(port=0) as server:
        assert server.live_url == f"http://127.0.0.1:{server.port}/train/live"
        renderer = server.renderer(interval_s=0)
        renderer.sink(start_event(1))
        renderer.update(Progress("train", 1, 1, 1, 2, 16, 0.1), [])
        with urllib.request.urlopen(server.url + "train/events", timeout=10) as stream:
            assert stream.headers["Content-Type"].startswith("text/event-stream")
            first = [stream.readline() for _ in range(6)]  # retry, then the start and a step
            renderer.update(Progress("train", 1, 1, 2, 2, 32, 0.2), [])
            renderer.end_split(Progress("train", 1, 1, 2, 2, 32, 0.2), {})
            renderer.close()
            rest = stream.read().decode()  # returns: the stream ends after `end`
        events, _ = parse(b"".join(first).decode() + rest)
        assert [e["type"] for e in events] == ["start", "step", "step", "epoch", "end"]
        assert events[1]["memory_bytes"] > 0  # the process's resident memory
        assert server.wait_for_pages(5)
    with pytest.raises(OSError):
        urllib.request.urlopen(server.url + "healthz", timeout=2)


def test_dashboard_renderer_publishes_to_its_broadcaster() -> None:
    b = Broadcaster()
    r = DashboardRenderer(b, memory=lambda: 42)
    r.update(Progress("train", 1, 1, 1, 1, 8, 0.5), [])
    r.close()
    assert [(e["type"], e.get("memory_bytes")) for e in b.events()] == [("step", 42),
                                                                         ("end", None)]
