// The dealer console: a page over the box's JSON-RPC WebSocket (docs/console.md).
//
// It renders the service's public snapshot (table.state) and refreshes it after every
// event; between refreshes a card event only bumps a position's count. It never holds a
// card identity before the round is closed: the service sends none (rule E1).
"use strict";

(function () {
  const TEXT = window.CONSOLE_TEXT;
  const POSITIONS = [1, 2, 3, 4, 5, 6, 7];
  const SUPERVISOR_ACTIONS = {
    clear_fault: { method: "table.clear_fault", what: "act_clear_fault" },
    misdealt: { method: "table.misdeal_determination", params: { misdealt: true }, what: "act_misdeal" },
    not_misdealt: { method: "table.misdeal_determination", params: { misdealt: false }, what: "act_misdeal" },
    confirm_new_deck: { method: "table.confirm_new_deck", what: "act_new_deck" },
  };
  const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };

  const view = {
    lang: localStorage.getItem("console.lang") || "es",
    state: null,
    session: null,
    socket: null,
    connected: false,
    nextId: 1,
    pending: new Map(),
    dice: [null, null, null],
    stub: 4,
    refreshTimer: null,
    retryMs: 500,
    signInFor: null, // null: the console's own sign-in; else a supervisor action
  };

  const $ = (id) => document.getElementById(id);

  function t(key, values, fallback) {
    const table = TEXT[view.lang] || TEXT.es;
    const otherwise = fallback !== undefined ? fallback : key;
    let text = key in table ? table[key] : (TEXT.es[key] !== undefined ? TEXT.es[key] : otherwise);
    for (const [name, value] of Object.entries(values || {})) {
      text = text.split("{" + name + "}").join(String(value));
    }
    return text;
  }

  // --- the connection ------------------------------------------------------------------

  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const socket = new WebSocket(`${scheme}://${location.host}/api/v1/ws`);
    view.socket = socket;
    socket.onopen = async () => {
      view.connected = true;
      view.retryMs = 500;
      render();
      const token = sessionStorage.getItem("console.token");
      if (token) {
        try {
          started(await call("session.resume", { token }));
          return;
        } catch (error) {
          sessionStorage.removeItem("console.token");
          showSignIn(null, t("session_ended"));
          return;
        }
      }
      showSignIn(null);
    };
    socket.onmessage = (message) => receive(JSON.parse(message.data));
    socket.onclose = () => {
      view.connected = false;
      for (const { reject } of view.pending.values()) reject(new Error(t("reconnecting")));
      view.pending.clear();
      render();
      // The service restarts under systemd: try again, backing off up to 5 s.
      setTimeout(connect, view.retryMs);
      view.retryMs = Math.min(view.retryMs * 2, 5000);
    };
  }

  function call(method, params) {
    return new Promise((resolve, reject) => {
      if (!view.socket || view.socket.readyState !== WebSocket.OPEN) {
        reject(new Error(t("reconnecting")));
        return;
      }
      const id = view.nextId++;
      view.pending.set(id, { resolve, reject });
      view.socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params: params || {} }));
    });
  }

  function receive(message) {
    if (message.id !== undefined && view.pending.has(message.id)) {
      const { resolve, reject } = view.pending.get(message.id);
      view.pending.delete(message.id);
      if (message.error) reject(Object.assign(new Error(message.error.message), message.error));
      else resolve(message.result);
      return;
    }
    if (message.method === "notify_event") {
      onEvent(message.params[0]);
    } else if (message.method === "notify_session_ended") {
      signedOut(t("session_ended"));
    }
  }

  function onEvent(event) {
    const s = view.state;
    if (s && event.event === "card" && String(event.position) in s.cards) {
      s.cards[String(event.position)] += 1;
      s.cards_dealt = Math.max(s.cards_dealt + 1, event.index);
      renderPositions();
      renderWords();
    }
    scheduleRefresh();
  }

  function scheduleRefresh() {
    if (view.refreshTimer !== null) return;
    view.refreshTimer = setTimeout(refresh, 40);
  }

  async function refresh() {
    view.refreshTimer = null;
    if (!view.session || view.session.role === "viewer") return;
    try {
      const state = await call("table.state");
      if (!view.state || state.round !== view.state.round) {
        // A new round: nothing chosen for the last one carries over.
        view.dice = [null, null, null];
        view.stub = 4;
      }
      view.state = state;
      render();
    } catch (error) {
      if (error.code === -32001) signedOut(t("session_ended"));
    }
  }

  // --- signing in ----------------------------------------------------------------------

  function started(session) {
    view.session = session;
    sessionStorage.setItem("console.token", session.token);
    hideSignIn();
    render();
    refresh();
  }

  function signedOut(note) {
    view.session = null;
    view.state = null;
    sessionStorage.removeItem("console.token");
    render();
    showSignIn(null, note);
  }

  function showSignIn(action, note) {
    view.signInFor = action;
    $("sign-in").hidden = false;
    renderSignInTitle();
    $("sign-in-note").textContent = note || "";
    $("sign-in-error").textContent = "";
    $("sign-in-cancel").hidden = action === null;
    $("pin").value = "";
    $("user").value = "";
    $("user").focus();
  }

  // Whose sign-in this is: every render translates the page again, and must not turn a
  // supervisor's sign-in for an action back into the plain one.
  function renderSignInTitle() {
    const action = view.signInFor;
    $("sign-in-title").textContent = action
      ? t("sign_in_supervisor", { action: t(SUPERVISOR_ACTIONS[action].what) })
      : t("sign_in_title");
  }

  function hideSignIn() {
    $("sign-in").hidden = true;
    view.signInFor = null;
    $("pin").value = "";
  }

  async function submitSignIn(event) {
    event.preventDefault();
    const user = $("user").value.trim();
    const pin = $("pin").value;
    $("sign-in-error").textContent = "";
    try {
      if (view.signInFor === null) {
        started(await call("session.login", { user, pin }));
      } else {
        const action = view.signInFor;
        await asSupervisor(user, pin, action);
        hideSignIn();
      }
    } catch (error) {
      $("sign-in-error").textContent = error.message;
      $("pin").value = "";
    }
  }

  // A supervisor signs in for one action on the dealer's console: the action is journaled
  // with the supervisor as its actor (the attendant of an F1 clear), then they sign out.
  async function asSupervisor(user, pin, action) {
    const login = await fetch("/api/v1/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ user, pin }),
    });
    const session = await login.json();
    if (!login.ok) throw new Error(session.error.message);
    const { method, params } = SUPERVISOR_ACTIONS[action];
    try {
      const reply = await rpcOverHttp(session.token, method, params || {});
      if (reply.error) throw new Error(reply.error.message);
    } finally {
      await rpcOverHttp(session.token, "session.logout", {});
    }
  }

  async function rpcOverHttp(token, method, params) {
    const response = await fetch("/api/v1/rpc", {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    });
    return response.json();
  }

  // --- actions -------------------------------------------------------------------------

  async function act(method, params) {
    $("error").textContent = "";
    try {
      await call(method, params);
    } catch (error) {
      if (error.code === -32001) signedOut(t("session_ended"));
      else $("error").textContent = error.message;
    }
    scheduleRefresh();
  }

  function supervisorAct(action) {
    if (view.session && view.session.role === "supervisor") {
      const { method, params } = SUPERVISOR_ACTIONS[action];
      act(method, params || {});
    } else {
      showSignIn(action);
    }
  }

  function betsOpen() {
    const s = view.state;
    if (!s) return false;
    const need = s.prompt && s.prompt.need;
    return s.phase === "deck_loaded" || need === "no_more_bets" || need === "wagers";
  }

  function toggleWager(position) {
    if (!betsOpen() || position === 1) return;
    const wagers = new Set(view.state.wagers);
    if (wagers.has(position)) wagers.delete(position);
    else wagers.add(position);
    view.state.wagers = [...wagers].sort();
    renderPositions();
    act("table.set_wagers", { positions: view.state.wagers });
  }

  // --- rendering -----------------------------------------------------------------------

  function render() {
    document.documentElement.lang = view.lang;
    $("lang").textContent = view.lang === "es" ? "EN" : "ES";
    for (const node of document.querySelectorAll("[data-i18n]")) {
      node.textContent = t(node.dataset.i18n);
    }
    renderSignInTitle();
    $("link").dataset.link = view.connected ? "up" : "down";
    $("link").title = t("link");
    $("who").textContent = view.session ? `${view.session.user} (${view.session.role})` : "";
    $("sign-out").hidden = !view.session;
    renderWords();
    renderRates();
    renderFault();
    renderPositions();
    renderStep();
  }

  function renderWords() {
    const s = view.state;
    let words;
    if (!view.connected) words = t("reconnecting");
    else if (view.session && view.session.role === "viewer") words = t("viewer");
    else words = t("state_" + (s ? s.phase : "null"), { n: s ? s.cards_dealt : 0 });
    $("state-words").textContent = words;
    $("state-words").dataset.phase = s && s.phase ? s.phase : "";
  }

  function renderRates() {
    const s = view.state;
    $("rates").textContent = s
      ? t("rates", {
          rounds: s.today.rounds,
          rph: s.today.rounds_per_hour,
          hands: s.today.hands,
          hph: s.today.hands_per_hour,
        })
      : "";
  }

  function renderFault() {
    const s = view.state;
    const fault = s && (s.fault || s.phase === "fault");
    $("fault").hidden = !fault;
    $("fault-message").textContent = s && s.fault ? s.fault.message : "";
  }

  // The last closed round's hands stay on the table for settlement until the dealer
  // enters the next round's first wager (or its first card leaves the shoe).
  function handsToShow() {
    const s = view.state;
    if (!s || !s.last_round || !s.last_round.hands) return null;
    if (s.cards_dealt > 0 || s.wagers.length > 0 || (s.wagered && s.wagered.length > 0 && s.round !== s.last_round.round)) {
      return null;
    }
    return s.last_round.hands;
  }

  function renderPositions() {
    const s = view.state;
    const box = $("positions");
    if (box.children.length === 0) {
      for (const n of POSITIONS) {
        const node = document.createElement("button");
        node.className = "position";
        node.dataset.position = String(n);
        node.addEventListener("click", () => toggleWager(n));
        box.appendChild(node);
      }
    }
    const open = betsOpen();
    const hands = handsToShow();
    let wagered = new Set(s ? (s.wagered !== null && !open ? s.wagered : s.wagers) : []);
    if (hands) wagered = new Set(s.last_round.wagered);
    for (const node of box.children) {
      const n = Number(node.dataset.position);
      const count = s ? s.cards[String(n)] || 0 : 0;
      node.classList.toggle("banker", n === 1);
      node.classList.toggle("wagered", wagered.has(n));
      node.classList.toggle("open", open && n !== 1);
      node.disabled = !(open && n !== 1);
      node.setAttribute("aria-pressed", wagered.has(n) ? "true" : "false");
      node.dataset.cards = String(count);
      node.replaceChildren();
      node.append(
        span("label", n === 1 ? t("banker") : t("position", { n })),
        span("tag", n === 1 ? "" : wagered.has(n) ? t("wager") : t("no_wager"))
      );
      const hand = hands && hands[String(n)];
      if (hand) node.append(cards(hand));
      else if (!hands) node.append(pips(count), span("count", t("cards", { n: count })));
    }
    const info = [];
    if (s && s.round) info.push(t("round", { id: s.round }));
    if (s && s.start_position) info.push(t("start_at", { n: s.start_position.position }));
    if (s && s.stub !== null) info.push(t("stub_is", { n: s.stub }));
    if (hands) {
      info.push(t("last_round", { id: s.last_round.round }));
    } else if (s && s.last_round && s.cards_dealt === 0 && s.last_round.outcome !== "dealt") {
      info.push(t("outcome_" + s.last_round.outcome));
    }
    $("round-info").textContent = info.join(" · ");
  }

  function span(cls, text) {
    const node = document.createElement("span");
    node.className = cls;
    node.textContent = text;
    return node;
  }

  function pips(count) {
    const node = document.createElement("span");
    node.className = "pips";
    for (let i = 0; i < 7; i++) {
      const pip = document.createElement("i");
      if (i < count) pip.className = "dealt";
      node.appendChild(pip);
    }
    return node;
  }

  function cards(hand) {
    const node = document.createElement("span");
    node.className = "hand";
    for (const code of hand) {
      const card = document.createElement("span");
      card.className = "card";
      card.dataset.code = code;
      const suit = code[1];
      if (suit === "H" || suit === "D") card.classList.add("red");
      card.textContent = code === "JK" ? "🃏" : code[0].replace("T", "10") + (SUITS[suit] || "?");
      node.appendChild(card);
    }
    return node;
  }

  function renderStep() {
    const s = view.state;
    const next = $("next");
    const alternatives = $("alternatives");
    next.hidden = true;
    next.onclick = null;
    alternatives.replaceChildren();
    $("dice").hidden = true;
    $("stub").hidden = true;
    $("evidence").hidden = true;
    // The controller's prompt in the console's language; its own words where we have none.
    const need = s && s.prompt ? s.prompt.need : null;
    $("step-message").textContent = need ? t("need_" + need, {}, s.prompt.message) : "";
    if (!s || !view.session || view.session.role === "viewer" || view.session.role === "technician") {
      return;
    }
    const step = (key, onclick) => {
      next.hidden = false;
      next.textContent = t(key);
      next.dataset.step = key.replace(/^do_/, "");
      next.disabled = false;
      next.onclick = onclick;
    };
    const alternative = (key, onclick) => {
      const button = document.createElement("button");
      button.className = "big";
      button.textContent = t(key);
      button.dataset.step = key.replace(/^do_/, "");
      button.onclick = onclick;
      alternatives.appendChild(button);
    };
    if (need === "confirm_shuffle" || s.phase === "shuffle_check") {
      step("do_confirm_shuffle", () => act("table.confirm_shuffle"));
    } else if (betsOpen()) {
      if (need === "wagers") $("step-message").textContent = t("need_wagers");
      step("do_no_more_bets", () => act("table.no_more_bets"));
    } else if (need === "start_position" || s.phase === "bets_closed") {
      renderDice();
      step("do_start_by_dice", () => act("table.start_by_dice", { dice: view.dice }));
      next.disabled = view.dice.includes(null);
      alternative("do_start_by_rng", () => act("table.start_by_rng"));
    } else if (need === "wager_settled" || s.phase === "start_set") {
      step("do_wager_settled", () => act("table.wager_settled"));
    } else if (need === "stub_count" || s.phase === "stub_recount") {
      $("stub").hidden = false;
      $("stub-count").textContent = String(view.stub);
      step("do_stub_counted", () => act("table.stub_counted", { count: view.stub }));
    } else if (need === "misdeal_determination" || s.phase === "misdeal_review") {
      renderEvidence(s.prompt);
      step("do_misdealt", () => supervisorAct("misdealt"));
      alternative("do_not_misdealt", () => supervisorAct("not_misdealt"));
    } else if (need === "close_round" || s.phase === "dealt") {
      step("do_close_round", () => act("table.close_round"));
    } else if (need === "new_deck") {
      step("do_confirm_new_deck", () => supervisorAct("confirm_new_deck"));
    }
  }

  function renderDice() {
    const box = $("dice");
    box.hidden = false;
    for (const die of box.querySelectorAll(".die")) {
      const which = Number(die.dataset.die);
      if (die.children.length === 0) {
        for (let face = 1; face <= 6; face++) {
          const button = document.createElement("button");
          button.className = "face";
          button.dataset.face = String(face);
          button.textContent = String(face);
          button.addEventListener("click", () => {
            view.dice[which] = face;
            renderStep();
          });
          die.appendChild(button);
        }
      }
      for (const button of die.children) {
        button.classList.toggle("chosen", Number(button.dataset.face) === view.dice[which]);
      }
    }
    const total = view.dice.includes(null) ? null : view.dice.reduce((a, b) => a + b, 0);
    $("dice-total").textContent =
      total === null ? t("dice_pick") : t("dice_total", { t: total, k: ((total - 1) % 7) + 1 });
  }

  function renderEvidence(prompt) {
    const box = $("evidence");
    box.hidden = false;
    const lines = [];
    if (prompt && prompt.proposal) {
      lines.push(t("proposal", { p: t("proposal_" + prompt.proposal) }));
    }
    if (prompt && prompt.evidence) {
      for (const [key, value] of Object.entries(prompt.evidence)) {
        lines.push(`${key}: ${typeof value === "object" ? JSON.stringify(value) : value}`);
      }
    }
    box.textContent = lines.join("\n");
  }

  // --- wiring --------------------------------------------------------------------------

  function keypad() {
    const box = $("keypad");
    for (const key of ["1", "2", "3", "4", "5", "6", "7", "8", "9", "clear", "0", "⌫"]) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "key";
      button.dataset.key = key;
      button.textContent = key === "clear" ? t("clear") : key;
      if (key === "clear") button.dataset.i18n = "clear";
      button.addEventListener("click", () => {
        const pin = $("pin");
        if (key === "clear") pin.value = "";
        else if (key === "⌫") pin.value = pin.value.slice(0, -1);
        else if (pin.value.length < 12) pin.value += key;
      });
      box.appendChild(button);
    }
  }

  function init() {
    keypad();
    $("sign-in-form").addEventListener("submit", submitSignIn);
    $("sign-in-cancel").addEventListener("click", hideSignIn);
    $("fault-clear").addEventListener("click", () => supervisorAct("clear_fault"));
    $("sign-out").addEventListener("click", async () => {
      try {
        await call("session.logout");
      } finally {
        signedOut();
      }
    });
    $("lang").addEventListener("click", () => {
      view.lang = view.lang === "es" ? "en" : "es";
      localStorage.setItem("console.lang", view.lang);
      render();
    });
    $("stub-minus").addEventListener("click", () => {
      view.stub = Math.max(0, view.stub - 1);
      $("stub-count").textContent = String(view.stub);
    });
    $("stub-plus").addEventListener("click", () => {
      view.stub = Math.min(53, view.stub + 1);
      $("stub-count").textContent = String(view.stub);
    });
    render();
    connect();
  }

  document.addEventListener("DOMContentLoaded", init);
})();
