// The live dashboard page (/train/live): follows a native training run through server-sent
// events from /train/events (server/dashboard.py) and draws them with the shared dashboard.
// `window.pyriteDashboard` is the dashboard (tests read `pyriteDashboard.data()`).

import { createDashboard } from "/demos/shared/dashboard.js";

const connection = document.getElementById("connection");
const dashboard = createDashboard(document.getElementById("dashboard"));
window.pyriteDashboard = dashboard;

function say(state, text) {
  connection.dataset.state = state;
  connection.textContent = text;
}

// relative: /train/events beside /train/live, wherever the server mounts them
const source = new EventSource(new URL("events", location.href));

source.addEventListener("open", () => {
  say("open", "Connected: the run's events so far, then each new one as it happens.");
});

source.addEventListener("message", (message) => {
  let event;
  try {
    event = JSON.parse(message.data);
  } catch {
    return; // not an event of ours
  }
  dashboard.push(event);
  if (event.type === "end") {
    // the server ends the stream after `end`: do not let EventSource reconnect and replay it
    source.close();
    const how = { done: "finished", stopped: "was stopped", error: "failed" }[event.state] || "ended";
    say("closed", `The run ${how}. Reload the page to follow a new run.`);
  }
});

source.addEventListener("error", () => {
  if (source.readyState === EventSource.CLOSED) {
    say("lost", "The connection to the training run is closed. Reload to try again.");
  } else {
    // EventSource reconnects by itself, asking for the events after the last one it got
    say("lost", "Lost the connection to the training run; reconnecting…");
  }
});
