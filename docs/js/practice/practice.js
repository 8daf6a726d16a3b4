// Practice mode and self-grading for the question cards rendered by site_hooks/practice.py.
//
// Every card (<article class="practice-q">) gets: a notes box, a checkbox per rubric point
// (self-grade), and, where it has one, a numeric quick check. Notes and grades are kept in
// localStorage, so they survive reloads and later visits; nothing leaves the browser.
// On the page with [data-practice-mode], one card is shown at a time, chosen by level/topic
// filters and Previous / Random / Next buttons; the worked answer unlocks once the rubric has
// been opened. The current question lives in the URL hash (#q-<id>), so a reload or a shared
// link returns to it.
//
// Loaded once as an ES module. Material's `document$` emits on the first load and after every
// instant navigation; set-up is idempotent (each element is marked when done).

const STORE_KEY = "htw-practice-v1";

// ---- storage (a missing or full localStorage must never break the page) --------------------

export function loadState(storage = globalThis.localStorage) {
  try {
    const raw = storage && storage.getItem(STORE_KEY);
    const state = raw ? JSON.parse(raw) : {};
    return { grades: state.grades || {}, notes: state.notes || {} };
  } catch (err) {
    return { grades: {}, notes: {} };
  }
}

function saveState(state, storage = globalThis.localStorage) {
  try {
    if (storage) storage.setItem(STORE_KEY, JSON.stringify(state));
  } catch (err) {
    // Private mode or quota: keep working without persistence.
  }
}

// ---- quick checks ---------------------------------------------------------------------------

// "1.6", "1.6x", "56.25 %", "1,234", "2.6e2 MB" -> number; anything else -> NaN.
export function parseAnswer(text) {
  const cleaned = String(text).trim().replace(/,/g, "").replace(/\s+/g, "");
  const match = cleaned.match(/^([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)[a-zµ%/]*$/i);
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

function setUpCheck(check) {
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

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = parseAnswer(input.value);
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
  });
}

// ---- notes and self-grading -----------------------------------------------------------------

function setUpCard(card, state) {
  if (card.dataset.practiceReady) return;
  card.dataset.practiceReady = "true";
  const qid = card.dataset.qid;

  const notes = card.querySelector(".practice-notes");
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
    const points = [...rubric.querySelectorAll(":scope > ol > li, :scope > ul > li")];
    const saved = state.grades[qid] || [];
    const score = document.createElement("p");
    score.className = "practice-score";
    score.setAttribute("aria-live", "polite");
    const update = () => {
      const ticks = points.map((li) => li.querySelector("input[type=checkbox]").checked);
      score.textContent = `Self-grade: ${ticks.filter(Boolean).length} of ${points.length} points.`;
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
      });
    });
    rubric.after(score); // visible with the rubric closed: a returning reader sees their grade
    update();
  }

  for (const check of card.querySelectorAll(".practice-check")) setUpCheck(check);
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

function setUpMode(root) {
  if (root.dataset.practiceReady) return;
  root.dataset.practiceReady = "true";
  const cards = [...document.querySelectorAll(".practice-deck .practice-q")];
  if (!cards.length) return;
  const levels = JSON.parse(root.dataset.levels || "[]");
  const topics = JSON.parse(root.dataset.topics || "{}");

  const [levelField, levelSelect] = select("Level", [["", "all levels"], ...levels.map((l) => [l, l])]);
  const [topicField, topicSelect] = select("Topic", [["", "all topics"], ...Object.entries(topics)]);
  const prev = button("Previous", "previous");
  const random = button("Random question", "random");
  const next = button("Next", "next");
  const status = document.createElement("p");
  status.className = "practice-status";
  status.setAttribute("role", "status");
  status.setAttribute("aria-live", "polite");
  const bar = document.createElement("div");
  bar.className = "practice-bar";
  bar.append(levelField, topicField, prev, random, next);
  root.append(bar, status);
  root.classList.add("practice-mode--active");

  let current = null;
  const pool = () =>
    cards.filter(
      (c) => (!levelSelect.value || c.dataset.level === levelSelect.value) && (!topicSelect.value || c.dataset.topic === topicSelect.value),
    );

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
    current = card;
    if (!card) {
      status.textContent = "No question matches these filters.";
      return;
    }
    gateAnswer(card);
    status.textContent = `Question ${list.indexOf(card) + 1} of ${list.length}: ${card.querySelector(".practice-title")?.textContent.replace(/¶$/, "").trim() || card.dataset.qid}`;
    history.replaceState(history.state, "", `#${card.id}`);
    if (focus) card.querySelector(".practice-title")?.focus?.();
  }

  function step(delta) {
    const list = pool();
    if (!list.length) return show(null);
    const i = list.indexOf(current);
    show(list[(i + delta + list.length) % list.length], { focus: true });
  }

  prev.addEventListener("click", () => step(-1));
  next.addEventListener("click", () => step(1));
  random.addEventListener("click", () => {
    const list = pool().filter((c) => c !== current);
    if (!list.length) return show(current);
    show(list[Math.floor(Math.random() * list.length)], { focus: true });
  });
  levelSelect.addEventListener("change", () => show(current));
  topicSelect.addEventListener("change", () => show(current));

  for (const c of cards) {
    const title = c.querySelector(".practice-title");
    if (title) title.tabIndex = -1; // focus target when moving between questions
  }
  const fromHash = location.hash ? document.getElementById(location.hash.slice(1)) : null;
  show(fromHash && cards.includes(fromHash) ? fromHash : cards[0]);
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
