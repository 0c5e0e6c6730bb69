// JSON text tools for the playground that never turn numbers into
// JavaScript numbers: a request typed as 0.1000000000000000055511151231257827
// or 12345678901234567890 must reach the server exactly as typed, and
// JSON.parse would round both. Everything here works on tokens of the text
// (RFC 8259) and copies each token verbatim.

const WS = new Set([' ', '\t', '\n', '\r']);
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const MAX_DEPTH = 64;

export class JSONTextError extends Error {
  constructor(message, offset) {
    super(`${message} at offset ${offset}`);
    this.offset = offset;
  }
}

// tokens splits text into JSON tokens {t, s, e}: t is one of { } [ ] : ,
// "s" (string), "n" (number) or "l" (literal); s and e are offsets.
export function tokens(text) {
  const out = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (WS.has(c)) { i++; continue; }
    if ('{}[]:,'.includes(c)) { out.push({ t: c, s: i, e: i + 1 }); i++; continue; }
    if (c === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw new JSONTextError('unterminated string', i);
        const d = text.charCodeAt(j);
        if (d === 0x22) break;
        if (d < 0x20) throw new JSONTextError('control character in a string', j);
        if (d === 0x5c) {
          const esc = text[j + 1];
          if (esc === 'u') {
            if (!/^[0-9a-fA-F]{4}$/.test(text.slice(j + 2, j + 6))) throw new JSONTextError('bad \\u escape', j);
            j += 6;
            continue;
          }
          if (!'"\\/bfnrt'.includes(esc) || esc === undefined) throw new JSONTextError('bad escape', j);
          j += 2;
          continue;
        }
        j++;
      }
      out.push({ t: 's', s: i, e: j + 1 });
      i = j + 1;
      continue;
    }
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (m && m[0].length > 0) {
      const end = i + m[0].length;
      if (end < text.length && /[0-9A-Za-z.+\-]/.test(text[end])) throw new JSONTextError('malformed number', i);
      out.push({ t: 'n', s: i, e: end });
      i = end;
      continue;
    }
    const lit = ['true', 'false', 'null'].find((w) => text.startsWith(w, i));
    if (lit) { out.push({ t: 'l', s: i, e: i + lit.length }); i += lit.length; continue; }
    throw new JSONTextError(`unexpected character ${JSON.stringify(c)}`, i);
  }
  return out;
}

// parse checks that toks form exactly one JSON value and returns, for a
// root object, its members as {key, keyTok, valueStart, valueEnd} (token
// indexes, end exclusive).
function parse(text, toks) {
  let p = 0;
  const members = [];
  const offset = () => (p < toks.length ? toks[p].s : text.length);
  const expect = (t) => {
    if (p >= toks.length || toks[p].t !== t) throw new JSONTextError(`expected ${t}`, offset());
    p++;
  };
  const value = (depth) => {
    if (depth > MAX_DEPTH) throw new JSONTextError('nested too deeply', offset());
    if (p >= toks.length) throw new JSONTextError('expected a value', offset());
    const tok = toks[p];
    if (tok.t === 's' || tok.t === 'n' || tok.t === 'l') { p++; return; }
    if (tok.t === '[') {
      p++;
      if (toks[p] && toks[p].t === ']') { p++; return; }
      for (;;) {
        value(depth + 1);
        if (toks[p] && toks[p].t === ',') { p++; continue; }
        expect(']');
        return;
      }
    }
    if (tok.t === '{') {
      p++;
      if (toks[p] && toks[p].t === '}') { p++; return; }
      for (;;) {
        if (!toks[p] || toks[p].t !== 's') throw new JSONTextError('expected a member name', offset());
        const keyTok = p++;
        expect(':');
        const valueStart = p;
        value(depth + 1);
        if (depth === 1) {
          members.push({ key: JSON.parse(text.slice(toks[keyTok].s, toks[keyTok].e)), keyTok, valueStart, valueEnd: p });
        }
        if (toks[p] && toks[p].t === ',') { p++; continue; }
        expect('}');
        return;
      }
    }
    throw new JSONTextError(`unexpected ${tok.t}`, tok.s);
  };
  value(1);
  if (p !== toks.length) throw new JSONTextError('text after the JSON value', toks[p].s);
  return members;
}

// compact removes every insignificant space and keeps every token as
// typed. It throws JSONTextError when text is not one JSON value.
export function compact(text) {
  const toks = tokens(text);
  parse(text, toks);
  return toks.map((k) => text.slice(k.s, k.e)).join('');
}

// pretty indents text by two spaces, tokens as typed.
export function pretty(text) {
  const toks = tokens(text);
  parse(text, toks);
  let out = '';
  let depth = 0;
  const nl = () => '\n' + '  '.repeat(depth);
  for (let i = 0; i < toks.length; i++) {
    const k = toks[i];
    const src = text.slice(k.s, k.e);
    const next = toks[i + 1];
    if (k.t === '{' || k.t === '[') {
      if (next && next.t === (k.t === '{' ? '}' : ']')) { out += src + text.slice(next.s, next.e); i++; continue; }
      depth++;
      out += src + nl();
    } else if (k.t === '}' || k.t === ']') {
      depth--;
      out += nl() + src;
    } else if (k.t === ',') {
      out += ',' + nl();
    } else if (k.t === ':') {
      out += ': ';
    } else {
      out += src;
    }
  }
  return out;
}

// rootObject reports whether text is a JSON object, and its members.
function rootMembers(text) {
  const toks = tokens(text);
  const members = parse(text, toks);
  if (!toks.length || toks[0].t !== '{') throw new JSONTextError('the request must be a JSON object', 0);
  return { toks, members };
}

// getString returns the root member key when it is a string, else undefined.
export function getString(text, key) {
  const { toks, members } = rootMembers(text);
  const m = members.find((x) => x.key === key);
  if (!m || toks[m.valueStart].t !== 's') return undefined;
  return JSON.parse(text.slice(toks[m.valueStart].s, toks[m.valueStart].e));
}

// setString sets (or, for an empty value, removes) the root member key to
// a string and leaves every other character of text as it was.
export function setString(text, key, value) {
  const { toks, members } = rootMembers(text);
  const m = members.find((x) => x.key === key);
  const json = JSON.stringify(value);
  if (m) {
    const s = toks[m.valueStart].s;
    const e = toks[m.valueEnd - 1].e;
    if (value !== '') return text.slice(0, s) + json + text.slice(e);
    // Remove the member and one adjacent comma.
    let from = toks[m.keyTok].s;
    let to = e;
    const after = toks[m.valueEnd];
    if (after && after.t === ',') to = toks[m.valueEnd + 1].s;
    else if (toks[m.keyTok - 1].t === ',') from = toks[m.keyTok - 1].s;
    return text.slice(0, from) + text.slice(to);
  }
  if (value === '') return text;
  // Insert as the first member, in the layout of the text: on its own line
  // when the members are on lines of their own.
  const open = toks[0].e;
  if (!members.length) return text.slice(0, open) + JSON.stringify(key) + ': ' + json + text.slice(open);
  const gap = text.slice(open, toks[1].s);
  const sep = gap.includes('\n') ? ',' + gap : ', ';
  return text.slice(0, open) + (gap.includes('\n') ? gap : '') + JSON.stringify(key) + ': ' + json + sep + text.slice(toks[1].s);
}
