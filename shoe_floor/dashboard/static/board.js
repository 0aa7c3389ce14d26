"use strict";
// The pit's board: the first load from /api/board, then every change over /ws.

const body = document.querySelector("#board tbody");
const empty = document.getElementById("empty");
const link = document.getElementById("link");

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined || text === "" ? "–" : String(text);
  if (className) td.className = className;
  return td;
}

function time(iso) {
  if (!iso) return null;
  return new Date(iso).toLocaleTimeString();
}

function render(board) {
  body.replaceChildren();
  for (const t of board.tables) {
    const tr = document.createElement("tr");
    tr.dataset.table = `${t.site}/${t.table}`;
    if (t.online === false) tr.className = "offline";
    const last = t.last_round;
    tr.append(
      cell(`${t.site} / ${t.table}`),
      cell(t.online === null ? "unknown" : t.online ? "online" : "OFFLINE", "box"),
      cell(t.state),
      cell(last ? `${last.outcome} at ${time(last.ended)}` : null),
      cell(t.rounds_last_hour, "num"),
      cell(t.fault ? t.fault.code : null, t.fault ? "fault" : ""),
      cell(t.faults_last_day, "num"),
      cell(t.shoe ? `${t.shoe.model} ${t.shoe.serial}` : null),
    );
    body.append(tr);
  }
  empty.hidden = board.tables.length > 0;
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws`);
  socket.onopen = () => { link.textContent = "live"; };
  socket.onmessage = (message) => { render(JSON.parse(message.data)); };
  socket.onclose = () => {
    link.textContent = "connection lost: reconnecting…";
    setTimeout(connect, 2000);
  };
}

fetch("/api/board").then((r) => r.json()).then(render).finally(connect);
