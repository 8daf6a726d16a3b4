// Practice mode and self-grading for the question cards rendered by site_hooks/practice.py.
//
// Every card (<article class="practice-q">) gets: a notes box, a checkbox per rubric point
// (self-grade), and, where it has one, a numeric quick check. Notes, grades and the last
// quick-check answer are kept in localStorage, so they survive reloads and later visits;
// nothing leaves the browser.
// On the page with [data-practice-mode], one card is shown at a time, chosen by level, topic
// and "show" (all, my weak ones, not graded yet) filters and Previous / Random / Next buttons
// (Previous and Next also under the card); the worked answer unlocks once the rubric has been
// opened. A timer paces a spoken answer (30 s or 2 min), and a progress panel counts graded
// and weak questions by level and topic. The current question lives in the URL hash
// (#q-<id>), so a reload or a shared link returns to it, without the browser jumping down
// the page to it.
//
// The mock loop (./mock.js) runs inside practice mode: a mixed set under one timer, graded per
// must-have, with a score sheet that prints and travels as a link (#mock&...).
//
// Loaded once as an ES module. Material's `document$` emits on the first load and after every
// instant navigation; set-up is idempotent (each element is marked when done).

import { createMockLoop, isMockHash } from "./mock.js";

const STORE_KEY = "htw-practice-v1";

// ---- storage (a missing or full localStorage must never break the page) --------------------

export function loadState(storage = globalThis.localStorage) {
  try {
    const raw = storage && storage.getItem(STORE_KEY);
    const state = raw ? JSON.parse(raw) : {};
    return { grades: state.grades || {}, notes: state.notes || {}, checks: state.checks || {} };
  } catch (err) {
    return { grades: {}, notes: {}, checks: {} };
  }
}

// ---- progress -------------------------------------------------------------------------------

// A question is graded once its self-grade has been touched, and weak when a must-have was not
// ticked (an answer without any one of them fails) or its quick check was last answered wrong.
export function questionStatus(qid, points, state) {
  const ticks = state.grades[qid];
  const check = state.checks[qid];
  const graded = Array.isArray(ticks);
  const met = graded ? ticks.slice(0, points).filter(Boolean).length : 0;
  const score = graded && points ? met / points : null;
  const weak = (graded && met < points) || (check && check.verdict === "wrong") || false;
  return { graded, score, weak: Boolean(weak) };
}

// cards: [{qid, level, topic, points}] -> {levels: {name: {graded, total, weak}}, topics: {...}, all}
export function progress(cards, state) {
  const empty = () => ({ graded: 0, total: 0, weak: 0 });
  const out = { levels: {}, topics: {}, all: empty() };
  for (const card of cards) {
    const st = questionStatus(card.qid, card.points, state);
    for (const bucket of [(out.levels[card.level] ||= empty()), (out.topics[card.topic] ||= empty()), out.all]) {
      bucket.total += 1;
      if (st.graded) bucket.graded += 1;
      if (st.weak) bucket.weak += 1;
    }
  }
  return out;
}

function saveState(state, storage = globalThis.localStorage) {
  try {
    if (storage) storage.setItem(STORE_KEY, JSON.stringify(state));
  } catch (err) {
    // Private mode or quota: keep working without persistence.
  }
}

// ---- quick checks ---------------------------------------------------------------------------

// Units whose answer is a count: there "4.19M" means 4.19 million (k, M, G: 10^3, 10^6, 10^9).
// Elsewhere a letter after the number is the unit ("2.6 MB", "1.6x", "3 ms") and is not a multiplier.
export const COUNT_UNITS = new Set(["", "tokens", "rows", "groups", "sequences", "patterns", "tiles", "runs", "requests",
  "experts", "GPUs", "GPU-hours", "req/s"]);
const MAGNITUDES = { k: 1e3, K: 1e3, M: 1e6, G: 1e9 };

