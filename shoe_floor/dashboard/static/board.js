"use strict";

const body = document.querySelector("#board tbody");
const empty = document.getElementById("empty");
const link = document.getElementById("link");
const alarm = document.getElementById("alarm");
const signIn = document.getElementById("sign-in");

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text == null ? "–" : String(text);
  if (className) td.className = className;
  return td;
}

function time(iso) {
  if (!iso) return "";
  return new Date(iso).toLocaleTimeString();
}

function render(board) {
  body.replaceChildren();
  for (const t of board.tables) {
    const tr = document.createElement("tr");
    tr.className = t.online === false ? "offline" : t.online ? "online" : "";
    const last = t.last_round ? `${t.last_round.outcome} ${time(t.last_round.ended)}` : null;
    const fault = t.fault ? `${t.fault.code}: ${t.fault.message}` : null;
    const shoe = t.shoe ? `${t.shoe.model} ${t.shoe.serial}` : null;
    tr.append(
      cell(`${t.site}/${t.table}`),
      cell(t.online === false ? "offline" : t.online ? "online" : "?"),
      cell(t.state),
      cell(last),
      cell(t.rounds_last_hour),
      cell(fault, t.fault ? "fault" : ""),
      cell(t.faults_last_day),
      cell(shoe),
    );
    body.append(tr);
  }
  empty.hidden = board.tables.length > 0;
  const refused = board.refused ? board.refused.messages : 0;
  alarm.hidden = refused === 0;
  if (refused) {
    const reasons = Object.entries(board.refused.by_reason)
      .map(([reason, count]) => `${reason} ${count}`)
      .join(", ");
    alarm.textContent = `Alarm: ${refused} messages refused (${reasons}): unsigned, forged or malformed; see shoe-floor report`;
  }
}

function connect() {
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const socket = new WebSocket(`${scheme}://${location.host}/ws`);
  socket.onopen = () => { link.textContent = "live"; };
  socket.onmessage = (message) => render(JSON.parse(message.data));
  socket.onclose = () => {
    link.textContent = "reconnecting…";
    setTimeout(start, 2000);
  };
}

function start() {
  fetch("/api/board").then((response) => {
    if (response.status === 401) {
      signIn.hidden = false;
      link.textContent = "sign in to see the tables";
      return;
    }
    signIn.hidden = true;
    return response.json().then(render).then(connect);
  });
}

signIn.addEventListener("submit", (event) => {
  event.preventDefault();
  const form = new FormData(signIn);
  fetch("/api/login", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ user: form.get("user"), pin: form.get("pin") }),
  }).then((response) => {
    if (response.ok) start();
    else response.json().then((answer) => { link.textContent = answer.error; });
  });
});

start();
