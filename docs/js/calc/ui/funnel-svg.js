// The funnel as SVG: five horizontal bars, widest (the data sheet) on top, the value on each
// bar, a dashed line at 1x (no gain). Same colour roles as twofour.course.figures.funnel.plot_funnel, drawn
// on a white card like every figure of the site, so it reads in light and dark mode.

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

function roleOf(stage, index, count, kernelRole) {
  if (index === count - 1) return "2:4";
  if (stage.key === "datasheet") return "published";
  if (stage.key === "kernel") return kernelRole;
  return "predicted";
}

/**
 * Draw `stages` (from funnel()) into `svg` (an <svg> element, emptied first).
 * kernelRole: "predicted" or "measured" (colour of the GEMM stage).
 */
export function drawFunnel(svg, stages, { kernelRole = "predicted", title = "" } = {}) {
  const width = 640, labelW = 190, rowH = 38, top = 14, bottom = 34, right = 70;
  const height = top + stages.length * rowH + bottom;
  const xmax = Math.max(2.0, ...stages.map((s) => s.speedup)) * 1.05;
  const x = (v) => labelW + (v / xmax) * (width - labelW - right);
  svg.replaceChildren();
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  const titleId = svg.id ? `${svg.id}-title` : "";
  const descId = svg.id ? `${svg.id}-desc` : "";
  if (titleId) svg.setAttribute("aria-labelledby", `${titleId} ${descId}`);
  svg.append(node("title", { id: titleId }, title || "The funnel: speedup at each stage"));
  svg.append(node("desc", { id: descId },
    stages.map((s, i) => `${i + 1}. ${s.label}: ${speedupText(s.speedup)}`).join("; ")));
  svg.append(node("rect", { x: 0, y: 0, width, height, fill: "#ffffff", rx: 6 }));
  stages.forEach((stage, i) => {
    const y = top + i * rowH;
    const role = roleOf(stage, i, stages.length, kernelRole);
    svg.append(node("text", { x: labelW - 10, y: y + rowH / 2, "text-anchor": "end", "dominant-baseline": "middle",
      "font-size": 14, fill: "#1a1a1a" }, `${i + 1}. ${stage.label}`));
    svg.append(node("rect", { x: labelW, y: y + 6, width: Math.max(1, x(stage.speedup) - labelW), height: rowH - 12,
      fill: ROLE_COLORS[role], "data-stage": stage.key }));
    svg.append(node("text", { x: x(stage.speedup) + 6, y: y + rowH / 2, "dominant-baseline": "middle", "font-size": 14,
      "font-weight": i === stages.length - 1 ? 700 : 400, fill: "#1a1a1a", "data-value": stage.key },
    speedupText(stage.speedup)));
  });
  const one = x(1.0);
  svg.append(node("line", { x1: one, x2: one, y1: top - 4, y2: top + stages.length * rowH + 4,
    stroke: ROLE_COLORS.neutral, "stroke-width": 1.5, "stroke-dasharray": "5 4" }));
  svg.append(node("text", { x: one, y: height - 12, "text-anchor": "middle", "font-size": 13, fill: "#4d4d4d" },
    "1x = no gain"));
  return svg;
}
