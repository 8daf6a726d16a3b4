// The mock loop of practice mode: a mixed set of questions under one timer, then a score sheet.
//
// A loop is drawn from the cards practice mode already loaded, by slot: each level's questions
// that are not design questions, and design questions from any level (e.g. two fundamentals, two
// applied, one deep, one design); within a slot it prefers kinds and topics not drawn yet. A plan
// that cannot be filled says so before it starts. Questions are answered one after another with
// only the prompt and a notes box showing, graded once time is up (or the candidate finishes):
// must-haves met, strong signals heard, red flags heard. The score sheet gives each question a
// mid / senior / staff reading from its rubric (READING_RULE), counts red flags, and lists what to
// review; the grades go to practice mode's store, so "Review my weak ones" sees them. The whole
// loop lives in the URL's fragment (#mock&q=...&g=...), so a reload resumes it and a copied link
// shows the same sheet in another browser; nothing is sent anywhere. The sheet prints on its own
// (print styles in practice.css).
//
// Pure functions (state in and out of the URL, drawing a loop, scoring it) are exported and
// tested in a browser (tests/site/test_practice_mock.py); createMockLoop wires them to the page.

export const SLOTS = Object.freeze(["fundamentals", "applied", "deep", "design"]);
export const DEFAULT_PLAN = Object.freeze({ fundamentals: 2, applied: 2, deep: 1, design: 1 });
export const MAX_QUESTIONS = 12;
// Minutes to answer one question aloud, by slot: a design question gets a whiteboard's worth.
export const SLOT_MINUTES = Object.freeze({ fundamentals: 3, applied: 5, deep: 8, design: 15 });
export const DEFAULT_MINUTES = planMinutes(DEFAULT_PLAN);
export const READING_RULE =
  "Mid: every must-have met. Senior: that, the question's senior description fits the answer, and at least two " +
  "signals heard (strong signals, or follow-ups answered as expected). Staff: that, its staff description fits, every " +
  "strong signal and at least two follow-ups answered (every one when it has fewer). " +
  "Each red flag heard lowers the reading one level.";
export const READINGS = Object.freeze(["below mid", "mid", "senior", "staff"]);
const PHASES = ["run", "grade", "sheet"];
const ID = /^[a-z0-9][a-z0-9-]*$/;

// ---- the URL fragment ------------------------------------------------------------------------

export function isMockHash(hash) {
  return /^#?mock(&|$)/.test(String(hash || ""));
}

// {ids, minutes, phase, used, index, grades: {qid: [bool]}, seed} -> "mock&q=a.b&t=25&p=run&u=0&i=0&g=10.11&s=7"
export function encodeMock(state) {
  const params = new URLSearchParams();
  params.set("q", state.ids.join("."));
  params.set("t", String(state.minutes));
  params.set("p", state.phase);
  params.set("u", String(Math.max(0, Math.round(state.used || 0))));
  if (state.phase === "run") params.set("i", String(state.index || 0));
  const bits = (ticks) => ticks.map((t) => (t ? "1" : "0")).join("");
  const grades = state.ids.map((id) => {
    const ticks = state.grades && state.grades[id];
    if (!Array.isArray(ticks)) return "-";
    const signals = (state.signals && state.signals[id]) || {};
    const placed = Number.isInteger(signals.placed) && signals.placed >= 0 && signals.placed < READINGS.length
      ? String(signals.placed) : "";
    const more = Array.isArray(signals.follow) || placed ? `_${bits(signals.follow || [])}_${placed}` : "";
    const extra = Array.isArray(signals.strong) || Array.isArray(signals.flags) || more
      ? `_${bits(signals.strong || [])}_${bits(signals.flags || [])}${more}` : "";
    return (bits(ticks) || "-") + extra;
  });
  if (grades.some((g) => g !== "-")) params.set("g", grades.join("."));
  if (state.seed !== undefined) params.set("s", String(state.seed));
  return `mock&${params.toString()}`;
}

