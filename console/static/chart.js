// The usage chart: credits charged per UTC day as bars, with a value axis
// (round steps from zero) and readable dates ("Nov 3") under the bars. It
// is drawn at the SVG's real pixel width, so text keeps its size on a
// phone; call it again when the width changes.
import { svg } from './answers.js';

const DAY = new Intl.DateTimeFormat('en', { month: 'short', day: 'numeric', timeZone: 'UTC' });

// readable turns "2026-11-03" into "Nov 3".
export function readable(date) {
  return DAY.format(new Date(date + 'T00:00:00Z'));
}

// ticks returns the value axis: 0 up to a round top at or above max, in
// steps of 1, 2 or 5 times a power of ten, whole credits only.
export function ticks(max, wanted = 4) {
  const raw = Math.max(1, max) / wanted;
  const pow = 10 ** Math.floor(Math.log10(raw));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * pow).find((s) => s >= raw));
  const out = [];
  for (let v = 0; v < max + step; v += step) out.push(v);
  return out.length > 1 ? out : [0, step];
}

export function drawChart(chart, days) {
  chart.replaceChildren();
  const W = Math.max(240, Math.round(chart.getBoundingClientRect().width) || 620);
  const H = 190, top = 12, bottom = 30, left = 44, right = 24;
  chart.setAttribute('viewBox', `0 0 ${W} ${H}`);
  const max = Math.max(0, ...days.map((d) => d.credits));
  const axis = ticks(max);
  const ceil = axis[axis.length - 1];
  const plotH = H - top - bottom, plotW = W - left - right;
  const y = (v) => top + plotH - (plotH * v) / ceil;
  for (const v of axis) {
    chart.append(svg('line', { x1: left, x2: W - right, y1: y(v), y2: y(v), class: v ? 'grid' : 'axis' }));
    const t = svg('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end' });
    t.textContent = String(v);
    chart.append(t);
  }
  const slot = plotW / days.length;
  days.forEach((d, i) => {
    const h = (plotH * d.credits) / ceil;
    const bar = svg('rect', { x: left + i * slot + 1, y: top + plotH - h, width: Math.max(1, slot - 2), height: h, class: 'bar' });
    const title = svg('title');
    title.textContent = `${readable(d.date)}: ${d.credits} credits, ${d.requests} requests (${d.succeeded} succeeded, ${d.failed} failed)`;
    bar.append(title);
    chart.append(bar);
  });
  // Date labels every few days, as many as fit, always the last (today).
  const every = Math.max(1, Math.ceil(days.length / Math.max(1, Math.floor(plotW / 56))));
  for (let i = days.length - 1; i >= 0; i -= every) {
    const t = svg('text', { x: left + (i + 0.5) * slot, y: H - 10, 'text-anchor': 'middle', class: 'date' });
    t.textContent = readable(days[i].date);
    chart.append(t);
  }
  const total = days.reduce((s, d) => s + d.credits, 0);
  const requests = days.reduce((s, d) => s + d.requests, 0);
  chart.setAttribute('aria-label', `${total} credits charged over ${requests} requests in the last ${days.length} days; highest day ${max} credits.`);
}