// "1.6", "1.6x", "56.25 %", "1,234", "2.6e2 MB" -> number; anything else -> NaN. With a count
// unit, "4.19M", "4.19 M groups" and "12k" carry their magnitude.
export function parseAnswer(text, unit = null) {
  const spaced = String(text).trim().replace(/,/g, "").replace(/\s+/g, " ");
  const number = "([-+]?(?:\\d+\\.?\\d*|\\.\\d+)(?:[eE][-+]?\\d+)?)";
  if (unit !== null && COUNT_UNITS.has(unit)) {
    // The magnitude is one letter standing alone ("4.19M", "4.19 M groups"), never the start of
    // a unit ("2 GPUs").
    const scaled = spaced.match(new RegExp(`^${number} ?([kKMG])\\b ?[A-Za-z/-]*$`));
    if (scaled) return Number(scaled[1]) * MAGNITUDES[scaled[2]];
  }
  const cleaned = spaced.replace(/ /g, "");
  // "1.36×" and "1.36 ×" are speedups as they are often typed (× is U+00D7, not the letter x).
  const match = cleaned.match(new RegExp(`^${number}[a-zµ%/×-]*$`, "i"));
  return match ? Number(match[1]) : NaN;
}

export function withinTolerance(value, expected, tolerance) {
  if (!Number.isFinite(value)) return false;
  return Math.abs(value - expected) <= tolerance * Math.abs(expected);
}

let uid = 0;
function nextId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

function setUpCheck(check, qid, state) {
  if (check.dataset.practiceReady) return;
  check.dataset.practiceReady = "true";
  const expected = Number(check.dataset.expected);
  const tolerance = Number(check.dataset.tolerance);
  const unit = check.dataset.unit || "";
  const ask = check.querySelector(".practice-check-ask");
  const derivation = check.querySelector(".practice-derivation");
  if (derivation) derivation.hidden = true; // revealed after an attempt

  const form = document.createElement("form");
  form.className = "practice-check-form";
  const inputId = nextId("practice-answer");
  const label = document.createElement("label");
  label.htmlFor = inputId;
  const unitWords = { x: "a speedup", "%": "percent" };
  label.textContent = unit ? `Your answer (${unitWords[unit] || unit})` : "Your answer";
  const input = document.createElement("input");
  input.id = inputId;
  input.type = "text";
  input.inputMode = "decimal";
  input.autocomplete = "off";
  if (ask && ask.id) input.setAttribute("aria-describedby", ask.id);
  const button = document.createElement("button");
  button.type = "submit";
  button.className = "md-button";
  button.textContent = "Check";
  const result = document.createElement("p");
  result.className = "practice-check-result";
  result.setAttribute("role", "status");
  result.setAttribute("aria-live", "polite");
  form.append(label, input, button, result);
  if (ask) ask.after(form);
  else check.prepend(form);

  function judge(text, { remember }) {
    const value = parseAnswer(text, unit);
    if (!Number.isFinite(value)) {
      result.dataset.verdict = "invalid";
      result.textContent = "Type a number, e.g. 1.62 (a unit after it is fine).";
      return;
    }
    const right = withinTolerance(value, expected, tolerance);
    result.dataset.verdict = right ? "right" : "wrong";
    result.textContent = right
      ? `Right: within ${Math.round(tolerance * 100)}% of the computed value.`
      : `Not within ${Math.round(tolerance * 100)}% of the computed value. Open the derivation below.`;
    if (derivation) derivation.hidden = false;
    if (remember && qid) {
      const fresh = loadState();
      fresh.checks[qid] = { answer: String(text).slice(0, 60), verdict: result.dataset.verdict };
      saveState(fresh);
      document.dispatchEvent(new CustomEvent("htw-practice-change"));
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    judge(input.value, { remember: true });
  });

  // The last answer comes back on the next visit, judged again against today's number.
  const saved = qid && state.checks[qid];
  if (saved && typeof saved.answer === "string") {
    input.value = saved.answer;
    judge(saved.answer, { remember: false });
  }
}

// ---- notes and self-grading -----------------------------------------------------------------

