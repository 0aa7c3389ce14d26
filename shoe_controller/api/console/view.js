// The console's view logic, without the page: the state fold, the translation lookup, the
// words of the latest prompt (by its code and values), the prompt an input answers, the
// evidence the panel shows, the next step and the layout of the positions. Pure functions of their arguments (no DOM,
// no socket), so that the browser tests call them one by one
// (tests/api/test_console_view.py).
"use strict";

(function (global) {
  // --- translation ---------------------------------------------------------------------

  function pluralForm(lang, n) {
    try {
      return new Intl.PluralRules(lang).select(n);
    } catch (error) {
      return n === 1 ? "one" : "other";
    }
  }

  function fill(text, values) {
    let out = text;
    for (const [name, value] of Object.entries(values || {})) {
      out = out.split("{" + name + "}").join(String(value));
    }
    return out;
  }

  // A text whose placeholder nobody filled is not a text to show.
  const UNFILLED = /\{[a-z_]+\}/;

  // The text of ``key`` in ``lang`` with ``values`` filled in, or null when the table has no
  // such key or a value the text names is missing. A plural entry ({one, other, ...}) is
  // chosen by the number ``values.n``.
  function lookup(texts, lang, key, values) {
    const table = texts[lang];
    if (!table || !Object.prototype.hasOwnProperty.call(table, key)) return null;
    let entry = table[key];
    if (entry !== null && typeof entry === "object") {
      const n = values && typeof values.n === "number" ? values.n : 0;
      entry = entry[pluralForm(lang, n)] !== undefined ? entry[pluralForm(lang, n)] : entry.other;
    }
    if (typeof entry !== "string") return null;
    const text = fill(entry, values);
    return UNFILLED.test(text) ? null : text;
  }

  // A translator for one language: ``t(key, values, fallbackKey)``. A key the table lacks
  // falls back to ``fallbackKey``; the key itself is never shown as a text.
  function translator(texts, lang) {
    return function t(key, values, fallbackKey) {
      const text = lookup(texts, lang, key, values);
      if (text !== null) return text;
      if (fallbackKey) {
        const other = lookup(texts, lang, fallbackKey, values);
        if (other !== null) return other;
      }
      return "";
    };
  }

  // --- the state fold ------------------------------------------------------------------

  // Phases in which no round is open (as the service's public state folds them).
  const BETWEEN_ROUNDS = new Set(["no_shoe", "idle", "shuffle_check"]);
  // Phases of an open round whose outcome is not decided: a supervisor may end it void.
  const UNDECIDED = new Set([
    "deck_loaded",
    "bets_closed",
    "start_set",
    "dealing",
    "stub_count",
    "stub_confirm",
    "stub_dispute",
    "misdeal_review",
  ]);

  function noCards(positions) {
    const cards = {};
    for (let p = 1; p <= positions; p++) cards[String(p)] = 0;
    return cards;
  }

  // The number of positions: the table the rules profile gives, else the cards' keys.
  function positionsOf(state) {
    if (!state) return 0;
    const table = state.table;
    if (table && Number.isInteger(table.positions) && table.positions > 0) return table.positions;
    return state.cards ? Object.keys(state.cards).length : 0;
  }

  function emptyConsole() {
    // What the console folds beyond the service's snapshot: the fault codes of the current
    // fault, whether the shoe still reports a jam (a clear cannot succeed until it stops),
    // and ``seen``, what it saw of the latest round: {round, faulted (null when the console
    // did not see the round from its start), determination}.
    return { faults: [], jamHeld: false, seen: null };
  }

  function clone(value) {
    return JSON.parse(JSON.stringify(value));
  }

  function clearRound(s) {
    s.wagers = [];
    s.wagered = null;
    s.start_position = null;
    s.cards = noCards(positionsOf(s));
    s.cards_dealt = 0;
    s.stub = null;
  }

  // The snapshot ``table.state`` answered, with what the console folded itself for the same
  // round kept (or derived from the snapshot when the console has nothing for it).
  function fromSnapshot(snapshot, previous) {
    const s = clone(snapshot);
    s.console = emptyConsole();
    const before = previous && previous.console;
    if (before && previous.round === s.round) {
      s.console.faults = before.faults.slice();
      s.console.jamHeld = before.jamHeld;
    }
    const seen = before ? before.seen : null;
    const last = s.last_round ? s.last_round.round : null;
    if (seen && (seen.round === s.round || seen.round === last)) s.console.seen = clone(seen);
    if (s.phase === "fault") {
      if (s.fault && !s.console.faults.includes(s.fault.code)) s.console.faults.push(s.fault.code);
      if (!(previous && previous.round === s.round && previous.phase === "fault")) {
        s.console.jamHeld = promptCode(s.prompt) === "attendant_clear_jam";
      }
    } else {
      s.console.faults = [];
      s.console.jamHeld = false;
    }
    return s;
  }

  // One published event folded into the state (a copy: the argument is left as it was).
  function fold(state, event) {
    const s = clone(state);
    if (!s.console) s.console = emptyConsole();
    s.updated = event.ts !== undefined ? event.ts : s.updated;
    const roundId = event.round;
    if (roundId !== undefined && roundId !== null && roundId !== s.round) {
      s.round = roundId;
      clearRound(s);
    } else if ((roundId === null || roundId === undefined) && event.event === "state") {
      s.round = null;
    }
    const handler = HANDLERS[event.event];
    if (handler) handler(s, event);
    return s;
  }

  const PROMPT_KEYS = ["id", "need", "code", "values", "message", "proposal", "evidence", "role", "options", "rule"];

  const HANDLERS = {
    started(s, e) {
      s.service = { version: e.version, profile: e.profile, bench: e.bench };
      if (e.table && Number.isInteger(e.table.positions)) {
        const before = positionsOf(s);
        s.table = clone(e.table);
        if (positionsOf(s) !== before) s.cards = noCards(positionsOf(s));
      }
    },
    connected(s, e) {
      s.shoe = {
        device: e.device,
        model: e.model,
        serial: e.serial,
        firmware: e.firmware,
        approved: e.approved,
        reason: e.reason,
        link: "up",
      };
    },
    link(s, e) {
      if (s.shoe) {
        s.shoe.link = e.status;
        s.shoe.link_message = e.message;
      }
    },
    state(s, e) {
      s.phase = e.state;
      if (BETWEEN_ROUNDS.has(e.state)) {
        s.round = null;
        clearRound(s);
      }
      s.prompt = null;
      if (e.state !== "fault") {
        s.console.faults = [];
        s.console.jamHeld = false;
      }
      // Bets open: the console sees this round from its start.
      if (e.state === "deck_loaded" && s.round) {
        s.console.seen = { round: s.round, faulted: false, determination: null };
      }
    },
    prompt(s, e) {
      s.prompt = {};
      for (const key of PROMPT_KEYS) s.prompt[key] = e[key] === undefined ? null : e[key];
      const code = promptCode(s.prompt);
      if (code === "attendant_clear_ready") s.console.jamHeld = false;
      if (code === "attendant_clear_jam") s.console.jamHeld = true;
    },
    wagers(s, e) {
      s.wagers = (e.positions || []).slice().sort((a, b) => a - b);
    },
    bets_closed(s, e) {
      s.wagered = (e.wagered || []).slice().sort((a, b) => a - b);
    },
    start_position(s, e) {
      const start = { position: e.position, method: e.method };
      if (e.dice !== undefined) start.dice = e.dice;
      if (e.value !== undefined) start.value = e.value;
      s.start_position = start;
    },
    card(s, e) {
      // A card the snapshot counted already (its draw index is not beyond the count) is
      // not counted twice when its event arrives after the snapshot.
      if (typeof e.index === "number" && e.index <= s.cards_dealt) return;
      const key = String(e.position);
      if (key in s.cards) s.cards[key] += 1;
      s.cards_dealt = Math.max(s.cards_dealt + 1, e.index || 0);
    },
    stub(s, e) {
      s.stub = e.count;
    },
    determination(s, e) {
      const determination = { misdealt: e.misdealt === true, contradicts: e.contradicts === true };
      const seen = s.console.seen;
      if (seen && seen.round === s.round) seen.determination = determination;
      else s.console.seen = { round: s.round, faulted: null, determination };
    },
    fault(s, e) {
      s.fault = { code: e.code, message: e.message, rule: e.rule };
      if (!s.console.faults.includes(e.code)) s.console.faults.push(e.code);
      if (e.code === "jam") s.console.jamHeld = true;
      const seen = s.console.seen;
      if (seen && seen.round === s.round) seen.faulted = true;
    },
    fault_cleared(s) {
      s.fault = null;
      s.console.faults = [];
      s.console.jamHeld = false;
    },
    notice(s, e) {
      s.notice = { code: e.code, message: e.message, ts: e.ts };
    },
    round_end(s, e) {
      if (e.outcome === "not_played") return;
      const wagered = (e.wagered || []).slice().sort((a, b) => a - b);
      if (e.outcome === "dealt" || s.wagered === null) s.wagered = wagered;
      s.last_round = {
        round: e.round,
        outcome: e.outcome,
        reason: e.reason,
        start_position: e.start_position,
        cards_per_position: e.cards_per_position,
        wagered,
        hands: null,
      };
    },
    round_closed(s, e) {
      if (s.last_round && s.last_round.round === e.round) s.last_round.hands = e.hands;
      clearRound(s);
    },
    stopped(s) {
      s.phase = "stopped";
      s.prompt = null;
      if (s.shoe) s.shoe.link = "stopped";
      // A stop voids a round with cards at stake without a fault (F4): not a supervisor's.
      const seen = s.console.seen;
      if (seen && seen.faulted === false) seen.faulted = null;
    },
  };

  // --- what the latest prompt says -------------------------------------------------------

  // The prompt's code: the variant of its need the service says it is (null for a prompt
  // journaled before codes).
  function promptCode(prompt) {
    return prompt && typeof prompt.code === "string" && prompt.code ? prompt.code : null;
  }

  // The translation key and values of the latest prompt's words: its code's words filled
  // with its values, or its need's when the console has no words for the code.
  // ``label(position)`` names a position in the console's language.
  function promptText(state, label) {
    const prompt = state && state.prompt;
    if (!prompt) return null;
    let code = promptCode(prompt);
    const values = Object.assign({}, prompt.values || {});
    if (typeof values.count === "number") values.n = values.count;
    if (typeof values.position === "number" && label) values.seat = label(values.position);
    // The shoe reported a jam again after it said it was free: the clear waits again.
    if (prompt.need === "attendant_clear" && state.console && state.console.jamHeld) {
      code = "attendant_clear_jam";
    }
    return { key: code ? "prompt_" + code : "need_" + prompt.need, fallback: "need_" + prompt.need, values };
  }

  // The parameters of an input that answers the prompt on the screen: ``params`` with the
  // prompt's ``id``, so that the service refuses the input once the table has moved on
  // (another person answered, the shoe went on) instead of applying it to a prompt nobody
  // here saw. Without a prompt on the screen, ``params`` as they are.
  function answering(state, params) {
    const prompt = state && state.prompt;
    const out = Object.assign({}, params || {});
    if (prompt && Number.isSafeInteger(prompt.id) && prompt.id > 0) out.prompt = prompt.id;
    return out;
  }

  // --- the evidence -------------------------------------------------------------------

  // The record's proposal as a determination: true (misdealt), false (not misdealt), or
  // null when the record cannot decide.
  function proposalMisdealt(prompt) {
    const proposal = prompt && prompt.proposal;
    if (proposal === "misdeal" || proposal === "void_misdeal") return true;
    if (proposal === "no-misdeal" || proposal === "void_deck_removed") return false;
    return null;
  }

  // The stub's figures (D1) as [key, values] pairs: what the shoe counted, what its reader
  // read, what the deal leaves, what is expected, and the croupier's count once entered.
  function figureLines(prompt) {
    const e = (prompt && prompt.evidence) || {};
    const lines = [];
    if (typeof e.croupier_count === "number") lines.push(["fig_croupier", { n: e.croupier_count }]);
    if (typeof e.shoe_count === "number") lines.push(["fig_shoe", { n: e.shoe_count }]);
    else if ("shoe_count" in e) lines.push(["fig_shoe_none", {}]);
    if (typeof e.stub_cards_read === "number") lines.push(["fig_read", { n: e.stub_cards_read }]);
    if (typeof e.by_deal === "number") lines.push(["fig_deal", { n: e.by_deal }]);
    if (typeof e.expected === "number") lines.push(["fig_expected", { n: e.expected }]);
    return lines;
  }

  // The evidence of a misdeal determination (D2), one sentence per figure, as [key, values]
  // pairs; ``label(position)`` names a position in the console's language.
  function evidenceLines(prompt, label) {
    const lines = [];
    const proposal = proposalMisdealt(prompt);
    if (proposal === true) lines.push(["ev_proposal_misdeal", {}]);
    else if (proposal === false) lines.push(["ev_proposal_no_misdeal", {}]);
    else lines.push(["ev_no_proposal", {}]);
    const e = (prompt && prompt.evidence) || {};
    let counts = e.cards_per_position;
    if (counts && !Array.isArray(counts)) {
      counts = Object.keys(counts)
        .sort((a, b) => Number(a) - Number(b))
        .map((k) => counts[k]);
    }
    if (Array.isArray(counts) && counts.length > 0) {
      if (counts.every((n) => n === counts[0])) {
        lines.push(["ev_cards_all", { n: counts[0] }]);
      } else {
        lines.push(["ev_cards_each", { list: counts.map((n, i) => [label(i + 1), n]) }]);
      }
    }
    if (typeof e.stub_count === "number") {
      lines.push(["ev_stub", { n: e.stub_count, expected: e.stub_expected }]);
      if (Array.isArray(counts)) {
        lines.push(["ev_deck", { n: counts.reduce((a, b) => a + b, 0) + e.stub_count }]);
      }
    }
    if (e.composition === "verified" || e.composition === "unverified" || e.composition === "short") {
      lines.push(["ev_composition_" + e.composition, {}]);
    }
    if (typeof e.unread_cards === "number") {
      lines.push(e.unread_cards > 0 ? ["ev_unread", { n: e.unread_cards }] : ["ev_all_read", {}]);
    }
    if (typeof e.jams === "number" && e.jams > 0) lines.push(["ev_jams", { n: e.jams }]);
    if (typeof e.stub_cards_read === "number") {
      lines.push(["ev_stub_read", { n: e.stub_cards_read }]);
    }
    if (typeof e.conclusive === "boolean") {
      lines.push([e.conclusive ? "ev_conclusive" : "ev_not_conclusive", {}]);
    }
    if (Array.isArray(e.notes) && e.notes.length > 0) {
      lines.push(["ev_notes", { n: e.notes.length }]);
    }
    return lines;
  }

  // --- the external generator's value -----------------------------------------------------

  const SIGNED_VALUE = /^\s*(\d{1,3}):(\d{1,19}):((?:[0-9A-Fa-f]{2}){1,128})\s*$/;

  // The value an external generator shows, NUMBER:COUNTER:SIGNATURE (scanned or typed), as
  // {number, counter, signature}; null when ``text`` is not one.
  function signedValue(text) {
    const match = SIGNED_VALUE.exec(text || "");
    if (!match) return null;
    const counter = Number(match[2]);
    if (!Number.isSafeInteger(counter)) return null;
    return { number: Number(match[1]), counter, signature: match[3].toLowerCase() };
  }

  // The parameters of ``table.start_by_external_rng`` for what the dealer entered (the
  // number touched, or the value scanned), or null when nothing the table takes is entered.
  function externalParams(state, local) {
    const generator = state && state.table ? state.table.external_rng : null;
    if (!generator) return null;
    const entry = (local && local.external) || {};
    const positions = positionsOf(state);
    const value = entry.token ? signedValue(entry.token) : null;
    if (entry.token && !value) return null;
    if (value) {
      if (value.number < 1 || value.number > positions) return null;
      return { number: value.number, counter: value.counter, signature: value.signature };
    }
    if (generator.signature === "required") return null;
    const number = entry.number;
    return Number.isInteger(number) && number >= 1 && number <= positions ? { number } : null;
  }

  // --- the next step -------------------------------------------------------------------

  function betsOpen(state) {
    if (!state) return false;
    const need = state.prompt && state.prompt.need;
    return state.phase === "deck_loaded" || need === "no_more_bets" || need === "wagers";
  }

  // The proposal of a stub count (the shoe's count, or the croupier's for a supervisor),
  // when it is a count.
  function countProposal(prompt) {
    const proposal = prompt ? prompt.proposal : null;
    return typeof proposal === "number" && Number.isInteger(proposal) ? proposal : null;
  }

  // What the panel offers now: the green button (``main``: the record's proposal where
  // there is one), the other choices, and what the panel shows (dice, the external
  // generator, the hand count, the figures, the evidence). Each button is {key, values,
  // action, enabled, supervisor}: ``supervisor`` when only a supervisor may give it.
  // ``local`` holds the console's own choices (the dice touched, the count typed, the
  // start's method, the external generator's value).
  function stepOf(state, local) {
    const step = { kind: null, main: null, alternatives: [] };
    if (!state) return step;
    const prompt = state.prompt;
    const need = prompt ? prompt.need : null;
    const phase = state.phase;
    const mine = local || {};
    const button = (key, action, enabled, extra) =>
      Object.assign({ key, values: {}, action, enabled: enabled !== false, supervisor: false }, extra || {});
    const typed = typeof mine.stub === "number" ? mine.stub : null;
    const typedButton = (key) =>
      typed === null
        ? button(key, "stub_counted", false)
        : button(key + "_n", "stub_counted", true, { values: { n: typed } });
    if (phase === "fault" || phase === "stopped" || phase === null || phase === undefined) {
      step.kind = phase === "fault" ? "fault" : "wait";
    } else if (need === "confirm_shuffle" || phase === "shuffle_check") {
      step.kind = "shuffle";
      step.main = button("do_confirm_shuffle", "confirm_shuffle");
    } else if (betsOpen(state)) {
      step.kind = "wagers";
      step.main = button("do_no_more_bets", "no_more_bets", (state.wagers || []).length > 0);
    } else if (need === "start_position" || phase === "bets_closed") {
      const diceOnly = promptCode(prompt) === "start_position_dice";
      const generator = !diceOnly && state.table && state.table.external_rng;
      if (generator && mine.method === "external") {
        step.kind = "external";
        step.main = button("do_start_by_external", "start_by_external", externalParams(state, mine) !== null);
        step.alternatives.push(button("do_use_dice", "use_dice"));
      } else {
        step.kind = "start";
        const dice = mine.dice || [null, null, null];
        step.main = button("do_start_by_dice", "start_by_dice", !dice.includes(null));
        if (!diceOnly) step.alternatives.push(button("do_start_by_rng", "start_by_rng"));
        if (generator) step.alternatives.push(button("do_use_external", "use_external"));
      }
    } else if (need === "wager_settled" || phase === "start_set") {
      step.kind = "wager_settled";
      step.main = button("do_wager_settled", "wager_settled");
    } else if (need === "stub_count" || phase === "stub_confirm") {
      step.kind = "stub";
      const proposal = countProposal(prompt);
      if (proposal !== null) {
        step.main = button("do_stub_proposal", "stub_proposal", true, { values: { n: proposal } });
        step.alternatives.push(typedButton("do_stub_counted"));
      } else {
        step.main = typedButton("do_stub_counted");
      }
    } else if (need === "accept_stub_count" || phase === "stub_dispute") {
      step.kind = "dispute";
      const proposal = countProposal(prompt);
      if (proposal !== null) {
        step.main = button("do_accept_stub", "accept_stub_count", true, {
          values: { n: proposal },
          supervisor: true,
        });
      }
      step.alternatives.push(typedButton("do_stub_recount"));
    } else if (need === "misdeal_determination" || phase === "misdeal_review") {
      step.kind = "misdeal";
      const proposal = proposalMisdealt(prompt);
      // "Misdealt" against a record that shows every position complete contradicts it: a
      // supervisor's determination (D2).
      const contradicts = proposal === false;
      const misdealt = button(contradicts ? "do_misdealt_supervisor" : "do_misdealt", "misdealt", true, {
        supervisor: contradicts,
      });
      const notMisdealt = button("do_not_misdealt", "not_misdealt");
      if (proposal === true) {
        step.main = misdealt;
        step.alternatives.push(notMisdealt);
      } else if (proposal === false) {
        step.main = notMisdealt;
        step.alternatives.push(misdealt);
      } else {
        step.alternatives.push(misdealt, notMisdealt);
      }
    } else if (need === "close_round" || phase === "dealt") {
      step.kind = "close";
      step.main = button("do_close_round", "close_round");
    } else if (need === "new_deck") {
      step.kind = "new_deck";
      step.main = button("do_confirm_new_deck", "confirm_new_deck", true, { supervisor: true });
    } else if (phase === "dealing" || phase === "stub_count") {
      step.kind = "dealing";
    } else {
      step.kind = "wait";
    }
    return step;
  }

  // The fault banner's button: hidden outside a fault; enabled only when a clear can
  // succeed now (the shoe no longer reports a jam). While the shoe is away with cards at
  // stake, a clear is taken only as the supervisor's choice to void the round, and the
  // button says so.
  function clearOf(state) {
    if (!state || state.phase !== "fault") return { visible: false, enabled: false };
    const prompt = state.prompt;
    const need = prompt ? prompt.need : null;
    if (need === "wait_shoe") {
      const options = (prompt && prompt.options) || [];
      return {
        visible: true,
        enabled: options.includes("void_round"),
        key: "fault_void_clear",
        action: "void_clear",
      };
    }
    const jam = state.console ? state.console.jamHeld : false;
    return {
      visible: true,
      enabled: need === "attendant_clear" && !jam,
      key: "fault_clear",
      action: "clear_fault",
    };
  }

  // Whether a supervisor may end the round void now (F6): an open round whose outcome is
  // not decided.
  function voidOf(state) {
    const open = Boolean(state && state.round && UNDECIDED.has(state.phase));
    return { visible: open, round: open ? state.round : null };
  }

  // The reasons a supervisor chooses from to end a round void: each has its words in both
  // languages (``void_reason_<code>``) and the text journaled as the reason.
  const VOID_REASONS = [
    ["card_exposed", "a card was exposed at the table"],
    ["procedure_error", "the croupier made an error of procedure"],
    ["dispute", "a dispute at the table"],
    ["equipment", "a problem with the shoe or the table's equipment"],
    ["game_protection", "the supervisor suspects an irregularity (game protection)"],
  ];

  // The round's outcome, announced until the next round starts: [key, values] or null.
  function outcomeOf(state) {
    const last = state && state.last_round;
    if (!last || !last.outcome) return null;
    if (state.round !== null && state.round !== undefined && state.round !== last.round) {
      return null;
    }
    if (last.outcome === "dealt") return [last.hands ? "outcome_closed" : "outcome_dealt", {}];
    const seen = state.console && state.console.seen;
    const mine = seen && seen.round === last.round ? seen : { faulted: null, determination: null };
    if (last.outcome === "void_deck_removed" && mine.determination && mine.determination.contradicts) {
      return ["outcome_void_deck_removed_contradicts", {}];
    }
    if (last.outcome === "void_fault") {
      // A void round with no fault, seen from its start, was a supervisor's (F6).
      if (mine.faulted === false) return ["outcome_void_round", {}];
      if (mine.faulted === null) return ["outcome_void", {}];
    }
    return ["outcome_" + last.outcome, {}];
  }

  // The hands of the last closed round: shown in the panel until the next round opens,
  // then apart, as the previous round's (never mixed with the new round's positions).
  function handsOf(state) {
    const last = state && state.last_round;
    if (!last || !last.hands) return null;
    const current = state.round === null || state.round === undefined || state.round === last.round;
    return { round: last.round, hands: last.hands, current };
  }

  // The fault codes the banner words: the latest prompt's, else those folded.
  function faultCodes(state) {
    if (!state) return [];
    const values = state.prompt && state.prompt.values;
    if (values && Array.isArray(values.faults) && values.faults.length) return values.faults.slice();
    if (state.console && state.console.faults.length) return state.console.faults.slice();
    return state.fault ? [state.fault.code] : [];
  }

  // --- the positions around the table ------------------------------------------------------

  const GAP = 8;
  // The tallest tile, and the widest a tile gets for its height; the smallest a touch
  // target may be.
  const MAX_HEIGHT = 180;
  const MAX_ASPECT = 2.4;
  const MIN_SIDE = 64;

  function overlaps(a, b) {
    return (
      a.x < b.x + b.w + GAP && b.x < a.x + a.w + GAP && a.y < b.y + b.h + GAP && b.y < a.y + a.h + GAP
    );
  }

  // The tiles for ``sides`` positions up each side and the rest across the top. The
  // banker's tile leaves ``corner`` px free on each side of it, for the buttons that sit
  // in the corners at the dealer's side.
  function horseshoe(n, width, height, sides, corner) {
    const players = n - 1;
    const top = players - 2 * sides;
    const rows = (top > 0 ? 1 : 0) + sides + 1;
    const across = Math.max(top, sides > 0 ? 2 : 1, 1);
    let h = Math.min(MAX_HEIGHT, (height - (rows - 1) * GAP) / rows);
    let w = Math.min(
      (width - (across + 1) * GAP) / across,
      sides > 0 ? (width - GAP) / 2 : width,
      h * MAX_ASPECT
    );
    h = Math.floor(Math.min(h, w));
    w = Math.floor(w);
    const banker = corner > 0 ? Math.min(w, Math.floor(width - 2 * (corner + GAP))) : w;
    if (h <= 0 || w <= 0 || banker <= 0) return null;
    const y0 = (height - (rows * h + (rows - 1) * GAP)) / 2;
    const rowY = (i) => Math.round(y0 + i * (h + GAP));
    const tiles = [];
    const bottom = rows - 1;
    tiles.push({ position: 1, x: Math.round((width - banker) / 2), y: rowY(bottom), w: banker, h });
    // Counterclockwise from the banker, as the regulation counts: up the right side,
    // across the top from right to left, down the left side.
    let position = 2;
    for (let i = 0; i < sides; i++) {
      tiles.push({ position: position++, x: Math.round(width - w), y: rowY(bottom - 1 - i), w, h });
    }
    if (top > 0) {
      const spacing = (width - top * w) / (top + 1);
      for (let j = top - 1; j >= 0; j--) {
        tiles.push({ position: position++, x: Math.round(spacing * (j + 1) + j * w), y: rowY(0), w, h });
      }
    }
    for (let i = sides - 1; i >= 0; i--) {
      tiles.push({ position: position++, x: 0, y: rowY(bottom - 1 - i), w, h });
    }
    for (let i = 0; i < tiles.length; i++) {
      for (let j = i + 1; j < tiles.length; j++) {
        if (overlaps(tiles[i], tiles[j])) return null;
      }
    }
    return tiles;
  }

  // Tiles for ``n`` positions in a ``width`` x ``height`` area, as they sit at the table:
  // the banker at the dealer's side (the bottom), the others around it, and, when
  // ``corner`` is given, that many px free on both sides of the banker (see cornersOf).
  // Of the ways to share the positions between the sides and the top, the one with the
  // largest tiles that do not overlap. Each tile is {position, x, y, w, h}.
  function layout(n, width, height, corner = 0) {
    if (n < 1) return [];
    let best = null;
    let bestScore = -1;
    for (let sides = 0; 2 * sides <= n - 1; sides++) {
      const tiles = horseshoe(n, width, height, sides, corner);
      if (!tiles) continue;
      const { w, h } = tiles[tiles.length > 1 ? 1 : 0];
      // A way whose tiles are too small to touch comes after every way whose are not.
      const touchable = Math.min(w, tiles[0].w) >= MIN_SIDE && h >= MIN_SIDE;
      const score = Math.min(w, 2 * h) * h + (touchable ? 1e9 : 0);
      if (score > bestScore) {
        best = tiles;
        bestScore = score;
      }
    }
    return best || [];
  }

  // The largest a corner's button gets.
  const CORNER_MAX_WIDTH = 240;
  const CORNER_MAX_HEIGHT = 88;

  // The two corners at the dealer's side, left and right of the banker's tile, level with
  // its bottom edge: {left, right}, each {x, y, w, h}, or null when the tiles leave no
  // touchable room there.
  function cornersOf(tiles, width) {
    const banker = tiles.find((tile) => tile.position === 1);
    if (!banker) return null;
    const w = Math.min(CORNER_MAX_WIDTH, banker.x - GAP, width - (banker.x + banker.w) - GAP);
    const h = Math.min(CORNER_MAX_HEIGHT, banker.h);
    if (w < MIN_SIDE || h < MIN_SIDE) return null;
    const y = banker.y + banker.h - h;
    return { left: { x: 0, y, w, h }, right: { x: width - w, y, w, h } };
  }

  // --- errors ------------------------------------------------------------------------------

  const ERROR_KEYS = {
    "-32700": "err_parse",
    "-32600": "err_invalid_request",
    "-32601": "err_method",
    "-32602": "err_params",
    "-32603": "err_internal",
    "-32001": "err_not_signed_in",
    "-32002": "err_role",
    "-32003": "err_not_now",
    "-32004": "err_sign_in",
    "-32005": "err_locked",
    "-32006": "err_unavailable",
    "-32007": "err_moved_on",
  };

  // The translation of a JSON-RPC error object (never its English message): [key, values],
  // and for a refusal the procedure names, the words to fall back on: [key, values, fallback].
  function errorText(error, user) {
    if (!error || typeof error.code !== "number") return ["err_network", {}];
    const key = ERROR_KEYS[String(error.code)];
    const data = error.data || {};
    if (key === "err_role") return [key, { role: data.role || "" }];
    // A right PIN that breaks the PIN policy (edited into the users file by hand): not a
    // wrong one; a technician must reset it. Why, in data.pin_policy, is the service's
    // English: the console says it in its own words.
    if (key === "err_sign_in" && typeof data.pin_policy === "string") {
      return user ? ["err_pin_policy", { user }] : ["err_pin_policy_any", {}];
    }
    if (key === "err_not_now" && typeof data.refusal === "string" && /^[a-z_]+$/.test(data.refusal)) {
      const values = data.values && typeof data.values === "object" ? data.values : {};
      return ["refusal_" + data.refusal, Object.assign({}, values), key];
    }
    if (key === "err_locked") {
      const seconds = typeof data.retry_after === "number" ? data.retry_after : 60;
      return [key, { n: Math.max(1, Math.round(seconds / 60)), user: user || "" }];
    }
    if (key) return [key, {}];
    return ["err_other", { code: error.code }];
  }

  // The values of an error's words that are words themselves, in the console's language
  // (``t`` a translator): the role a refusal by role names, the input only a supervisor
  // gives that a refusal names.
  function wordedValues(t, key, values) {
    const filled = Object.assign({}, values);
    if (key === "err_role" && values.role) filled.role = t("role_" + values.role, {}, "role_viewer");
    if (typeof values.input === "string") filled.input = t("input_" + values.input, {}, "input_other");
    return filled;
  }

  global.ConsoleView = {
    lookup,
    translator,
    pluralForm,
    fold,
    fromSnapshot,
    positionsOf,
    promptCode,
    promptText,
    answering,
    proposalMisdealt,
    figureLines,
    evidenceLines,
    signedValue,
    externalParams,
    betsOpen,
    stepOf,
    clearOf,
    voidOf,
    VOID_REASONS,
    outcomeOf,
    handsOf,
    faultCodes,
    layout,
    cornersOf,
    errorText,
    wordedValues,
    ERROR_KEYS,
  };
})(window);
