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

// A table whose columns sort on a click on their header (numbers
// descending first, text ascending first). columns: [{key, label, num,
// render(row)}]; rows: plain objects. With limit, the first limit rows of
// the sorted order are shown and a button shows the rest. Returns the table
// and that button (or null).
export function sortableTable(columns, rows, initialKey, caption, limit = 0) {
  let key = initialKey;
  let desc = true;
  let all = !limit || rows.length <= limit;
  const more = all ? null : el('button', {
    type: 'button',
    class: 'show-all',
    onclick: () => {
      all = true;
      more.remove();
      draw();
    },
  }, `Show all ${rows.length} rows`);
  const table = el('table', { class: 'data sortable' });
  if (caption) table.append(el('caption', {}, caption));
  const thead = el('thead');
  const tbody = el('tbody');
  table.append(thead, tbody);

  function cmp(a, b) {
    const col = columns.find((c) => c.key === key);
    const x = a[key];
    const y = b[key];
    let r;
    if (col.num) r = (Number(x) || 0) - (Number(y) || 0);
    else r = String(x ?? '').localeCompare(String(y ?? ''));
    return desc ? -r : r;
  }

  function draw() {
    const tr = el('tr');
    for (const c of columns) {
      const sorted = c.key === key;
      const th = el('th', {
        scope: 'col',
        class: (c.num ? 'num ' : '') + (sorted ? 'sorted' : ''),
        'aria-sort': sorted ? (desc ? 'descending' : 'ascending') : 'none',
      }, el('button', {
        type: 'button',
        'data-key': c.key,
        onclick: () => {
          if (key === c.key) desc = !desc;
          else {
            key = c.key;
            desc = !!c.num;
          }
          draw();
        },
      }, c.label, sorted ? (desc ? ' ▼' : ' ▲') : ''));
      tr.append(th);
    }
    thead.replaceChildren(tr);
    const sorted = [...rows].sort(cmp).slice(0, all ? rows.length : limit);
    tbody.replaceChildren(...sorted.map((row) => el('tr', {},
      columns.map((c) => el('td', { class: c.num ? 'num' : '' },
        c.render ? c.render(row) : (c.num ? num(row[c.key]) : row[c.key]))))));
  }
  draw();
  return [table, more];
}