function setUpCard(card, state) {
  if (card.dataset.practiceReady) return;
  card.dataset.practiceReady = "true";
  const qid = card.dataset.qid;

  // The notes box is made here, above the rubric (a level page's cards carry no empty
  // placeholder for it: site_hooks/practice.py keeps the pages inside their size budget).
  let notes = card.querySelector(".practice-notes");
  const rubricAt = card.querySelector(".practice-rubric");
  if (!notes && rubricAt) {
    notes = document.createElement("div");
    notes.className = "practice-notes";
    notes.dataset.qid = qid;
    rubricAt.before(notes);
  }
  if (notes) {
    const id = nextId("practice-notes");
    const label = document.createElement("label");
    label.htmlFor = id;
    label.textContent = "Your notes (kept in this browser)";
    const box = document.createElement("textarea");
    box.id = id;
    box.rows = 3;
    box.value = state.notes[qid] || "";
    box.addEventListener("input", () => {
      const fresh = loadState();
      if (box.value) fresh.notes[qid] = box.value;
      else delete fresh.notes[qid];
      saveState(fresh);
    });
    notes.append(label, box);
  }

  const rubric = card.querySelector(".practice-rubric");
  if (rubric) {
    // Self-grading is per must-have: the strong signals and red flags are for reading.
    const points = [...rubric.querySelectorAll(".practice-must li")];
    const saved = state.grades[qid] || [];
    const score = document.createElement("p");
    score.className = "practice-score";
    score.setAttribute("aria-live", "polite");
    const update = () => {
      const ticks = points.map((li) => li.querySelector("input[type=checkbox]").checked);
      score.textContent = `Self-grade: ${ticks.filter(Boolean).length} of ${points.length} must-haves.`;
      return ticks;
    };
    points.forEach((li, i) => {
      const id = nextId("practice-grade");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.id = id;
      box.checked = Boolean(saved[i]);
      const label = document.createElement("label");
      label.htmlFor = id;
      while (li.firstChild) label.append(li.firstChild);
      li.append(box, label);
      li.classList.add("practice-point");
      box.addEventListener("change", () => {
        const fresh = loadState();
        fresh.grades[qid] = update();
        saveState(fresh);
        document.dispatchEvent(new CustomEvent("htw-practice-change"));
      });
    });
    rubric.after(score); // visible with the rubric closed: a returning reader sees their grade
    update();
  }

  for (const check of card.querySelectorAll(".practice-check")) setUpCheck(check, qid, state);
}

// ---- practice mode --------------------------------------------------------------------------

function option(value, text) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = text;
  return o;
}

function select(labelText, options) {
  const id = nextId("practice-filter");
  const wrap = document.createElement("span");
  wrap.className = "practice-field";
  const label = document.createElement("label");
  label.htmlFor = id;
  label.textContent = labelText;
  const el = document.createElement("select");
  el.id = id;
  for (const [value, text] of options) el.append(option(value, text));
  wrap.append(label, el);
  return [wrap, el];
}

function button(text, name) {
  const b = document.createElement("button");
  b.type = "button";
  b.className = "md-button";
  b.dataset.action = name;
  b.textContent = text;
  return b;
}

