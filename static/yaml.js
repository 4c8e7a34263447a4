// yaml.js: a small YAML reader for the subset api/openapi.yaml is written
// in (block maps and lists by indentation, flow {..} and [..], quoted and
// plain scalars, | and > block scalars, comments). No npm package of the
// lock file reads YAML, and the viewer loads nothing from a CDN; anchors,
// tags and multi-document files are refused with an error, not misread.

const indentOf = (l) => l.length - l.trimStart().length;
const blank = (l) => /^\s*(#.*)?$/.test(l);

function scalar(s) {
  const t = s.trim();
  if (t === '' || t === '~' || t === 'null') return null;
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t)) return Number(t);
  if (/^[&*!]/.test(t)) throw new Error(`YAML: anchors, aliases and tags are not read: ${t.slice(0, 40)}`);
  return t;
}

function unquote(s, i) {
  const q = s[i];
  let out = '';
  let j = i + 1;
  for (; j < s.length; j++) {
    if (q === "'" && s[j] === "'" && s[j + 1] === "'") { out += "'"; j++; continue; }
    if (q === '"' && s[j] === '\\') { j++; out += ({ n: '\n', t: '\t' })[s[j]] ?? s[j]; continue; }
    if (s[j] === q) return [out, j + 1];
    out += s[j];
  }
  throw new Error(`YAML: unterminated string: ${s.slice(i, i + 40)}`);
}

// Strips a trailing " # comment" outside quotes.
function stripComment(s) {
  let q = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (q) { if (c === q) q = null; continue; }
    if (c === '"' || c === "'") q = c;
    else if (c === '#' && (i === 0 || /\s/.test(s[i - 1]))) return s.slice(0, i).trimEnd();
  }
  return s;
}

// A flow value (or a plain/quoted scalar) starting at s[i]: [value, next i].
function flow(s, i, inFlow) {
  while (s[i] === ' ') i++;
  const c = s[i];
  if (c === '{' || c === '[') {
    const map = c === '{';
    const out = map ? {} : [];
    i++;
    for (;;) {
      while (s[i] === ' ') i++;
      if (s[i] === (map ? '}' : ']')) return [out, i + 1];
      if (i >= s.length) throw new Error(`YAML: unclosed ${c}: ${s.slice(0, 60)}`);
      if (map) {
        let key;
        if (s[i] === '"' || s[i] === "'") [key, i] = unquote(s, i);
        else {
          let k = i;
          while (k < s.length && !/[:,}]/.test(s[k])) k++;
          key = s.slice(i, k).trim();
          i = k;
        }
        while (s[i] === ' ') i++;
        let v = null; // "{a, b: 1}": a key alone has a null value
        if (s[i] === ':') [v, i] = flow(s, i + 1, true);
        out[key] = v;
      } else {
        let v;
        [v, i] = flow(s, i, true);
        out.push(v);
      }
      while (s[i] === ' ') i++;
      if (s[i] === ',') i++;
    }
  }
  if (c === '"' || c === "'") return unquote(s, i);
  let j = i;
  while (j < s.length && !(inFlow && /[,\]}]/.test(s[j]))) j++;
  return [scalar(s.slice(i, j)), j];
}

// "key: rest" -> [key, rest], or null when the line is not a map entry.
function splitKey(t) {
  let key;
  let i;
  if (t[0] === '"' || t[0] === "'") [key, i] = unquote(t, 0);
  else {
    const m = t.match(/^([^\s#{[\]}][^:]*?):(?=\s|$)/);
    if (!m) return null;
    key = m[1];
    i = m[1].length;
  }
  if (t[i] !== ':') return null;
  return [key, t.slice(i + 1).trim()];
}

export function parseYAML(text) {
  const lines = text.replace(/\r/g, '').split('\n');
  let i = 0;
  const skip = () => { while (i < lines.length && blank(lines[i])) i++; };
  const isItem = (t) => t === '-' || t.startsWith('- ');

  function blockScalar(head, parent) {
    const body = [];
    let ind = null;
    while (i < lines.length && (lines[i].trim() === '' || indentOf(lines[i]) > parent)) {
      if (lines[i].trim() !== '' && ind === null) ind = indentOf(lines[i]);
      body.push(lines[i].slice(ind ?? 0));
      i++;
    }
    while (body.length && body[body.length - 1].trim() === '') body.pop();
    const text = head[0] === '|' ? body.join('\n') : body.join('\n').replace(/([^\n])\n(?=[^\n])/g, '$1 ');
    return head.includes('-') ? text : text + '\n';
  }

  function value(rest, n) {
    if (rest === '') {
      skip();
      if (i >= lines.length) return null;
      const m = indentOf(lines[i]);
      if (m > n || (m === n && isItem(lines[i].trim()))) return block(m);
      return null;
    }
    if (rest[0] === '|' || rest[0] === '>') return blockScalar(rest, n);
    const [v, j] = flow(rest, 0, false);
    if (rest.slice(j).trim()) throw new Error(`YAML: trailing text after a value: ${rest.slice(0, 60)}`);
    return v;
  }

  function map(n) {
    const o = {};
    for (;;) {
      skip();
      if (i >= lines.length || indentOf(lines[i]) !== n || isItem(lines[i].trim())) return o;
      const kv = splitKey(stripComment(lines[i].trim()));
      if (!kv) throw new Error(`YAML line ${i + 1}: expected "key: value": ${lines[i].trim().slice(0, 60)}`);
      i++;
      o[kv[0]] = value(kv[1], n);
    }
  }

  function seq(n) {
    const a = [];
    for (;;) {
      skip();
      if (i >= lines.length || indentOf(lines[i]) !== n || !isItem(lines[i].trim())) return a;
      const rest = stripComment(lines[i].trim().slice(1).trim());
      if (rest === '') {
        i++;
        a.push(value('', n));
      } else if (rest[0] !== '{' && rest[0] !== '[' && splitKey(rest)) {
        // "- key: v" opens a map indented past the dash
        lines[i] = ' '.repeat(n + 2) + rest;
        a.push(map(n + 2));
      } else {
        i++;
        a.push(value(rest, n));
      }
    }
  }

  function block(n) {
    skip();
    return isItem(lines[i].trim()) ? seq(n) : map(n);
  }

  skip();
  if (lines.some((l) => /^(---|\.\.\.)\s*$/.test(l) && l !== lines[0])) throw new Error('YAML: one document only');
  if (i < lines.length && /^---\s*$/.test(lines[i])) i++;
  const doc = block(0);
  skip();
  if (i < lines.length) throw new Error(`YAML line ${i + 1}: not read: ${lines[i].slice(0, 60)}`);
  return doc;
}
