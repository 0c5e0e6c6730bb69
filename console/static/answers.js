// Draws a decision's answers (spec §2.4) for people: a choice question as
// one bar per option, a score question as one bar per level plus a scale
// with the probability-weighted score marked, a noul question as a gauge.
// The exact JSON stays beside it; this view is read from JSON.parse, whose
// rounding of the last digits cannot matter at a bar's resolution.
// Every value is written as text or as a number attribute, never as HTML.

const SVG = 'http://www.w3.org/2000/svg';

export function el(name, cls, text) {
  const e = document.createElement(name);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function svg(name, attrs = {}) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const percent = (p) => (isNum(p) ? `${(p * 100).toFixed(1)}%` : '—');
const clamp01 = (p) => Math.min(1, Math.max(0, isNum(p) ? p : 0));

// bar is one labelled row: name, a track filled to p, the percentage.
// The track is decoration (aria-hidden); the row's text says it all.
function bar(name, p, chosen) {
  const li = el('li', chosen ? 'chosen' : '');
  li.append(el('span', 'name', chosen ? `${name} ✓` : name));
  const track = el('span', 'track');
  track.setAttribute('aria-hidden', 'true');
  const fill = el('span', 'fill');
  // CSSOM, not a style attribute: the page's CSP allows no inline style.
  fill.style.width = `${(clamp01(p) * 100).toFixed(2)}%`;
  track.append(fill);
  li.append(track, el('span', 'value', percent(p)));
  if (chosen) li.setAttribute('aria-label', `${name}: ${percent(p)}, chosen`);
  return li;
}

function choice(card, a, q) {
  const declared = q && q.criteria && typeof q.criteria === 'object' && !Array.isArray(q.criteria) ? Object.keys(q.criteria) : [];
  const probs = a.probabilities || {};
  const names = [...declared.filter((n) => n in probs), ...Object.keys(probs).filter((n) => !declared.includes(n))];
  card.append(el('p', 'summary', `Chose “${a.choice}”` + (isNum(a.confidence) ? `, confidence ${percent(a.confidence)}` : '') + '.'));
  const list = el('ul', 'bars');
  for (const n of names) list.append(bar(n, probs[n], n === a.choice));
  card.append(list);
}

function score(card, a) {
  const probs = a.probabilities || {};
  const legend = a.legend || {};
  const levels = [...new Set([...Object.keys(probs), ...Object.keys(legend)])].sort((x, y) => Number(x) - Number(y));
  const top = Math.max(1, levels.length - 1);
  card.append(el('p', 'summary', `Weighted score ${isNum(a.score) ? a.score.toFixed(2) : '—'} on levels 0–${top}` +
    (isNum(a.confidence) ? `, confidence ${percent(a.confidence)}` : '') + '.'));
  const list = el('ul', 'bars');
  for (const l of levels) list.append(bar(`${l} · ${legend[l] ?? ''}`, probs[l], false));
  card.append(list);
  // The scale: one tick per level, a marker at the weighted score.
  const scale = el('div', 'scale');
  scale.setAttribute('role', 'img');
  scale.setAttribute('aria-label', `Weighted score ${isNum(a.score) ? a.score.toFixed(2) : 'unknown'} on a scale from 0 to ${top}`);
  levels.forEach((l, i) => {
    const x = `${(i / top) * 100}%`;
    const tick = el('span', 'tick');
    tick.style.left = x;
    const label = el('span', 'ticklabel', l);
    label.style.left = x;
    scale.append(tick, label);
  });
  if (isNum(a.score)) {
    const marker = el('span', 'marker');
    marker.style.left = `${(Math.min(top, Math.max(0, a.score)) / top) * 100}%`;
    scale.append(marker);
  }
  card.append(scale);
}

// noul is a half-circle gauge from 0 (no, left) to 1 (yes, right).
function noul(card, a) {
  const v = clamp01(a.noul);
  const cx = 100, cy = 100, r = 80;
  const at = (t, rr) => [cx - rr * Math.cos(Math.PI * t), cy - rr * Math.sin(Math.PI * t)];
  const [x, y] = at(v, r);
  const [nx, ny] = at(v, r - 18);
  const g = svg('svg', { viewBox: '0 0 200 124', class: 'gauge', role: 'img', 'aria-label': `Probability ${isNum(a.noul) ? a.noul : 'unknown'} that the condition holds` });
  g.append(
    svg('path', { d: `M ${cx - r} ${cy} A ${r} ${r} 0 0 1 ${cx + r} ${cy}`, class: 'bg' }),
    svg('path', { d: `M ${cx - r - 7} ${cy} A ${r + 7} ${r + 7} 0 0 1 ${cx + r + 7} ${cy}`, class: 'edge' }),
  );
  if (v > 0) g.append(svg('path', { d: `M ${cx - r} ${cy} A ${r} ${r} 0 0 1 ${x.toFixed(2)} ${y.toFixed(2)}`, class: 'val' }));
  g.append(svg('line', { x1: cx, y1: cy, x2: nx.toFixed(2), y2: ny.toFixed(2), class: 'needle' }));
  const label = (tx, ty, text, cls, anchor) => {
    const t = svg('text', { x: tx, y: ty, 'text-anchor': anchor, class: cls || '' });
    t.textContent = text;
    g.append(t);
  };
  label(cx - r, 116, '0 · no', '', 'middle');
  label(cx + r, 116, '1 · yes', '', 'middle');
  label(cx, 121, percent(a.noul), 'big', 'middle');
  card.append(el('p', 'summary', isNum(a.noul) ? `Holds with probability ${a.noul}.` : 'No probability given.'), g);
}

const DRAW = { choice, score, noul };

// render fills container with one card per answer of body (a parsed
// decision response); questions is the parsed request's questions, for
// the order of choice options. It returns how many cards it drew.
export function render(container, body, questions = {}) {
  container.replaceChildren();
  const answers = body && typeof body === 'object' ? body.answers : null;
  if (!answers || typeof answers !== 'object') return 0;
  for (const [name, a] of Object.entries(answers)) {
    const card = el('article', 'q');
    card.dataset.question = name;
    const h = el('h5');
    h.append(el('span', '', name), el('span', 'kind', a && a.type ? a.type : 'unknown type'));
    card.append(h);
    const draw = a && DRAW[a.type];
    if (draw) draw(card, a, questions[name]);
    else card.append(el('p', 'raw', 'No picture for this answer type; see the JSON.'));
    container.append(card);
  }
  return container.childElementCount;
}
