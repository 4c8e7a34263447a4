// util.js: small DOM and formatting helpers shared by the pages.

// el('td', {class: 'num'}, 'text', childNode...): builds an element.
// Strings become text nodes, so nothing from the server is parsed as HTML.
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'class') e.className = v;
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export function escapeHTML(s) {
  return String(s).replace(/[&<>"']/g, (c) => ({
    '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;',
  }[c]));
}

export function num(n) {
  return n === undefined || n === null ? '—' : Number(n).toLocaleString('en-US');
}

export function bytes(n) {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i ? v.toFixed(1) : String(v)) + ' ' + units[i];
}

export function date(unixSeconds) {
  if (!unixSeconds) return '—';
  return new Date(unixSeconds * 1000).toLocaleString();
}

export function percent(part, whole) {
  return whole ? (100 * part / whole).toFixed(2) + '%' : '—';
}

export function ipc(insns, cycles) {
  return cycles ? (insns / cycles).toFixed(3) : '—';
}

// A <progress> with its percentage as text for screen readers.
export function progressBar(fraction, label) {
  const p = el('progress', { max: 1, value: fraction, 'aria-label': label });
  p.textContent = (100 * fraction).toFixed(0) + '%';
  return p;
}

export function message(text, kind = 'error') {
  return el('p', { class: 'msg ' + kind, role: kind === 'error' ? 'alert' : 'status' }, text);
}

// The query of the URL's hash (#/jobs/3?metric=cycles&...): the viewer's
// routes live in the hash, so their state does too.
export function hashParams() {
  const i = location.hash.indexOf('?');
  return new URLSearchParams(i < 0 ? '' : location.hash.slice(i + 1));
}

// Writes base?k=v... (empty values left out) as the URL's hash without a
// history entry or a hashchange: the page is already showing it.
export function setHashParams(base, values) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(values)) if (v !== '' && v !== null && v !== undefined) q.set(k, v);
  const s = q.toString();
  history.replaceState(null, '', base + (s ? '?' + s : ''));
}