// The inverse of encodeMock, or null when the fragment is not a well-formed loop. `known` (a
// Set of question ids) drops ids the bank no longer has, so an old link still opens.
export function decodeMock(hash, known = null) {
  if (!isMockHash(hash)) return null;
  const params = new URLSearchParams(String(hash).replace(/^#/, "").replace(/^mock&?/, ""));
  const raw = (params.get("q") || "").split(".").filter((id) => ID.test(id));
  const ids = [...new Set(raw)].filter((id) => !known || known.has(id)).slice(0, MAX_QUESTIONS);
  if (!ids.length) return null;
  const minutes = Number(params.get("t"));
  const phase = PHASES.includes(params.get("p")) ? params.get("p") : "run";
  const used = Number(params.get("u"));
  const gradeParts = (params.get("g") || "").split(".");
  const grades = {};
  const signals = {};
  const ticks = (text) => [...text].map((c) => c === "1");
  raw.forEach((id, i) => {
    const match = /^([01]+)(?:_([01]*)_([01]*)(?:_([01]*)_([0-3]?))?)?$/.exec(gradeParts[i] || "");
    if (!ids.includes(id) || !match) return;
    grades[id] = ticks(match[1]);
    if (match[2] !== undefined) signals[id] = { strong: ticks(match[2]), flags: ticks(match[3]) };
    if (match[4] !== undefined) signals[id].follow = ticks(match[4]);
    if (match[5]) signals[id].placed = Number(match[5]);
  });
  const seed = Number(params.get("s"));
  const index = Number(params.get("i"));
  return {
    ids,
    index: Number.isInteger(index) && index >= 0 && index < ids.length ? index : 0,
    minutes: Number.isFinite(minutes) && minutes >= 1 && minutes <= 180 ? Math.round(minutes) : DEFAULT_MINUTES,
    phase,
    used: Number.isFinite(used) && used >= 0 ? Math.min(used, 180 * 60) : 0,
    grades,
    signals,
    seed: Number.isFinite(seed) ? seed : undefined,
  };
}

// Minutes a plan ({slot: count}) suggests: the sum of its questions' answer times.
export function planMinutes(plan) {
  return Object.entries(plan).reduce((sum, [slot, n]) => sum + (SLOT_MINUTES[slot] || 0) * (Number(n) || 0), 0);
}

// ---- drawing a loop ---------------------------------------------------------------------------

// A small seeded generator (mulberry32), so a seed in the URL draws the same loop again.
export function seededRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Which cards a slot of the plan draws from: design questions from any level; the levels'
// slots (deep included) take their level's questions that are not design questions.
export function slotOf(fact) {
  return fact.kind === "design" ? "design" : fact.level;
}

// facts: [{qid, level, topic, kind}], plan: {slot: count} -> {ids, problems}. ids in the plan's
// order; within a slot, a kind not drawn yet is preferred, then a topic not drawn yet, so a loop
// covers more ground. A plan that cannot be filled is not shortened silently: problems says
// which slot lacks questions, or that the plan asks for more than MAX_QUESTIONS, and ids is empty.
export function planLoop(facts, plan = DEFAULT_PLAN, seed = 1) {
  const problems = [];
  const unknown = Object.keys(plan).filter((slot) => !SLOTS.includes(slot));
  if (unknown.length) problems.push(`unknown slots ${unknown.join(", ")}; valid: ${SLOTS.join(", ")}`);
  const wanted = Object.values(plan).reduce((sum, n) => sum + (Number(n) || 0), 0);
  if (wanted === 0) problems.push("the plan asks for no question; choose at least one");
  if (wanted > MAX_QUESTIONS) problems.push(`the plan asks for ${wanted} questions; a loop holds at most ${MAX_QUESTIONS}`);
  for (const [slot, count] of Object.entries(plan)) {
    const have = facts.filter((f) => slotOf(f) === slot).length;
    if (count > have) problems.push(`${count} ${slot} questions asked for, the bank has ${have}`);
  }
  if (problems.length) return { ids: [], problems };
  const random = seededRandom(seed);
  const picked = [];
  const topics = new Set();
  const kinds = new Set();
  for (const [slot, count] of Object.entries(plan)) {
    const pool = facts.filter((f) => slotOf(f) === slot && !picked.includes(f.qid));
    for (let i = pool.length - 1; i > 0; i -= 1) {
      const j = Math.floor(random() * (i + 1));
      [pool[i], pool[j]] = [pool[j], pool[i]];
    }
    for (let n = 0; n < count; n += 1) {
      const rank = (f) => (kinds.has(f.kind) ? 2 : 0) + (topics.has(f.topic) ? 1 : 0);
      let k = 0;
      pool.forEach((f, i) => {
        if (rank(f) < rank(pool[k])) k = i;
      });
      const [f] = pool.splice(k, 1);
      picked.push(f.qid);
      topics.add(f.topic);
      kinds.add(f.kind);
    }
  }
  return { ids: picked, problems };
}

// The ids of planLoop, or [] when the plan cannot be filled.
export function pickLoop(facts, plan = DEFAULT_PLAN, seed = 1) {
  return planLoop(facts, plan, seed).ids;
}

// ---- scoring ----------------------------------------------------------------------------------

// One question's reading (READING_RULE) and why: must-haves met, strong signals heard, follow-ups
// answered as expected, the level description the grader placed the answer at (index in READINGS,
// or null when none was chosen), red flags heard. The evidence caps the description: ticking one
// box never reads senior, and a description alone without the signals behind it reads no higher
// than the signals allow.
export function readingWhy(metAll, strongHeard, strongTotal, flagsHeard, { followHeard = 0, followTotal = 0, placed = null } = {}) {
  const signals = strongHeard + followHeard;
  const followNeeded = Math.min(2, followTotal);
  let evidence = 0;
  if (metAll) evidence = 1;
  if (metAll && signals >= 2) evidence = 2;
  if (metAll && signals >= 2 && strongHeard === strongTotal && followHeard >= followNeeded) evidence = 3;
  const cap = placed === null || placed === undefined ? 1 : placed;
  let level = Math.min(evidence, cap);
  const before = level;
  level = Math.max(0, level - flagsHeard);
  const parts = [];
  parts.push(metAll ? "every must-have met" : "a must-have missed");
  parts.push(`${strongHeard} of ${strongTotal} strong signal${strongTotal === 1 ? "" : "s"}`);
  if (followTotal) parts.push(`${followHeard} of ${followTotal} follow-up${followTotal === 1 ? "" : "s"} answered`);
  parts.push(placed === null || placed === undefined ? "no level description chosen" : `placed at ${READINGS[placed]}`);
  if (flagsHeard) parts.push(`${flagsHeard} red flag${flagsHeard === 1 ? "" : "s"} (down ${Math.min(flagsHeard, before)})`);
  let next = "";
  if (level < 3 && metAll && !flagsHeard) {
    if (evidence <= level) {
      next = level < 2 ? "; senior needs two signals (strong signals or follow-ups)"
                       : "; staff needs every strong signal and two follow-ups answered (every one when it has fewer)";
    } else next = `; the answer's signals support ${READINGS[evidence]}: choose the description that fits`;
  }
  return { reading: READINGS[level], why: `${parts.join(", ")}${next}.` };
}

export function readingOf(metAll, strongHeard, strongTotal, flagsHeard, extra = {}) {
  return readingWhy(metAll, strongHeard, strongTotal, flagsHeard, extra).reading;
}

// facts: {qid: {title, level, topic, must: [text], strong: [text], flags: [text]}} -> the score
// sheet's numbers. A question passes when every must-have was met (an answer without any one of
// them fails) and no red flag was heard; its reading follows READING_RULE. The loop's reading is
// the median of the graded questions' readings (the lower one of an even count).
export function scoreLoop(state, facts) {
  const signals = state.signals || {};
  const questions = state.ids.filter((id) => facts[id]).map((id) => {
    const f = facts[id];
    const ticks = (state.grades[id] || []).slice(0, f.must.length);
    const met = ticks.filter(Boolean).length;
    const graded = Array.isArray(state.grades[id]);
    const missed = f.must.filter((_, i) => !ticks[i]);
    const strong = ((signals[id] && signals[id].strong) || []).slice(0, (f.strong || []).length).filter(Boolean).length;
    const flagTicks = ((signals[id] && signals[id].flags) || []).slice(0, (f.flags || []).length);
    const flags = flagTicks.filter(Boolean).length;
    const heardFlags = (f.flags || []).filter((_, i) => flagTicks[i]);
    const followTotal = (f.follow || []).length;
    const followHeard = ((signals[id] && signals[id].follow) || []).slice(0, followTotal).filter(Boolean).length;
    const placed = signals[id] && Number.isInteger(signals[id].placed) ? signals[id].placed : null;
    const read = graded ? readingWhy(met === f.must.length, strong, (f.strong || []).length, flags,
                                     { followHeard, followTotal, placed }) : null;
    return { id, title: f.title, level: f.level, topic: f.topic, met, total: f.must.length, graded,
             pass: graded && met === f.must.length && flags === 0, missed, strong,
             strongTotal: (f.strong || []).length, flags, heardFlags, followHeard, followTotal, placed,
             reading: read ? read.reading : null, why: read ? read.why : "" };
  });
  const topics = {};
  for (const q of questions) {
    const t = (topics[q.topic] ||= { met: 0, total: 0, questions: 0, passed: 0 });
    t.met += q.met;
    t.total += q.total;
    t.questions += 1;
    if (q.pass) t.passed += 1;
  }
  const met = questions.reduce((s, q) => s + q.met, 0);
  const total = questions.reduce((s, q) => s + q.total, 0);
  const readings = questions.filter((q) => q.graded).map((q) => READINGS.indexOf(q.reading)).sort((a, b) => a - b);
  const reading = readings.length ? READINGS[readings[Math.floor((readings.length - 1) / 2)]] : null;
  const byReading = Object.fromEntries(READINGS.map((r) => [r, questions.filter((q) => q.reading === r).length]));
  return { questions, topics, met, total, passed: questions.filter((q) => q.pass).length,
           review: questions.filter((q) => !q.pass), flags: questions.reduce((s, q) => s + q.flags, 0),
           reading, byReading };
}

// ---- the page ---------------------------------------------------------------------------------

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k in node) node[k] = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

function button(text, action) {
  return el("button", { type: "button", class: "md-button", dataset: { action } }, text);
}

function clock(seconds) {
  const s = Math.max(0, Math.ceil(seconds));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

function numberField(label, value, min, max) {
  const input = el("input", { type: "number", min: String(min), max: String(max), step: "1", value: String(value),
                              inputMode: "numeric" });
  const id = `mock-${label.toLowerCase().replace(/\W+/g, "-")}`;
  input.id = id;
  return [el("span", { class: "practice-field" }, el("label", { htmlFor: id }, label), input), input];
}

function cardFacts(card) {
  const title = card.querySelector(".practice-title")?.textContent.replace(/¶$/, "").trim() || card.dataset.qid;
  const texts = (selector) => [...card.querySelectorAll(selector)].map((li) => li.textContent.trim());
  const chapter = card.querySelector('.practice-answer a[href*="notebooks/"]');
  const fact = { qid: card.dataset.qid, title, level: card.dataset.level, topic: card.dataset.topic, kind: card.dataset.kind,
                 page: card.dataset.page || null,
                 must: texts(".practice-must li"), strong: texts(".practice-strong li"), flags: texts(".practice-flags li"),
                 levels: texts(".practice-levels li"),
                 follow: [...card.querySelectorAll(".practice-follow-ups > ol > li")].map((li) =>
                   (li.querySelector("em")?.textContent || li.textContent).trim()),
                 chapter: chapter ? chapter.getAttribute("href") : null };
  fact.minutes = SLOT_MINUTES[slotOf(fact)];
  return fact;
}

let activeTimer = null;

// root: the practice-mode element; cards: the deck's cards; api: {topics: {key: label},
// pause(): hide practice mode's own controls, resume(): give the page back to practice mode}.
export function createMockLoop(root, cards, api) {
  const byId = Object.fromEntries(cards.map((c) => [c.dataset.qid, c]));
  const facts = Object.fromEntries(cards.map((c) => [c.dataset.qid, cardFacts(c)]));
  const known = new Set(Object.keys(facts));
  const topicLabel = (key) => (api.topics && api.topics[key]) || key;
  if (activeTimer) clearInterval(activeTimer); // a loop left running by a page instant navigation replaced
  activeTimer = null;

  // Set-up: composition and time, behind one disclosure in the practice bar's row.
  const setup = el("details", { class: "practice-mock-setup" });
  const planFields = {};
  for (const [slot, label] of [["fundamentals", "Fundamentals"], ["applied", "Applied"], ["deep", "Deep"], ["design", "Design"]]) {
    planFields[slot] = numberField(label, DEFAULT_PLAN[slot], 0, MAX_QUESTIONS);
  }
  const [tField, tInput] = numberField("Minutes", DEFAULT_MINUTES, 1, 180);
  const start = button("Start the mock loop", "mock-start");
  const problem = el("p", { class: "practice-mock-problem", role: "alert" });
  const readPlan = () => Object.fromEntries(Object.entries(planFields).map(([slot, [, input]]) =>
    [slot, Math.max(0, Math.round(Number(input.value) || 0))]));
  // The clock follows the plan: each question gets its kind's answer time (a design question minutes).
  for (const [, input] of Object.values(planFields)) {
    input.addEventListener("input", () => {
      const minutes = planMinutes(readPlan());
      if (minutes >= 1) tInput.value = String(Math.min(180, minutes));
      problem.textContent = "";
    });
  }
  setup.append(
    el("summary", {}, "Mock interview loop"),
    el("p", { class: "practice-mock-note" },
       "A mixed set under one timer, like one round of an interview loop: answer each question aloud " +
       "or in the notes, then grade yourself per must-have and get a score sheet you can print or share " +
       "as a link."),
    el("div", { class: "practice-mock-fields" }, ...Object.values(planFields).map(([field]) => field), tField, start),
    el("p", { class: "practice-mock-note" },
       `Deep counts questions of the deep level that are not design questions; Design draws design questions from any ` +
       `level. Minutes follow the plan: ${Object.entries(SLOT_MINUTES).map(([k, m]) => `${k} ${m}`).join(", ")} minutes a question.`),
    problem,
  );

  // The loop's own bar and the two later views.
  const bar = el("div", { class: "practice-mock-bar", hidden: true });
  const where = el("span", { class: "practice-mock-where" });
  const left = el("span", { class: "practice-mock-clock", role: "timer", "aria-live": "off" });
  const prev = button("Previous", "mock-previous");
  const next = button("Next", "mock-next");
  const finish = button("Finish and grade", "mock-finish");
  const quit = button("Leave the loop", "mock-quit");
  const announce = el("p", { class: "practice-mock-announce", role: "status", "aria-live": "polite" });
  bar.append(el("strong", {}, "Mock loop"), where, left, el("span", { class: "practice-mock-buttons" }, prev, next, finish, quit),
             announce);
  const gradeView = el("section", { class: "practice-mock-grade", hidden: true, "aria-labelledby": "mock-grade-title" });
  const sheetView = el("section", { class: "practice-mock-sheet", hidden: true, "aria-labelledby": "mock-sheet-title" });
  root.append(setup, bar, gradeView, sheetView);

  let state = null;
  let index = 0;
  let startedAt = 0; // Date.now() when the clock last started; state.used holds time before that

  const usedNow = () => (state.phase === "run" && startedAt ? state.used + (Date.now() - startedAt) / 1000 : state.used);
  // The page the loop lives on. Under Material's instant navigation a link (a calculator task's,
  // say) replaces the page without unloading this script: the loop must then stop its clock and
  // leave the new page's address alone; its own history entry keeps the loop, so Back resumes it.
  const home = location.pathname;
  const here = () => root.isConnected && location.pathname === home;
  function save() {
    if (!state) return;
    if (!here()) {
      stopClock();
      return;
    }
    const hash = `#${encodeMock({ ...state, index, used: usedNow() })}`;
    if (location.hash !== hash) history.replaceState(history.state, "", hash);
  }

  function showCard() {
    const id = state.ids[index];
    for (const c of cards) c.hidden = c.dataset.qid !== id;
    const card = byId[id];
    // Answer first, grade later: the rubric, the worked answer and the quick check stay hidden.
    for (const part of card.querySelectorAll(".practice-rubric, .practice-answer, .practice-check, .practice-score")) {
      part.dataset.mockHidden = "true";
    }
    where.textContent = `Question ${index + 1} of ${state.ids.length} · ${facts[id].level}${facts[id].kind === "design" ? " · design" : ""}` +
      ` · about ${facts[id].minutes} min`;
    prev.disabled = index === 0;
    next.disabled = index === state.ids.length - 1;
    const title = card.querySelector(".practice-title");
    if (title) {
      title.tabIndex = -1;
      title.focus({ preventScroll: true });
    }
    if (card.getBoundingClientRect().top < 0) card.scrollIntoView({ block: "start" });
  }

  function tick() {
    const remaining = state.minutes * 60 - usedNow();
    left.textContent = `${clock(remaining)} left`;
    left.dataset.low = remaining <= 60 ? "true" : "false";
    if (remaining <= 0) toGrade({ timeUp: true });
  }

  function stopClock() {
    if (state && startedAt) {
      state.used = usedNow();
      startedAt = 0;
    }
    if (activeTimer) clearInterval(activeTimer);
    activeTimer = null;
  }

  function restoreCards() {
    for (const c of cards) {
      c.hidden = true;
      for (const part of c.querySelectorAll("[data-mock-hidden]")) delete part.dataset.mockHidden;
    }
  }

  function enter() {
    api.pause();
    setup.hidden = true;
    root.classList.add("practice-mode--mock");
    root.dataset.mock = state.phase;
  }

  function run() {
    enter();
    bar.hidden = false;
    gradeView.hidden = true;
    sheetView.hidden = true;
    startedAt = Date.now();
    tick();
    if (activeTimer) clearInterval(activeTimer);
    activeTimer = setInterval(() => {
      if (!here()) return stopClock(); // the reader followed a link away: the loop waits in its history entry
      tick();
      save();
    }, 1000);
    showCard();
    save();
  }

  function toGrade({ timeUp = false } = {}) {
    stopClock();
    state.phase = "grade";
    root.dataset.mock = "grade";
    restoreCards();
    bar.hidden = true;
    sheetView.hidden = true;
    const list = el("ol", { class: "practice-mock-grade-list" });
    state.ids.forEach((id, qi) => {
      const f = facts[id];
      const ticks = state.grades[id] || f.must.map(() => false);
      state.grades[id] = ticks;
      const points = el("ul", { class: "practice-mock-points practice-mock-must" });
      f.must.forEach((text, i) => {
        const box = el("input", { type: "checkbox", id: `mock-${qi}-${i}`, checked: Boolean(ticks[i]) });
        box.addEventListener("change", () => {
          state.grades[id][i] = box.checked;
          save();
        });
        points.append(el("li", {}, box, el("label", { htmlFor: box.id }, text)));
      });
      const signals = (state.signals[id] ||= { strong: [], flags: [] });
      const heard = (kind, texts, legend) => {
        if (!texts.length) return null;
        const list = el("ul", { class: `practice-mock-points practice-mock-${kind}` });
        texts.forEach((text, i) => {
          const box = el("input", { type: "checkbox", id: `mock-${qi}-${kind}-${i}`, checked: Boolean(signals[kind][i]) });
          box.addEventListener("change", () => {
            signals[kind] = texts.map((_, j) => (j === i ? box.checked : Boolean(signals[kind][j])));
            save();
          });
          list.append(el("li", {}, box, el("label", { htmlFor: box.id }, text)));
        });
        return el("div", {}, el("p", {}, legend), list);
      };
      const strongList = heard("strong", f.strong, "Strong signals your answer had:");
      const flagList = heard("flags", f.flags, "Red flags your answer had:");
      signals.follow ||= [];
      const followList = heard("follow", f.follow, "Follow-ups you answered as the card expects (ask yourself each one):");
      // The question's own level descriptions: which one fits the answer (the evidence above caps it).
      const levels = f.levels.length
        ? el("fieldset", { class: "practice-mock-levels" },
             el("legend", {}, "Which description fits your answer best?"),
             ...[["", "none of them (below mid)", 0], ...f.levels.map((t, i) => [String(i + 1), t, i + 1])].map(([, text, value]) => {
               const radio = el("input", { type: "radio", name: `mock-${qi}-placed`, id: `mock-${qi}-placed-${value}`,
                                           value: String(value), checked: signals.placed === value });
               radio.addEventListener("change", () => {
                 if (radio.checked) signals.placed = value;
                 save();
               });
               return el("div", { class: "practice-mock-placed" }, radio, el("label", { htmlFor: radio.id }, text));
             }))
        : null;
      const answer = byId[id].querySelector(".practice-answer");
      const peek = answer ? el("details", { class: "practice-mock-peek" }, el("summary", {}, "Worked answer"),
                                ...[...answer.children].filter((c) => c.tagName !== "SUMMARY").map((c) => c.cloneNode(true)))
                          : null;
      list.append(el("li", {}, el("h3", {}, f.title), el("p", { class: "practice-mock-meta" }, `${f.level} · ${topicLabel(f.topic)}`),
                     el("p", {}, "Tick each must-have your answer contained:"), points, strongList, flagList, followList,
                     levels, peek));
    });
    const heading = el("h2", { id: "mock-grade-title", tabIndex: -1 }, "Grade your answers");
    const done = button("Show the score sheet", "mock-sheet");
    done.addEventListener("click", () => {
      // This browser's own grading goes to practice mode's store (a shared sheet opened elsewhere does not).
      for (const id of state.ids) if (api.record && Array.isArray(state.grades[id])) api.record(id, state.grades[id]);
      toSheet();
    });
    gradeView.replaceChildren(
      heading,
      el("p", { class: "practice-mock-announce", role: "status", "aria-live": "polite" },
         timeUp ? "Time is up. Grade each answer against its must-haves." : ""),
      el("p", {}, `Time used: ${clock(state.used)} of ${state.minutes}:00. An answer without any one of its must-haves fails; ` +
                  `be as strict as an interviewer would be. ${READING_RULE}`),
      list, done);
    gradeView.hidden = false;
    heading.focus({ preventScroll: true });
    heading.scrollIntoView({ block: "start" });
    save();
  }

  function toSheet() {
    stopClock();
    state.phase = "sheet";
    root.dataset.mock = "sheet";
    restoreCards();
    bar.hidden = true;
    gradeView.hidden = true;
    const s = scoreLoop(state, facts);
    const heading = el("h2", { id: "mock-sheet-title", tabIndex: -1 }, "Mock loop: score sheet");
    const summary = el("p", { class: "practice-mock-summary" },
      `Reading: ${s.reading || "not graded"} · ${s.passed} of ${s.questions.length} questions passed (every must-have met, no red flag) · ` +
      `${s.met} of ${s.total} must-haves met · ${s.flags} red flag${s.flags === 1 ? "" : "s"} · ` +
      `time used ${clock(state.used)} of ${state.minutes}:00`);
    summary.dataset.reading = s.reading || "";
    summary.dataset.flags = String(s.flags);
    const rule = el("p", { class: "practice-mock-rule" },
      `How the reading is made: ${READING_RULE} The loop's reading is the median of its questions' ` +
      `(${READINGS.filter((r) => s.byReading[r]).map((r) => `${s.byReading[r]} ${r}`).join(", ") || "none graded"}).`);
    const table = el("table", { class: "practice-mock-table" },
      el("caption", {}, "By question"),
      el("thead", {}, el("tr", {}, ...["Question", "Level", "Topic", "Must-haves met", "Strong signals", "Red flags", "Reading", "Result", "Why this reading"]
        .map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, ...s.questions.map((q) => el("tr", { dataset: { qid: q.id } },
        el("td", {}, q.title), el("td", {}, q.level), el("td", {}, topicLabel(q.topic)),
        el("td", { class: "num" }, `${q.met} / ${q.total}`), el("td", { class: "num" }, `${q.strong} / ${q.strongTotal}`),
        el("td", { class: "num", dataset: { flags: String(q.flags) } }, String(q.flags)),
        el("td", { dataset: { reading: q.reading || "" } }, q.reading || "not graded"),
        el("td", { dataset: { result: q.pass ? "pass" : "fail" } }, q.graded ? (q.pass ? "pass" : "fail") : "not graded"),
        el("td", { class: "practice-mock-why" }, q.why || "")))));
    const topics = el("table", { class: "practice-mock-table" },
      el("caption", {}, "By topic"),
      el("thead", {}, el("tr", {}, ...["Topic", "Questions passed", "Must-haves met"].map((h) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, ...Object.entries(s.topics).map(([key, t]) => el("tr", {},
        el("td", {}, topicLabel(key)), el("td", { class: "num" }, `${t.passed} / ${t.questions}`),
        el("td", { class: "num" }, `${t.met} / ${t.total}`)))));
    const review = el("div", { class: "practice-mock-review" }, el("h3", {}, "What to review"));
    if (!s.review.length) review.append(el("p", {}, "Every must-have met. Try a longer loop, or more design questions."));
    for (const q of s.review) {
      const f = facts[q.id];
      const links = el("p", {}, el("a", { href: `${f.page || `${f.level}/`}#q-${q.id}` }, "the question and its worked answer"));
      if (f.chapter) links.append(" · ", el("a", { href: f.chapter }, "the chapter"));
      review.append(el("h4", {}, q.title), el("ul", {}, ...q.missed.map((m) => el("li", {}, m)),
                                               ...q.heardFlags.map((m) => el("li", {}, `Red flag: ${m}`))), links);
    }
    const link = el("input", { type: "text", readOnly: true, value: "",
                               class: "practice-mock-link", id: "mock-link" });
    const copy = button("Copy link", "mock-copy");
    const print = button("Print", "mock-print");
    const again = button("New loop", "mock-new");
    const back = button("Back to practice", "mock-quit");
    const copied = el("span", { class: "practice-mock-copied", role: "status", "aria-live": "polite" });
    copy.addEventListener("click", async () => {
      link.value = location.href;
      link.select();
      try {
        await navigator.clipboard.writeText(link.value);
        copied.textContent = "Link copied.";
      } catch (err) {
        copied.textContent = "Select the link and copy it.";
      }
    });
    print.addEventListener("click", () => window.print());
    again.addEventListener("click", () => leave({ reopen: true }));
    back.addEventListener("click", () => leave());
    sheetView.replaceChildren(heading, summary, rule, el("div", { class: "practice-mock-scroll" }, table), topics, review,
      el("div", { class: "practice-mock-share" }, el("label", { htmlFor: "mock-link" }, "This score sheet as a link (nothing leaves your browser; the link holds it):"),
         link, el("span", { class: "practice-mock-buttons" }, copy, print, again, back), copied));
    sheetView.hidden = false;
    save();
    link.value = location.href;
    heading.focus({ preventScroll: true });
    heading.scrollIntoView({ block: "start" });
  }

  function leave({ reopen = false } = {}) {
    stopClock();
    if (!here()) return;
    restoreCards();
    state = null;
    bar.hidden = true;
    gradeView.hidden = true;
    sheetView.hidden = true;
    setup.hidden = false;
    setup.open = reopen;
    root.classList.remove("practice-mode--mock");
    delete root.dataset.mock;
    history.replaceState(history.state, "", location.pathname + location.search);
    api.resume();
    if (reopen) start.focus();
  }

  function begin(newState) {
    state = { signals: {}, ...newState };
    index = state.index || 0;
    if (state.phase === "run") run();
    else {
      enter();
      if (state.phase === "grade") toGrade();
      else toSheet();
    }
  }

  start.addEventListener("click", () => {
    const plan = readPlan();
    const minutes = Math.max(1, Math.min(180, Math.round(Number(tInput.value) || planMinutes(plan) || DEFAULT_MINUTES)));
    const seed = Math.floor(Math.random() * 1e9);
    const { ids, problems } = planLoop(Object.values(facts), plan, seed);
    if (problems.length) {
      problem.textContent = `This plan cannot be filled: ${problems.join("; ")}.`;
      return;
    }
    problem.textContent = "";
    begin({ ids, minutes, phase: "run", used: 0, index: 0, grades: {}, signals: {}, seed });
  });
  prev.addEventListener("click", () => {
    if (index > 0) index -= 1;
    showCard();
    save();
  });
  next.addEventListener("click", () => {
    if (index < state.ids.length - 1) index += 1;
    showCard();
    save();
  });
  finish.addEventListener("click", () => toGrade());
  // A link followed from a card (a calculator task's) writes the loop's place first: Back returns to it.
  const deck = cards[0] && cards[0].parentElement;
  if (deck) deck.addEventListener("click", (event) => {
    if (state && event.target.closest && event.target.closest("a[href]")) save();
  }, true);
  quit.addEventListener("click", () => leave());

  return {
    // Resume the loop a URL fragment describes; false when it does not describe one.
    resumeFrom(hash) {
      const decoded = decodeMock(hash, known);
      if (!decoded) return false;
      begin(decoded);
      return true;
    },
    get active() {
      return state !== null;
    },
  };
}
