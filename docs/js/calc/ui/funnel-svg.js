// The funnel as SVG: five horizontal bars, widest (the data sheet) on top, each under its step's
// title ("step 3: 2:4 GEMM speedup", as twofour.funnel.FunnelStep.title and the chapters'
// figure say it) with its value at the end, and a dashed mark at 1x (no gain). Same colour roles
// as twofour.course.figures.funnel.plot_funnel, drawn on a white card like every figure of the
// site, so it reads in light and dark mode. Titles sit above their bars rather than beside them,
// so the bars keep the full width, and the drawing is as wide in user units as the card is in
// CSS pixels (320 to 640), so its text keeps one size from a phone to a desktop.

import { speedupText } from "../format.js";

const SVG = "http://www.w3.org/2000/svg";
// twofour.course.plotting.ROLES
export const ROLE_COLORS = {
  published: "#D55E00",
  predicted: "#CC79A7",
  measured: "#009E73",
  "2:4": "#E69F00",
  neutral: "#6E6E6E",
};

function node(tag, attrs = {}, text = null) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, String(v));
  if (text !== null) n.textContent = text;
  return n;
}

function roleOf(step, index, count, kernelRole) {
  if (index === count - 1) return "2:4";
  if (step.key === "datasheet") return "published";
  if (step.key === "kernel") return kernelRole;
  return "predicted";
}

/**
 * Draw `steps` (from funnel(): each with its title) into `svg` (an <svg> element, emptied first).
 * kernelRole: "predicted" or "measured" (colour of the GEMM step).
 */
export function drawFunnel(svg, steps, { kernelRole = "predicted", title = "" } = {}) {
  const shown = svg.getBoundingClientRect().width; // 0 while hidden: then a middle size
  const width = shown > 0 ? Math.round(Math.min(640, Math.max(320, shown))) : 520;
  const left = 10, right = 64, top = 8, bottom = 28;
  const rowH = 50, titleY = 15, barY = 21, barH = 20;
  const height = top + steps.length * rowH + bottom;
  const xmax = Math.max(2.0, ...steps.map((s) => s.speedup)) * 1.05;
  const x = (v) => left + (v / xmax) * (width - left - right);
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  const titleId = svg.id ? `${svg.id}-title` : "";
  const descId = svg.id ? `${svg.id}-desc` : "";
  if (titleId) svg.setAttribute("aria-labelledby", `${titleId} ${descId}`);
  svg.append(node("title", { id: titleId }, title || "The funnel: the speedup left at each step"));
  svg.append(node("desc", { id: descId },
    steps.map((s) => `${s.title}: ${speedupText(s.speedup)}`).join("; ")));
  svg.append(node("rect", { x: 0, y: 0, width, height, fill: "#ffffff", rx: 6 }));
  const one = x(1.0);
  // Text gets a white halo (drawn under its fill) so the 1x line never runs through a word.
  const halo = { stroke: "#ffffff", "stroke-width": 4, "stroke-linejoin": "round", "paint-order": "stroke" };
  const texts = [];
  steps.forEach((step, i) => {
    const y = top + i * rowH;
    const role = roleOf(step, i, steps.length, kernelRole);
    const last = i === steps.length - 1;
    svg.append(node("rect", { x: left, y: y + barY, width: Math.max(1, x(step.speedup) - left), height: barH,
      fill: ROLE_COLORS[role], "data-step": step.key }));
    texts.push(node("text", { x: left, y: y + titleY, "font-size": 14, fill: "#1a1a1a", ...halo, "data-title": step.key },
      step.title));
    texts.push(node("text", { x: x(step.speedup) + 6, y: y + barY + barH / 2, "dominant-baseline": "middle", "font-size": 14,
      "font-weight": last ? 700 : 400, fill: "#1a1a1a", ...halo, "data-value": step.key }, speedupText(step.speedup)));
  });
  svg.append(node("line", { x1: one, x2: one, y1: top + barY - 4, y2: top + (steps.length - 1) * rowH + barY + barH + 4,
    stroke: ROLE_COLORS.neutral, "stroke-width": 1.5, "stroke-dasharray": "5 4" }));
  svg.append(...texts);
  svg.append(node("text", { x: one, y: height - 9, "text-anchor": "middle", "font-size": 13, fill: "#4d4d4d" },
    "1x = no gain"));
  return svg;
}

// Why a step can be above the one before it (twofour.course.figures.funnel.rises, word for word).
const RISE = {
  kernel: "the GEMM speedup used is above the ceiling the model draws for perfect kernels",
  eligible_fraction: "the share 1 − p of the time that 2:4 does not touch runs at 1x, which pulls a loss toward 1x",
  request: "costs that 2:4 does not change (fixed costs, and for a whole request the other phase) pull it toward 1x",
};

/** A sentence for each step above the step before it, saying why ([] when the funnel only narrows). */
export function funnelRises(steps) {
  const out = [];
  steps.forEach((step, i) => {
    const before = steps[i - 1];
    if (before && step.speedup > before.speedup && RISE[step.key]) {
      out.push(`Step ${step.step} is above step ${before.step}: ${RISE[step.key]}.`);
    }
  });
  return out;
}
