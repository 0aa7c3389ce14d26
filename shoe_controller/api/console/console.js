// The dealer console: a page over the box's JSON-RPC WebSocket (docs/console.md).
//
// It folds the service's events into the public snapshot (table.state) as they come, and
// reads the snapshot again shortly after, so that what it shows is never the console's
// guess for long. It never holds a card identity before the round is closed: the service
// sends none (rule E1). The view logic (fold, words, next step, layout) is in view.js.
"use strict";

(function () {
  const TEXT = window.CONSOLE_TEXT;
  const V = window.ConsoleView;
  const SUITS = { S: "♠", H: "♥", D: "♦", C: "♣" };
  // How long a supervisor whose action was refused stays signed in to try again (ms).
  const SUPERVISOR_RETRY_MS = 60000;

  // What each action of the panel calls: its method, its parameters (from the button
  // touched and the console's own choices), and what a supervisor signs in for (``act``).
  const ACTIONS = {
    confirm_shuffle: { method: "table.confirm_shuffle" },
    no_more_bets: { method: "table.no_more_bets" },
    start_by_dice: { method: "table.start_by_dice", params: () => ({ dice: view.dice.slice() }) },
    start_by_rng: { method: "table.start_by_rng" },
    start_by_external: {
      method: "table.start_by_external_rng",
      params: () => V.externalParams(view.state, local()),
    },
    wager_settled: { method: "table.wager_settled" },
    stub_proposal: { method: "table.stub_counted", params: (b) => ({ count: b.values.n }) },
    stub_counted: { method: "table.stub_counted", params: () => ({ count: view.stub }) },
    accept_stub_count: { method: "table.accept_stub_count", act: "act_accept_stub" },
    close_round: { method: "table.close_round" },
    misdealt: {
      method: "table.misdeal_determination",
      params: () => ({ misdealt: true }),
      act: "act_misdeal",
    },
    not_misdealt: { method: "table.misdeal_determination", params: () => ({ misdealt: false }) },
    confirm_new_deck: { method: "table.confirm_new_deck", act: "act_new_deck" },
    clear_fault: { method: "table.clear_fault", act: "act_clear_fault" },
    void_clear: {
      method: "table.clear_fault",
      params: () => ({ void_round: true }),
      act: "act_void_clear",
    },
    void_round: {
      method: "table.void_round",
      params: () => ({ reason: voidReasonText(view.voidReason) }),
      act: "act_void_round",
    },
  };
  // Actions that change only what the panel shows.
  const LOCAL_ACTIONS = {
    use_external: () => {
      view.startMethod = "external";
    },
    use_dice: () => {
      view.startMethod = "dice";
    },
  };

  const view = {
    lang: localStorage.getItem("console.lang") === "en" ? "en" : "es",
    state: null,
    session: null,
    socket: null,
    opening: null,
    connected: false,
    reachable: false, // the service answered over HTTP (before anyone signed in)
    nextId: 1,
    pending: new Map(),
    dice: [null, null, null],
    stub: null,
    stubPrompt: null,
    startMethod: "dice", // or "external": the external generator's number
    external: { number: null, token: "" },
    voidReason: null, // the reason chosen in the void dialog
    localRound: undefined,
    refreshTimer: null,
    retryMs: 500,
    retryTimer: null,
    roster: null,
    signIn: null, // {action: null | a supervisor's call, user: null | name, pin: ""}
    kept: null, // a supervisor's session kept for a retry: {user, token, timer}
    error: null, // [key, values] of the last error shown in the panel
    dismissedNotice: null,
    noticeOpen: false, // the notice's dialog is open
  };

  const $ = (id) => document.getElementById(id);
  let t = V.translator(TEXT, view.lang);

  // A position's name: the label the table's configuration gives it, else the banker or
  // its number in the console's language.
  function label(position) {
    const table = view.state && view.state.table;
    const labels = table && table.seat_labels;
    const given = labels ? labels[String(position)] : null;
    if (typeof given === "string" && given) return given;
    return position === 1 ? t("banker") : t("position", { n: position });
  }

  // The console's own choices, as the view logic reads them.
  function local() {
    return { dice: view.dice, stub: view.stub, method: view.startMethod, external: view.external };
  }

  function voidReasonText(code) {
    const found = V.VOID_REASONS.find(([name]) => name === code);
    return found ? found[1] : "";
  }

  function errorWords([key, values, fallback]) {
    return t(key, V.wordedValues(t, key, values), fallback || "err_network");
  }

  // --- the connection ------------------------------------------------------------------
  //
  // The WebSocket opens only to sign in (or to resume a session), and the sign-in is its
  // first message: a connection that has not signed in is never left open. After a drop or
  // a refusal, a signed-in console reconnects, backing off up to 5 s, and resumes.

  function openSocket() {
    if (view.socket && view.socket.readyState === WebSocket.OPEN) return Promise.resolve();
    if (view.opening) return view.opening;
    view.opening = new Promise((resolve, reject) => {
      const scheme = location.protocol === "https:" ? "wss" : "ws";
      // Declared the table's console: from the console's address, the shoe's buttons act
      // for the dealer signed in here (docs/api.md).
      const socket = new WebSocket(`${scheme}://${location.host}/api/v1/ws?console=table`);
      view.socket = socket;
      let opened = false;
      socket.onopen = () => {
        opened = true;
        view.opening = null;
        view.connected = true;
        view.retryMs = 500;
        render();
        resolve();
      };
      socket.onmessage = (message) => receive(JSON.parse(message.data));
      socket.onclose = () => {
        view.opening = null;
        if (view.socket === socket) view.socket = null;
        view.connected = false;
        for (const { reject: fail } of view.pending.values()) fail({ code: undefined });
        view.pending.clear();
        if (!opened) reject({ code: undefined, refused: true });
        render();
        if (view.session) reconnectLater();
      };
    });
    return view.opening;
  }

  function closeSocket() {
    const socket = view.socket;
    view.socket = null;
    if (socket) socket.close();
  }

  function reconnectLater() {
    if (view.retryTimer !== null) return;
    view.retryTimer = setTimeout(async () => {
      view.retryTimer = null;
      await resume();
    }, view.retryMs);
    view.retryMs = Math.min(view.retryMs * 2, 5000);
  }

  async function resume() {
    const token = sessionStorage.getItem("console.token");
    if (!token) {
      showSignIn(null);
      return;
    }
    try {
      await openSocket();
    } catch (error) {
      reconnectLater();
      return;
    }
    try {
      started(await call("session.resume", { token }));
    } catch (error) {
      if (error.code === undefined) return; // the socket dropped again: onclose retries
      sessionStorage.removeItem("console.token");
      view.session = null;
      closeSocket();
      showSignIn(null, "session_ended");
    }
  }

  function call(method, params) {
    return new Promise((resolve, reject) => {
      if (!view.socket || view.socket.readyState !== WebSocket.OPEN) {
        reject({ code: undefined });
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
      if (message.error) reject(message.error);
      else resolve(message.result);
      return;
    }
    if (message.method === "notify_event") {
      onEvent(message.params[0]);
    } else if (message.method === "notify_session_ended") {
      signedOut("session_ended");
    }
  }

  function onEvent(event) {
    if (view.state) {
      view.state = V.fold(view.state, event);
      render();
    }
    scheduleRefresh();
  }

  function scheduleRefresh() {
    if (view.refreshTimer !== null) return;
    view.refreshTimer = setTimeout(refresh, 250);
  }

  async function refresh() {
    view.refreshTimer = null;
    if (!view.session || !view.session.role || view.session.role === "viewer") return;
    try {
      view.state = V.fromSnapshot(await call("table.state"), view.state);
      render();
    } catch (error) {
      if (error.code === -32001) signedOut("session_ended");
    }
  }

  // Plain JSON over HTTP (the supervisor's one action, the roster before signing in).
  async function postJson(path, body, token) {
    const headers = { "Content-Type": "application/json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    let response;
    try {
      response = await fetch(path, { method: "POST", headers, body: JSON.stringify(body) });
    } catch (error) {
      throw { code: undefined };
    }
    let data = null;
    try {
      data = await response.json();
    } catch (error) {
      data = null;
    }
    if (data && data.error) throw data.error;
    if (!response.ok) throw { code: response.status === 503 ? -32006 : undefined };
    return data;
  }

  async function rpcOverHttp(method, params, token) {
    const reply = await postJson("/api/v1/rpc", { jsonrpc: "2.0", id: 1, method, params }, token);
    return reply ? reply.result : null;
  }

  // --- signing in ------------------------------------------------------------------------

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
    closeSocket();
    render();
    showSignIn(null, note);
  }

  async function loadRoster() {
    view.roster = null;
    renderSignIn();
    try {
      const result = await rpcOverHttp("session.roster", {});
      view.roster = (result && result.users) || [];
      view.reachable = true;
    } catch (error) {
      view.roster = [];
      view.reachable = false;
      if (view.signIn) view.signIn.error = V.errorText(error);
    }
    render();
  }

  function showSignIn(action, note) {
    view.signIn = { action, user: null, pin: "", note: note || null, error: null };
    $("sign-in").hidden = false;
    loadRoster();
  }

  function hideSignIn() {
    $("sign-in").hidden = true;
    view.signIn = null;
  }

  function pickUser(name) {
    view.signIn.user = name;
    view.signIn.pin = "";
    view.signIn.error = null;
    renderSignIn();
  }

  async function submitSignIn(event) {
    event.preventDefault();
    const s = view.signIn;
    if (!s || !s.user || s.pin.length < 4) return;
    const { user, pin, action } = s;
    s.pin = "";
    s.error = null;
    renderSignIn();
    if (action === null) {
      try {
        await openSocket();
        started(await call("session.login", { user, pin }));
      } catch (error) {
        if (view.signIn) view.signIn.error = V.errorText(error, user);
        if (!view.session) closeSocket();
        renderSignIn();
      }
      return;
    }
    let session;
    try {
      session = await postJson("/api/v1/login", { user, pin });
    } catch (error) {
      if (view.signIn) view.signIn.error = V.errorText(error, user);
      renderSignIn();
      return;
    }
    hideSignIn();
    await asSupervisor(session.user, session.token, action);
  }

  // A supervisor acts once on the dealer's console: the action is journaled with the
  // supervisor as its actor (the attendant of an F1 clear). Done, they are signed out; a
  // refused action keeps their sign-in for a minute, to try again without the PIN.
  async function asSupervisor(user, token, action) {
    view.error = null;
    try {
      await rpcOverHttp(action.method, action.params, token);
    } catch (error) {
      if (error.code === -32001) {
        dropKept(false);
      } else {
        keep(user, token);
      }
      view.error = V.errorText(error, user);
      render();
      scheduleRefresh();
      return;
    }
    if (view.kept && view.kept.token === token) dropKept(true);
    else signOutToken(token);
    render();
    scheduleRefresh();
  }

  function keep(user, token) {
    if (view.kept && view.kept.token !== token) dropKept(true);
    if (view.kept) clearTimeout(view.kept.timer);
    view.kept = { user, token, timer: setTimeout(() => dropKept(true), SUPERVISOR_RETRY_MS) };
  }

  function dropKept(signOut) {
    const kept = view.kept;
    if (!kept) return;
    clearTimeout(kept.timer);
    view.kept = null;
    if (signOut) signOutToken(kept.token);
    render();
  }

  function signOutToken(token) {
    rpcOverHttp("session.logout", {}, token).catch(() => {});
  }

  // --- actions -------------------------------------------------------------------------

  // Do what ``button`` (a step of the view: {action, values, supervisor}) says: a call in
  // the signed-in person's name, or, for what only a supervisor gives, in a supervisor's
  // (signed in on this console for it). The call names the prompt on the screen at the
  // touch: a supervisor who signs in first still answers the prompt they saw, and the
  // service refuses the call if the table has moved on meanwhile.
  async function perform(button) {
    const name = button.action;
    if (LOCAL_ACTIONS[name]) {
      LOCAL_ACTIONS[name]();
      render();
      return;
    }
    const action = ACTIONS[name];
    const request = {
      method: action.method,
      params: V.answering(view.state, action.params ? action.params(button) : {}),
      act: action.act || null,
    };
    view.error = null;
    if (button.supervisor && (!view.session || view.session.role !== "supervisor")) {
      if (view.kept) await asSupervisor(view.kept.user, view.kept.token, request);
      else showSignIn(request);
      render();
      return;
    }
    try {
      await call(request.method, request.params);
    } catch (error) {
      if (error.code === -32001) {
        signedOut("session_ended");
        return;
      }
      view.error = V.errorText(error);
    }
    render();
    scheduleRefresh();
  }

  function toggleWager(position) {
    const s = view.state;
    if (!V.betsOpen(s) || position === 1) return;
    const wagers = new Set(s.wagers);
    if (wagers.has(position)) wagers.delete(position);
    else wagers.add(position);
    s.wagers = [...wagers].sort((a, b) => a - b);
    renderPositions();
    renderStep();
    view.error = null;
    call("table.set_wagers", V.answering(s, { positions: s.wagers })).catch((error) => {
      view.error = V.errorText(error);
      render();
      scheduleRefresh();
    });
  }

  // --- rendering -----------------------------------------------------------------------

  function render() {
    t = V.translator(TEXT, view.lang);
    document.documentElement.lang = view.lang;
    $("lang").textContent = view.lang === "es" ? "EN" : "ES";
    $("lang").lang = view.lang === "es" ? "en" : "es";
    $("lang").setAttribute("aria-label", t("lang_switch"));
    for (const node of document.querySelectorAll("[data-i18n]")) {
      node.textContent = t(node.dataset.i18n);
    }
    for (const node of document.querySelectorAll("[data-i18n-aria]")) {
      node.setAttribute("aria-label", t(node.dataset.i18nAria));
    }
    resetLocal();
    renderLinks();
    renderWho();
    renderWords();
    renderOutcome();
    renderNotice();
    renderFault();
    renderInfo();
    renderStep();
    renderSignIn();
    // Last: the words above and below the positions decide the room they have.
    renderPositions();
  }

  // Choices made for one round (the dice, the external generator's value, the reason to
  // void) or one prompt (the count typed) never carry over.
  function resetLocal() {
    const s = view.state;
    const round = s ? s.round : null;
    if (round !== view.localRound) {
      view.localRound = round;
      view.dice = [null, null, null];
      view.startMethod = "dice";
      view.external = { number: null, token: "" };
      $("external-token").value = "";
      view.voidReason = null;
      $("void-dialog").hidden = true;
    }
    const prompt = s && s.prompt ? `${s.prompt.need}|${s.prompt.code}|${s.prompt.message}` : null;
    if (prompt !== view.stubPrompt) {
      view.stubPrompt = prompt;
      view.stub = null;
    }
  }

  function renderLinks() {
    const up = view.connected || (!view.session && view.reachable);
    const service = $("link");
    service.dataset.link = up ? "up" : "down";
    service.title = t(up ? "link_service_up" : "link_service_down");
    service.setAttribute("aria-label", service.title);
    const shoe = view.state && view.state.shoe;
    let link = "none";
    let title = t("shoe_link_none");
    if (shoe) {
      link = shoe.link || "up";
      title = t("shoe_link_" + link, {}, "shoe_link_error");
      if (shoe.approved === false) title = t("shoe_not_approved");
    }
    const shoeUp = ["up", "restored", "approval"].includes(link) && !(shoe && shoe.approved === false);
    const dot = $("shoe-link");
    dot.dataset.link = shoe ? (shoeUp ? "up" : "down") : "none";
    dot.dataset.status = link;
    dot.title = title;
    dot.setAttribute("aria-label", title);
  }

  function renderWho() {
    const session = view.session && view.session.role ? view.session : null;
    $("who").textContent = session
      ? t("who", { user: session.user, role: t("role_" + session.role, {}, "role_viewer") })
      : "";
    $("sign-out").hidden = !session;
  }

  function renderWords() {
    const s = view.state;
    let words;
    if (!view.connected && view.session) words = t("reconnecting");
    else if (view.session && view.session.role === "viewer") words = t("viewer");
    else if (!view.session) words = "";
    else words = t("state_" + (s && s.phase ? s.phase : "null"), { n: s ? s.cards_dealt : 0 }, "state_null");
    $("state-words").textContent = words;
    $("state-words").dataset.phase = s && s.phase ? s.phase : "";
  }

  function renderOutcome() {
    const outcome = view.session ? V.outcomeOf(view.state) : null;
    const box = $("outcome");
    box.hidden = !outcome;
    box.textContent = outcome ? t(outcome[0], outcome[1], "outcome_other") : "";
    box.dataset.outcome = outcome ? view.state.last_round.outcome : "";
  }

  function renderNotice() {
    const s = view.state;
    const notice = view.session && s ? s.notice : null;
    const shown = Boolean(notice && notice.ts !== view.dismissedNotice);
    // A flag in the top bar until someone has read it; its words in a dialog.
    $("notice-open").hidden = !shown;
    $("notice").hidden = !(shown && view.noticeOpen);
    $("notice").dataset.code = shown ? notice.code : "";
    $("notice-text").textContent = shown ? t("notice_" + notice.code, {}, "notice_other") : "";
  }

  function renderFault() {
    const s = view.state;
    const clear = view.session ? V.clearOf(s) : { visible: false };
    const fault = view.session && s && (s.fault || s.phase === "fault");
    $("fault").hidden = !fault;
    const codes = V.faultCodes(s);
    $("fault-message").textContent = codes.map((code) => t("fault_" + code, {}, "fault_other")).join(" ");
    $("fault").dataset.codes = codes.join(",");
    const button = $("fault-clear");
    button.hidden = !clear.visible;
    button.disabled = !clear.enabled;
    button.textContent = clear.key ? t(clear.key) : "";
    button.dataset.action = clear.action || "";
  }

  function wageredNow() {
    const s = view.state;
    if (!s) return new Set();
    if (V.betsOpen(s)) return new Set(s.wagers);
    return new Set(s.wagered !== null && s.wagered !== undefined ? s.wagered : s.wagers);
  }

  function renderPositions() {
    const s = view.state;
    const box = $("positions");
    const n = view.session ? V.positionsOf(s) : 0;
    while (box.children.length > n) box.lastChild.remove();
    while (box.children.length < n) {
      const node = document.createElement("button");
      const position = box.children.length + 1;
      node.className = "position";
      node.dataset.position = String(position);
      node.addEventListener("click", () => toggleWager(position));
      box.appendChild(node);
    }
    if (n === 0) return;
    const size = box.getBoundingClientRect();
    const tiles = V.layout(n, size.width, size.height, cornerWidth());
    placeCorners(V.cornersOf(tiles, size.width));
    const open = V.betsOpen(s);
    const wagered = wageredNow();
    const dealing = s.cards_dealt > 0;
    for (const node of box.children) {
      const p = Number(node.dataset.position);
      const tile = tiles[p - 1];
      if (tile) {
        Object.assign(node.style, {
          left: `${tile.x}px`,
          top: `${tile.y}px`,
          width: `${tile.w}px`,
          height: `${tile.h}px`,
          fontSize: `${Math.max(13, Math.min(30, Math.round(tile.h / 4.6)))}px`,
        });
      }
      const count = s.cards[String(p)] || 0;
      node.classList.toggle("banker", p === 1);
      node.classList.toggle("wagered", wagered.has(p));
      node.classList.toggle("open", open && p !== 1);
      node.disabled = !(open && p !== 1);
      node.setAttribute("aria-pressed", wagered.has(p) ? "true" : "false");
      node.dataset.cards = String(count);
      node.replaceChildren(span("label", label(p)));
      if (wagered.has(p)) node.append(span("tag", t("wager")));
      if (dealing) node.append(span("count", t("cards", { n: count })));
    }
  }

  // The buttons in the corners at the dealer's side, left and right of the banker.
  const CORNERS = { left: "previous", right: "void-open" };
  const cornerWidths = new Map();

  // The narrowest a corner's button may be: its words on two lines at most, none broken.
  // Measured once per text and size of type (which follows the screen's).
  function cornerWidth() {
    let widest = 0;
    for (const id of Object.values(CORNERS)) {
      const button = $(id);
      if (button.hidden) continue;
      const text = `${button.textContent}|${getComputedStyle(button).fontSize}`;
      if (!cornerWidths.has(text)) {
        const style = button.style;
        const saved = [style.width, style.height];
        style.height = "auto";
        style.width = "min-content";
        let width = Math.ceil(button.getBoundingClientRect().width);
        style.width = "max-content";
        const most = Math.ceil(button.getBoundingClientRect().width);
        for (; width < most; width += 4) {
          style.width = `${width}px`;
          if (button.getBoundingClientRect().height <= 64) break;
        }
        [style.width, style.height] = saved;
        cornerWidths.set(text, Math.min(width, most));
      }
      widest = Math.max(widest, cornerWidths.get(text));
    }
    return widest;
  }

  function placeCorners(corners) {
    const field = $("field").getBoundingClientRect();
    for (const [side, id] of Object.entries(CORNERS)) {
      const button = $(id);
      // No room left by the tiles (a screen smaller than any the console supports): the
      // field's own corners, never out of reach.
      const w = Math.max(64, cornerWidth());
      const corner = corners
        ? corners[side]
        : { x: side === "left" ? 0 : field.width - w, y: field.height - 64, w, h: 64 };
      Object.assign(button.style, {
        left: `${corner.x}px`,
        top: `${corner.y}px`,
        width: `${corner.w}px`,
        height: `${corner.h}px`,
      });
    }
  }

  function renderInfo() {
    const s = view.session ? view.state : null;
    const info = [];
    if (s && s.round) info.push(t("round", { id: s.round }));
    if (s && s.start_position) info.push(t("start_at", { n: s.start_position.position }));
    if (s && s.stub !== null && s.stub !== undefined) info.push(t("stub_is", { n: s.stub }));
    if (s && s.today) {
      const number = new Intl.NumberFormat(view.lang, { maximumFractionDigits: 1 });
      info.push(
        `${t("rounds_today", { n: s.today.rounds })} (${t("per_hour", { rate: number.format(s.today.rounds_per_hour) })}), ` +
          `${t("hands_today", { n: s.today.hands })} (${t("per_hour", { rate: number.format(s.today.hands_per_hour) })})`
      );
    }
    $("round-info").textContent = info.join(" · ");
    const hands = s ? V.handsOf(s) : null;
    $("previous").hidden = !(hands && !hands.current);
    // A supervisor may end an undecided round void, on this console, with a reason (F6).
    const role = view.session ? view.session.role : null;
    const voiding = V.voidOf(s);
    $("void-open").hidden = !(voiding.visible && (role === "dealer" || role === "supervisor"));
    if ($("void-open").hidden) $("void-dialog").hidden = true;
    if (!$("void-dialog").hidden) renderVoid();
  }

  function renderVoid() {
    $("void-title").textContent = t("void_title", { id: view.state ? view.state.round : "" });
    const box = $("void-reasons");
    if (box.children.length === 0) {
      for (const [code] of V.VOID_REASONS) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "big reason";
        button.dataset.reason = code;
        button.addEventListener("click", () => {
          view.voidReason = code;
          renderVoid();
        });
        box.append(button);
      }
    }
    for (const button of box.children) {
      button.textContent = t("void_reason_" + button.dataset.reason);
      button.classList.toggle("chosen", button.dataset.reason === view.voidReason);
      button.setAttribute("aria-pressed", button.dataset.reason === view.voidReason ? "true" : "false");
    }
    $("void-confirm").disabled = view.voidReason === null;
  }

  function span(cls, text) {
    const node = document.createElement("span");
    node.className = cls;
    node.textContent = text;
    return node;
  }

  function cardNode(code) {
    const card = document.createElement("span");
    card.className = "card";
    card.dataset.code = code;
    const suit = code[1];
    if (suit === "H" || suit === "D") card.classList.add("red");
    card.textContent = code === "JK" ? "🃏" : code[0].replace("T", "10") + (SUITS[suit] || "?");
    return card;
  }

  function renderHands(box, hands) {
    box.replaceChildren();
    const positions = Object.keys(hands.hands)
      .map(Number)
      .sort((a, b) => a - b);
    const title = document.createElement("p");
    title.className = "hands-title";
    title.textContent = t("hands_title", { id: hands.round });
    box.append(title);
    for (const p of positions) {
      const row = document.createElement("div");
      row.className = "hand-row";
      row.dataset.position = String(p);
      row.append(span("hand-label", label(p)));
      const cards = document.createElement("span");
      cards.className = "hand";
      for (const code of hands.hands[String(p)]) cards.append(cardNode(code));
      row.append(cards);
      box.append(row);
    }
    const note = document.createElement("p");
    note.className = "hands-note";
    note.textContent = t("hands_note");
    box.append(note);
  }

  function renderStep() {
    const s = view.session ? view.state : null;
    const role = view.session ? view.session.role : null;
    const next = $("next");
    const alternatives = $("alternatives");
    for (const id of ["dice", "external", "stub", "figures", "evidence"]) $(id).hidden = true;
    next.hidden = true;
    next.onclick = null;
    alternatives.replaceChildren();
    const prompt = V.promptText(s, label);
    $("step-message").textContent = prompt ? t(prompt.key, prompt.values, prompt.fallback) || t("need_other") : "";
    if (role === "technician") $("step-message").textContent = t("technician");
    const hands = s ? V.handsOf(s) : null;
    $("hands").hidden = !(hands && hands.current);
    if (hands && hands.current) renderHands($("hands"), hands);
    else $("hands").replaceChildren();
    $("supervisor-note").textContent = view.kept ? t("supervisor_kept", { user: view.kept.user }) : "";
    $("error").textContent = view.error ? errorWords(view.error) : "";
    if (!s || (role !== "dealer" && role !== "supervisor")) return;
    const step = V.stepOf(s, local());
    if (step.main) {
      next.hidden = false;
      next.textContent = t(step.main.key, step.main.values);
      next.dataset.step = step.main.action;
      next.disabled = !step.main.enabled;
      next.onclick = () => perform(step.main);
    }
    for (const choice of step.alternatives) {
      const button = document.createElement("button");
      button.className = "big";
      button.textContent = t(choice.key, choice.values);
      button.dataset.step = choice.action;
      button.disabled = !choice.enabled;
      button.onclick = () => perform(choice);
      alternatives.appendChild(button);
    }
    if (step.kind === "start") renderDice();
    if (step.kind === "external") {
      // The generator's own words say what to do.
      $("step-message").textContent = "";
      renderExternal();
    }
    if (step.kind === "stub" || step.kind === "dispute") {
      renderFigures(s.prompt);
      renderStub();
    }
    if (step.kind === "misdeal") renderEvidence(s.prompt);
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
      die.setAttribute("aria-label", t("die", { n: which + 1 }));
      for (const button of die.children) {
        button.classList.toggle("chosen", Number(button.dataset.face) === view.dice[which]);
      }
    }
    const total = view.dice.includes(null) ? null : view.dice.reduce((a, b) => a + b, 0);
    const n = V.positionsOf(view.state);
    $("dice-total").textContent =
      total === null ? t("dice_pick") : t("dice_total", { t: total, k: ((total - 1) % n) + 1 });
  }

  function renderExternal() {
    $("external").hidden = false;
    const generator = view.state.table.external_rng;
    const box = $("external-numbers");
    const n = V.positionsOf(view.state);
    while (box.children.length > n) box.lastChild.remove();
    while (box.children.length < n) {
      const button = document.createElement("button");
      const number = box.children.length + 1;
      button.className = "key number";
      button.dataset.number = String(number);
      button.textContent = String(number);
      button.addEventListener("click", () => {
        // A number touched is the number; a signed value scanned before is for another.
        view.external = { number, token: "" };
        $("external-token").value = "";
        renderStep();
      });
      box.append(button);
    }
    const value = view.external.token ? V.signedValue(view.external.token) : null;
    const chosen = value ? value.number : view.external.number;
    for (const button of box.children) {
      button.classList.toggle("chosen", Number(button.dataset.number) === chosen);
    }
    const required = generator.signature === "required";
    // Where the table requires the signature, the number comes only with the value.
    $("external-title").textContent = t(required ? "external_title_signed" : "external_title", {
      device: generator.device,
    });
    box.hidden = required;
    $("external-token").placeholder = t("external_placeholder");
    $("external-token").setAttribute("aria-label", t("external_placeholder"));
    let check = "";
    if (view.external.token) {
      check = V.externalParams(view.state, local())
        ? t("external_signed", { number: value.number, counter: value.counter })
        : t("external_token_bad");
    }
    $("external-check").textContent = check;
  }

  function renderFigures(prompt) {
    const box = $("figures");
    box.hidden = false;
    box.replaceChildren();
    for (const [key, values] of V.figureLines(prompt)) {
      const item = document.createElement("li");
      item.dataset.key = key;
      item.textContent = t(key, values);
      box.append(item);
    }
  }

  function renderStub() {
    $("stub").hidden = false;
    $("stub-count").textContent = view.stub === null ? t("stub_empty") : String(view.stub);
    $("stub-back").setAttribute("aria-label", t("backspace"));
  }

  function typeStub(key) {
    if (key === "back") {
      const text = view.stub === null ? "" : String(view.stub).slice(0, -1);
      view.stub = text === "" ? null : Number(text);
    } else {
      const text = (view.stub === null ? "" : String(view.stub)) + key;
      const value = Number(text);
      view.stub = value <= 53 ? value : view.stub;
    }
    renderStep();
  }

  function renderEvidence(prompt) {
    const box = $("evidence");
    box.hidden = false;
    box.replaceChildren();
    for (const [key, values] of V.evidenceLines(prompt, label)) {
      const filled = Object.assign({}, values);
      if (key === "ev_cards_each") {
        filled.list = values.list.map(([name, n]) => t("ev_cards_item", { position: name, n })).join(", ");
      }
      const item = document.createElement("li");
      item.dataset.key = key;
      item.textContent = t(key, filled);
      box.append(item);
    }
  }

  function renderSignIn() {
    const s = view.signIn;
    if (!s) return;
    const supervisor = s.action !== null;
    $("sign-in-title").textContent = supervisor
      ? t("sign_in_supervisor", { action: t(s.action.act) })
      : t("sign_in_title");
    $("sign-in-cancel").hidden = !supervisor;
    $("sign-in-note").textContent = s.note ? t(s.note) : "";
    $("sign-in-error").textContent = s.error ? errorWords(s.error) : "";
    const roster = $("roster");
    const picking = s.user === null;
    roster.hidden = !picking;
    $("pin-stage").hidden = picking;
    if (picking) {
      roster.replaceChildren();
      const hint = document.createElement("p");
      hint.className = "roster-hint";
      const users = (view.roster || []).filter((u) => !supervisor || u.role === "supervisor");
      hint.textContent =
        view.roster === null
          ? t("roster_loading")
          : users.length === 0 && !s.error
            ? t("roster_empty")
            : t(supervisor ? "sign_in_pick_supervisor" : "sign_in_pick");
      roster.append(hint);
      const list = document.createElement("div");
      list.className = "roster-list";
      for (const user of users) {
        const button = document.createElement("button");
        button.type = "button";
        button.className = "user";
        button.dataset.user = user.name;
        button.append(span("user-name", user.name), span("user-role", t("role_" + user.role, {}, "role_viewer")));
        button.addEventListener("click", () => pickUser(user.name));
        list.append(button);
      }
      roster.append(list);
    } else {
      $("pin-for").textContent = t("sign_in_pin_for", { user: s.user });
      $("pin-dots").textContent = "•".repeat(s.pin.length);
      $("pin-dots").dataset.length = String(s.pin.length);
      $("sign-in-submit").disabled = s.pin.length < 4;
      for (const key of $("keypad").children) {
        if (key.dataset.key === "clear") key.textContent = t("clear");
        if (key.dataset.key === "back") key.setAttribute("aria-label", t("backspace"));
      }
    }
  }

  // --- wiring --------------------------------------------------------------------------

  function keypad() {
    const box = $("keypad");
    for (const key of ["1", "2", "3", "4", "5", "6", "7", "8", "9", "clear", "0", "back"]) {
      const button = document.createElement("button");
      button.type = "button";
      button.className = "key";
      button.dataset.key = key;
      button.textContent = key === "back" ? "⌫" : key === "clear" ? "" : key;
      button.addEventListener("click", () => {
        const s = view.signIn;
        if (!s) return;
        if (key === "clear") s.pin = "";
        else if (key === "back") s.pin = s.pin.slice(0, -1);
        else if (s.pin.length < 12) s.pin += key;
        s.error = null;
        renderSignIn();
      });
      box.appendChild(button);
    }
    // The hand count's keys, with the count typed as the last cell.
    const stub = $("stub-keys");
    for (const key of ["1", "2", "3", "4", "5", "back", "6", "7", "8", "9", "0"]) {
      const button = document.createElement("button");
      button.className = "key";
      button.dataset.key = key;
      button.textContent = key === "back" ? "⌫" : key;
      if (key === "back") button.id = "stub-back";
      button.addEventListener("click", () => typeStub(key));
      stub.appendChild(button);
    }
    const count = document.createElement("output");
    count.id = "stub-count";
    count.className = "stub-count";
    stub.appendChild(count);
  }

  function init() {
    keypad();
    $("sign-in-form").addEventListener("submit", submitSignIn);
    $("sign-in-cancel").addEventListener("click", () => {
      hideSignIn();
      render();
    });
    $("change-user").addEventListener("click", () => pickUser(null));
    $("fault-clear").addEventListener("click", () => {
      perform({ action: $("fault-clear").dataset.action, values: {}, supervisor: true });
    });
    $("external-token").addEventListener("input", () => {
      view.external = { number: null, token: $("external-token").value.trim() };
      renderStep();
    });
    $("void-open").addEventListener("click", () => {
      view.voidReason = null;
      $("void-dialog").hidden = false;
      renderVoid();
    });
    $("void-cancel").addEventListener("click", () => {
      $("void-dialog").hidden = true;
    });
    $("void-confirm").addEventListener("click", () => {
      if (view.voidReason === null) return;
      $("void-dialog").hidden = true;
      perform({ action: "void_round", values: {}, supervisor: true });
    });
    $("sign-out").addEventListener("click", () => {
      $("confirm-out-text").textContent = t("sign_out_ask", { user: view.session ? view.session.user : "" });
      $("confirm-out").hidden = false;
    });
    $("confirm-out-no").addEventListener("click", () => {
      $("confirm-out").hidden = true;
    });
    $("confirm-out-yes").addEventListener("click", async () => {
      $("confirm-out").hidden = true;
      try {
        await call("session.logout");
      } catch (error) {
        // Signed out here whatever the service says: the token is forgotten.
      }
      signedOut();
    });
    $("notice-open").addEventListener("click", () => {
      view.noticeOpen = true;
      render();
    });
    $("notice-close").addEventListener("click", () => {
      view.noticeOpen = false;
      render();
    });
    $("notice-dismiss").addEventListener("click", () => {
      view.noticeOpen = false;
      view.dismissedNotice = view.state && view.state.notice ? view.state.notice.ts : null;
      render();
    });
    $("previous").addEventListener("click", () => {
      const hands = V.handsOf(view.state);
      if (!hands) return;
      $("previous-title").textContent = t("previous_round_title", { id: hands.round });
      renderHands($("previous-hands"), hands);
      $("previous-dialog").hidden = false;
    });
    $("previous-close").addEventListener("click", () => {
      $("previous-dialog").hidden = true;
      $("previous-hands").replaceChildren();
    });
    $("lang").addEventListener("click", () => {
      view.lang = view.lang === "es" ? "en" : "es";
      localStorage.setItem("console.lang", view.lang);
      render();
    });
    new ResizeObserver(() => renderPositions()).observe($("field"));
    render();
    if (sessionStorage.getItem("console.token")) resume();
    else showSignIn(null);
  }

  document.addEventListener("DOMContentLoaded", init);
})();