function formatTime(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

// The "Answer aloud" timer's two lengths, by the question's kind: a concept or one calculation
// is a short spoken answer, several steps or a diagnosis longer, a design question a whiteboard's.
export const TIMER_SECONDS = Object.freeze({
  concept: [30, 120], calculation: [30, 120], "multi-step": [120, 300], diagnosis: [120, 300], design: [300, 900],
});

// The rubric's disclosure, as site_hooks/practice.py renders it (twofour.course.practice.render): the
// timer's end message names it, so the reader knows what to open.
export const RUBRIC_SUMMARY = "How it is graded: must-haves, signals, levels";

function timerText(seconds) {
  return seconds < 60 ? `${seconds} s` : `${seconds / 60} min`;
}

function timerName(seconds) {
  return seconds < 60 ? `${seconds} second` : `${seconds / 60} minute`;
}

// "Answer aloud" timer: one countdown at a time; announces the end in `announce`.
function makeTimer(announce) {
  const wrap = document.createElement("div");
  wrap.className = "practice-timer";
  const label = document.createElement("span");
  label.className = "practice-timer__label";
  label.textContent = "Answer aloud:";
  const short = button("30 s", "timer-short");
  const long = button("2 min", "timer-long");
  let lengths = TIMER_SECONDS.concept;
  const stop = button("Stop", "timer-stop");
  stop.hidden = true;
  const clock = document.createElement("span");
  clock.className = "practice-timer__clock";
  clock.setAttribute("role", "timer");
  clock.setAttribute("aria-live", "off");
  clock.textContent = "";
  const bar = document.createElement("span");
  bar.className = "practice-timer__bar";
  bar.setAttribute("aria-hidden", "true");
  const fill = document.createElement("span");
  bar.append(fill);
  wrap.append(label, short, long, clock, bar, stop);

  let tick = null;
  let end = 0;
  let total = 0;
  function render() {
    const left = (end - Date.now()) / 1000;
    clock.textContent = formatTime(left);
    fill.style.width = `${Math.max(0, Math.min(100, (100 * left) / total))}%`;
    if (left <= 0) {
      reset();
      wrap.dataset.state = "done";
      clock.textContent = "Time";
      announce(`Time is up (${formatTime(total)}). Now open "${RUBRIC_SUMMARY}" and grade yourself.`);
    }
  }
  function reset() {
    clearInterval(tick);
    tick = null;
    wrap.dataset.state = "idle";
    stop.hidden = true;
    clock.textContent = "";
    fill.style.width = "0";
  }
  function start(seconds) {
    reset();
    total = seconds;
    end = Date.now() + seconds * 1000;
    wrap.dataset.state = "running";
    stop.hidden = false;
    announce(`Timer started: ${formatTime(seconds)}. Answer out loud.`);
    render();
    tick = setInterval(render, 250);
  }
  // Each button says its length in its text and its accessible name.
  function setKind(kind) {
    lengths = TIMER_SECONDS[kind] || TIMER_SECONDS.concept;
    for (const [b, seconds] of [[short, lengths[0]], [long, lengths[1]]]) {
      b.textContent = timerText(seconds);
      b.setAttribute("aria-label", `Start a ${timerName(seconds)} timer`);
      b.dataset.seconds = String(seconds);
    }
    wrap.dataset.kind = kind || "concept";
  }
  setKind("concept");
  short.addEventListener("click", () => start(lengths[0]));
  long.addEventListener("click", () => start(lengths[1]));
  stop.addEventListener("click", () => {
    reset();
    announce("Timer stopped.");
  });
  reset();
  return { element: wrap, reset, setKind };
}

let progressListener = null;
let hashListener = null;

// Back to a mock loop under Material's instant navigation: the popped history entry's address
// holds the loop (#mock&...), but Material fetches the page for it and rewrites the address
// without its fragment before practice mode is set up again. The fragment is caught here, when
// the entry is popped, and handed to the practice page set up next.
let poppedMock = null;
if (typeof window !== "undefined") {
  window.addEventListener("popstate", () => {
    poppedMock = isMockHash(location.hash) ? { path: location.pathname, hash: location.hash } : null;
  });
}

function mockHashToResume() {
  if (isMockHash(location.hash)) return location.hash;
  const popped = poppedMock;
  poppedMock = null;
  if (!popped || popped.path !== location.pathname || location.hash) return null;
  history.replaceState(history.state, "", popped.hash);
  return popped.hash;
}

// The cards live on the level pages (site_hooks/practice.py: data-sources); practice mode
// fetches them (same site, no other host) into its deck. Links in a card are made absolute
// against the page it came from, since this page sits at another depth.
// A level page keeps a glossary term's tooltip on its first occurrence only
// (site_hooks/practice.py: first_tooltip_per_page); practice mode shows one card at a time, so
// each card's first occurrence of a term gets it back from the page.
export function pageTooltips(doc) {
  const tooltips = new Map();
  for (const abbr of doc.querySelectorAll(".practice-q abbr[title]")) {
    if (!tooltips.has(abbr.textContent)) tooltips.set(abbr.textContent, abbr.getAttribute("title"));
  }
  return tooltips;
}

export function restoreTooltips(card, tooltips) {
  const seen = new Set();
  for (const abbr of card.querySelectorAll("abbr")) {
    const title = abbr.getAttribute("title") || tooltips.get(abbr.textContent);
    if (title && !seen.has(title)) {
      abbr.setAttribute("title", title);
      seen.add(title);
    } else {
      abbr.removeAttribute("title");
    }
  }
}

// A card from a page's cards file comes without its tags line (level, topic, kind) and without
// its numbers table's "how it is obtained" column (site_hooks/practice.py: cards_document, to
// keep practice mode's page weight down): the tags are made again from the card's data, and a
// link under the table leads to the card on its own page, where each number's expression is.
function completeCard(card, root, pageUrl) {
  const levels = JSON.parse(root.dataset.levels || "[]");
  const topics = JSON.parse(root.dataset.topics || "{}");
  const kinds = JSON.parse(root.dataset.kinds || "{}");
  if (!card.querySelector(".practice-meta")) {
    const meta = document.createElement("p");
    meta.className = "practice-meta";
    const tag = (text, extra = "") => {
      const span = document.createElement("span");
      span.className = `practice-tag${extra}`;
      span.textContent = text;
      return span;
    };
    meta.append(tag(`${levels.indexOf(card.dataset.level) + 1} · ${card.dataset.level}`), " ",
                tag(topics[card.dataset.topic] || card.dataset.topic), " ",
                tag(kinds[card.dataset.kind] || card.dataset.kind, " practice-tag--kind"));
    card.querySelector(".practice-title")?.after(meta);
  }
  const table = card.querySelector(".practice-answer table");
  if (table && table.querySelectorAll("thead th").length === 2 && !card.querySelector(".practice-how")) {
    const how = document.createElement("p");
    how.className = "practice-how";
    const link = document.createElement("a");
    link.href = new URL(`#${card.id}`, pageUrl).href;
    link.textContent = "how each number is obtained";
    how.append("See ", link, " (its expression on the toolkit, and its source) on the question's own page.");
    table.after(how);
  }
}

async function loadCards(root, deck, state) {
  const sources = JSON.parse(root.dataset.sources || "[]");
  const pages = await Promise.all(
    sources.map(async (src) => {
      const url = new URL(src, location.href);
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url.pathname}: HTTP ${response.status}`);
      return [url, new DOMParser().parseFromString(await response.text(), "text/html")];
    }),
  );
  for (const [url, doc] of pages) {
    const tooltips = pageTooltips(doc);
    for (const card of doc.querySelectorAll(".practice-q")) {
      restoreTooltips(card, tooltips);
      for (const el of card.querySelectorAll("[href]")) {
        const href = el.getAttribute("href");
        if (!href.startsWith("#")) el.setAttribute("href", new URL(href, url).href);
      }
      for (const el of card.querySelectorAll("[src]")) el.setAttribute("src", new URL(el.getAttribute("src"), url).href);
      const copy = document.importNode(card, true);
      copy.dataset.page = url.pathname.replace(/cards\.html$/, ""); // its page: links back to the card go there
      completeCard(copy, root, new URL(copy.dataset.page, url));
      deck.append(copy);
      setUpCard(copy, state);
    }
  }
}

async function setUpMode(root) {
  if (root.dataset.practiceStarted) return;
  root.dataset.practiceStarted = "true";
  const deck = document.querySelector(".practice-deck");
  const loading = document.querySelector(".practice-loading");
  if (deck && root.dataset.sources && !deck.querySelector(".practice-q")) {
    if (loading) loading.textContent = "Loading the questions…";
    try {
      await loadCards(root, deck, loadState());
    } catch (err) {
      if (loading) loading.textContent = `Could not load the questions (${err.message}); read them by level with the links above.`;
      root.dataset.practiceReady = "error";
      return;
    }
  }
  if (loading) loading.remove();
  const cards = [...document.querySelectorAll(".practice-deck .practice-q")];
  if (!cards.length) return;
  const levels = JSON.parse(root.dataset.levels || "[]");
  const topics = JSON.parse(root.dataset.topics || "{}");
  const points = (card) => card.querySelectorAll(".practice-rubric .practice-must li").length;
  const facts = cards.map((c) => ({ qid: c.dataset.qid, level: c.dataset.level, topic: c.dataset.topic, points: points(c) }));

  const [levelField, levelSelect] = select("Level", [["", "all levels"], ...levels.map((l) => [l, l])]);
  const [topicField, topicSelect] = select("Topic", [["", "all topics"], ...Object.entries(topics)]);
  const [showField, showSelect] = select("Show", [["", "all questions"], ["weak", "my weak ones"], ["ungraded", "not graded yet"]]);
  const prev = button("Previous", "previous");
  const random = button("Random question", "random");
  const next = button("Next", "next");
  const status = document.createElement("p");
  status.className = "practice-status";
  status.setAttribute("role", "status");
  status.setAttribute("aria-live", "polite");
  const announcer = document.createElement("p");
  announcer.className = "practice-announce";
  announcer.setAttribute("role", "status");
  announcer.setAttribute("aria-live", "polite");
  const timer = makeTimer((text) => {
    announcer.textContent = text;
  });
  const bar = document.createElement("div");
  bar.className = "practice-bar";
  const buttons = document.createElement("span");
  buttons.className = "practice-bar__buttons";
  buttons.append(prev, random, next);
  bar.append(levelField, topicField, showField, buttons);

  // Progress: graded / total and weak, by level and by topic; "review my weak ones".
  const panel = document.createElement("details");
  panel.className = "practice-progress";
  const summary = document.createElement("summary");
  const body = document.createElement("div");
  body.className = "practice-progress__body";
  const review = button("Review my weak ones", "review-weak");
  panel.append(summary, body);

  timer.element.append(announcer);
  root.append(bar, timer.element, panel, status);
  root.classList.add("practice-mode--active");

  // Previous / Next again under the card, where a reader who has scrolled down to the answer is.
  const bottom = document.createElement("nav");
  bottom.className = "practice-bottom-nav";
  bottom.setAttribute("aria-label", "Practice questions");
  const prevBottom = button("Previous question", "previous");
  const nextBottom = button("Next question", "next");
  const where = document.createElement("span");
  where.className = "practice-bottom-nav__where";
  bottom.append(prevBottom, where, nextBottom);
  deck.after(bottom);

  let current = null;
  const statusOf = (card) => questionStatus(card.dataset.qid, points(card), loadState());
  const pool = () =>
    cards.filter((c) => {
      if (levelSelect.value && c.dataset.level !== levelSelect.value) return false;
      if (topicSelect.value && c.dataset.topic !== topicSelect.value) return false;
      if (showSelect.value === "weak" && !statusOf(c).weak) return false;
      if (showSelect.value === "ungraded" && statusOf(c).graded) return false;
      return true;
    });

  function row(name, b) {
    const tr = document.createElement("tr");
    for (const [text, cls] of [[name, ""], [`${b.graded} / ${b.total}`, "num"], [String(b.weak), "num"]]) {
      const td = document.createElement("td");
      td.textContent = text;
      if (cls) td.className = cls;
      tr.append(td);
    }
    return tr;
  }
  function table(caption, buckets, names) {
    const t = document.createElement("table");
    t.className = "practice-progress__table";
    const cap = document.createElement("caption");
    cap.textContent = caption;
    const head = document.createElement("tr");
    for (const [text, cls] of [[caption.replace(/^By /, "").replace(/^./, (c) => c.toUpperCase()), ""], ["graded", "num"], ["weak", "num"]]) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = text;
      if (cls) th.className = cls;
      head.append(th);
    }
    const thead = document.createElement("thead");
    thead.append(head);
    const tbody = document.createElement("tbody");
    for (const [key, label] of names) if (buckets[key]) tbody.append(row(label, buckets[key]));
    t.append(cap, thead, tbody);
    return t;
  }
  function renderProgress() {
    const p = progress(facts, loadState());
    summary.textContent = `Your progress: ${p.all.graded} of ${p.all.total} graded, ${p.all.weak} weak`;
    body.replaceChildren(
      table("By level", p.levels, levels.map((l) => [l, l])),
      table("By topic", p.topics, Object.entries(topics)),
    );
    const note = document.createElement("p");
    note.className = "practice-progress__note";
    note.textContent =
      "Graded: you ticked the must-haves of that question. Weak: a must-have not ticked, or its quick check last answered wrong.";
    body.append(note, review);
    review.disabled = p.all.weak === 0;
  }

  function gateAnswer(card) {
    // The worked answer unlocks once the rubric has been opened: think first, then compare.
    const rubric = card.querySelector(".practice-rubric");
    const answer = card.querySelector(".practice-answer");
    if (!rubric || !answer || card.dataset.practiceGated) return;
    card.dataset.practiceGated = "true";
    answer.hidden = !rubric.open;
    rubric.addEventListener("toggle", () => {
      if (rubric.open) answer.hidden = false;
    });
  }

  function show(card, { focus = false } = {}) {
    const list = pool();
    if (!card || !list.includes(card)) card = list[0] || null;
    for (const c of cards) c.hidden = c !== card;
    if (card !== current) timer.reset();
    if (card) timer.setKind(card.dataset.kind);
    current = card;
    bottom.hidden = !card;
    if (!card) {
      status.textContent =
        showSelect.value === "weak" ? "No weak questions match these filters: nothing to review." : "No question matches these filters.";
      return;
    }
    gateAnswer(card);
    const position = `Question ${list.indexOf(card) + 1} of ${list.length}`;
    status.textContent = `${position}: ${card.querySelector(".practice-title")?.textContent.replace(/¶$/, "").trim() || card.dataset.qid}`;
    where.textContent = position;
    setHash(card.id);
    if (focus) {
      const title = card.querySelector(".practice-title");
      title?.focus?.({ preventScroll: true });
      // Bring the card's top into view only when it is above the viewport (e.g. after the
      // bottom Next); from the top bar the card is already where the reader is looking.
      const top = card.getBoundingClientRect().top;
      if (top < 0) card.scrollIntoView({ block: "start" });
    }
  }

  // The browser scrolls to the URL's #fragment when the page finishes loading, so a hash
  // written before then would make the page jump down to the card (620-780 px): write it
  // after the load event.
  let pendingHash = null;
  function setHash(id) {
    if (document.readyState === "complete") {
      history.replaceState(history.state, "", `#${id}`);
      return;
    }
    if (pendingHash === null) {
      window.addEventListener("load", () => {
        history.replaceState(history.state, "", `#${pendingHash}`);
      }, { once: true });
    }
    pendingHash = id;
  }

  function step(delta) {
    const list = pool();
    if (!list.length) return show(null);
    const i = list.indexOf(current);
    show(list[(i + delta + list.length) % list.length], { focus: true });
  }

  for (const b of [prev, prevBottom]) b.addEventListener("click", () => step(-1));
  for (const b of [next, nextBottom]) b.addEventListener("click", () => step(1));
  random.addEventListener("click", () => {
    const list = pool().filter((c) => c !== current);
    if (!list.length) return show(current);
    show(list[Math.floor(Math.random() * list.length)], { focus: true });
  });
  levelSelect.addEventListener("change", () => show(current));
  topicSelect.addEventListener("change", () => show(current));
  showSelect.addEventListener("change", () => show(current));
  review.addEventListener("click", () => {
    levelSelect.value = "";
    topicSelect.value = "";
    showSelect.value = "weak";
    show(null, { focus: true });
    showSelect.focus({ preventScroll: true });
  });
  // One listener per window: instant navigation may set the mode up again on a fresh page.
  if (progressListener) document.removeEventListener("htw-practice-change", progressListener);
  progressListener = renderProgress;
  document.addEventListener("htw-practice-change", progressListener);

  for (const c of cards) {
    const title = c.querySelector(".practice-title");
    if (title) title.tabIndex = -1; // focus target when moving between questions
  }
  renderProgress();

  // The mock loop takes the page over while it runs; practice mode's own controls wait.
  const chrome = [bar, timer.element, panel, status, bottom];
  const mock = createMockLoop(root, cards, {
    topics,
    // A mock loop's grades for one question, in the same store as the self-grade (weak review sees them).
    record(qid, ticks) {
      const card = cards.find((c) => c.dataset.qid === qid);
      const boxes = card ? [...card.querySelectorAll(".practice-rubric .practice-must li input[type=checkbox]")] : [];
      boxes.forEach((box, i) => {
        box.checked = Boolean(ticks[i]);
      });
      if (boxes.length) boxes[0].dispatchEvent(new Event("change")); // saves every tick and updates the card's score
      else {
        const fresh = loadState();
        fresh.grades[qid] = ticks.map(Boolean);
        saveState(fresh);
        document.dispatchEvent(new CustomEvent("htw-practice-change"));
      }
    },
    pause() {
      timer.reset();
      for (const part of chrome) part.hidden = true;
    },
    resume() {
      for (const part of chrome) part.hidden = false;
      bottom.hidden = !current;
      show(current || cards[0], { focus: true });
    },
  });
  bar.after(root.querySelector(".practice-mock-setup"));
  if (hashListener) window.removeEventListener("hashchange", hashListener);
  // A fragment change on this page (a link to another question, an edited address, the
  // browser's Back) names the question to show: without this the old card stayed on screen
  // under the new address.
  hashListener = () => {
    if (isMockHash(location.hash)) {
      if (!mock.active) mock.resumeFrom(location.hash);
      return;
    }
    const named = location.hash ? document.getElementById(fragmentId(location.hash)) : null;
    if (mock.active || !named || !cards.includes(named) || named === current) return;
    // The named question wins over filters that would hide it (they are cleared, visibly):
    // otherwise the first card of the filtered set would replace the address the reader chose.
    if (!pool().includes(named)) {
      levelSelect.value = "";
      topicSelect.value = "";
      showSelect.value = "";
    }
    show(named);
  };
  window.addEventListener("hashchange", hashListener);

  const resumeHash = mockHashToResume();
  if (resumeHash && mock.resumeFrom(resumeHash)) {
    root.dataset.practiceReady = "true";
    // A loop resumes where it is: a running one at the top with its bar, a grading sheet or a
    // score sheet (a shared link) at its heading, not five paragraphs above it. The browser may
    // restore its own scroll position at the load event, so the place is set again then.
    const view = root.dataset.mock === "run" ? null : root.querySelector(".practice-mock-grade:not([hidden]) h2, .practice-mock-sheet:not([hidden]) h2");
    const place = () => (view ? view.scrollIntoView({ block: "start", behavior: "instant" })
                              : window.scrollTo({ top: 0, left: 0, behavior: "instant" }));
    place();
    requestAnimationFrame(place);
    if (document.readyState !== "complete") window.addEventListener("load", () => requestAnimationFrame(place), { once: true });
    return;
  }
  const fromHash = location.hash ? document.getElementById(fragmentId(location.hash)) : null;
  show(fromHash && cards.includes(fromHash) ? fromHash : cards[0]);
  // A #q-<id> in the URL names the question, not a place to scroll to: the browser (or
  // Material) may already have jumped to the card before it was the only one shown. Start at
  // the top of the page, where the filters and the question are.
  root.dataset.practiceReady = "true";
  if (fromHash) {
    const undoJump = () => window.scrollTo({ top: 0, left: 0, behavior: "instant" });
    undoJump();
    requestAnimationFrame(undoJump);
    if (document.readyState !== "complete") window.addEventListener("load", () => requestAnimationFrame(undoJump), { once: true });
  }
}

// The element id a URL fragment names: percent-escapes decoded, and a malformed one ("#q-%ZZ",
// "#%") taken as written instead of throwing a URIError out of the hashchange handler.
export function fragmentId(hash) {
  const raw = String(hash || "").replace(/^#/, "");
  try {
    return decodeURIComponent(raw);
  } catch (err) {
    return raw;
  }
}

export function init(scope = document) {
  const state = loadState();
  for (const card of scope.querySelectorAll(".practice-q")) setUpCard(card, state);
  for (const root of scope.querySelectorAll("[data-practice-mode]")) setUpMode(root);
}

if (typeof window !== "undefined" && window.document$) {
  window.document$.subscribe(() => init());
} else if (typeof document !== "undefined") {
  init();
}
