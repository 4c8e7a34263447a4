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

// ---- job progress ----

// The job's total instructions when it is known: the records counted when
// its traces were uploaded (a streaming trace has none yet), capped by
// options.max_insns. null when unknown.
export function jobTotal(job, traceById) {
  const spec = job.spec || {};
  const ids = spec.traces || [spec.trace || job.trace];
  let total = 0;
  for (const id of ids) {
    const t = traceById(id);
    if (!t || t.state !== 'ready' || !t.records || t.format === 'fireperf' || t.format === 'events') return null;
    total += t.records;
  }
  const max = spec.options && spec.options.max_insns;
  return max ? Math.min(max, total) : total;
}

// Done, total (known, or estimated from the bytes read: instructions so
// far over the fraction of bytes), fraction and ETA (seconds, from the
// time since the job started) of a job.
export function progressOf(job, total, nowMs = Date.now()) {
  const p = job.progress || {};
  const done = p.instructions || 0;
  let all = total || null;
  let estimated = false;
  if (!all && p.fraction > 0 && done) {
    all = Math.round(done / p.fraction);
    estimated = true;
  }
  const fraction = all ? Math.min(1, done / all) : p.fraction || 0;
  let eta = null;
  if (job.state === 'running' && job.started && fraction > 0 && fraction < 1) {
    const elapsed = Math.max(0, nowMs / 1000 - job.started);
    eta = (elapsed * (1 - fraction)) / fraction;
  }
  return { done, total: all, estimated, fraction, eta };
}

export function duration(s) {
  if (s === null || s === undefined) return '—';
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s % 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}

// "1,234 / 5,678 instructions, ETA 12 s" (≈ and a note when estimated).
export function progressLabel(pr) {
  const total = pr.total === null ? 'unknown total' : (pr.estimated ? '≈' : '') + num(pr.total);
  return `${num(pr.done)} / ${total} instructions` +
    (pr.estimated ? ' (total estimated from the bytes read)' : '') +
    (pr.eta !== null ? `, ETA ${duration(pr.eta)}` : '');
}

// What a server-side build has done (a 202 of getView): "37.00% (143.0 MiB
// of 369.8 MiB of stack events)". Each pass of a build adds to the total.
export function buildProgress(p) {
  if (!p || !p.total) return '';
  const unit = p.unit === 'bytes of stack events' ? ' of stack events' : '';
  return `${percent(p.done, p.total)} (${bytes(p.done)} of ${bytes(p.total)}${unit})`;
}

// A spinner and the seconds since start, updated until stop() is called:
// for waits whose length nobody knows in advance (timeline, exports).
// progress(p) adds what the server says of its build (buildProgress).
export function spinner(what) {
  const t0 = Date.now();
  let done = '';
  const text = el('span', {}, what);
  const box = el('span', { class: 'spinner-box', role: 'status' }, el('span', { class: 'spinner', 'aria-hidden': 'true' }), ' ', text);
  const tick = () => { text.textContent = `${what} ${duration((Date.now() - t0) / 1000)}${done ? ', ' + done : ''}`; };
  tick();
  const timer = setInterval(tick, 250);
  return {
    el: box,
    stop: () => clearInterval(timer),
    elapsed: () => (Date.now() - t0) / 1000,
    progress: (p) => { done = buildProgress(p); tick(); },
  };
}
