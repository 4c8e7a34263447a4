// table.js: the per-function table of a job (GET .../top with the flame
// graph's filters): every row, a page at a time; a search box (substring of
// the name or the source file); columns sort on a click; self and total as a
// share of the view's weight (the sum of the self weights: what the flame
// graph's root holds).
import { el, num } from './util.js';

export const PAGE_ROWS = 50;

// columns: [{key, label, num, render(row)}]. st: {key, desc, page, term}
// (kept by the caller, so that a redraw keeps them); onChange(st) is told
// when they change (the URL keeps them).
export function pagedTable(columns, rows, st, caption, onChange) {
  const table = el('table', { class: 'data sortable' });
  const thead = el('thead');
  const tbody = el('tbody');
  table.append(el('caption', {}, caption), thead, tbody);
  const search = el('input', {
    id: 'table-search', type: 'search', placeholder: 'filter functions', value: st.term,
    'aria-label': 'filter the table by function name or source file (substring)',
  });
  const pager = el('div', { class: 'pager', id: 'table-pager', 'aria-live': 'polite' });

  function cmp(a, b) {
    const col = columns.find((c) => c.key === st.key) || columns[0];
    const x = a[col.key];
    const y = b[col.key];
    const r = col.num ? (Number(x) || 0) - (Number(y) || 0) : String(x ?? '').localeCompare(String(y ?? ''));
    return st.desc ? -r : r;
  }

  function draw() {
    const tr = el('tr');
    for (const c of columns) {
      const sorted = c.key === st.key;
      tr.append(el('th', {
        scope: 'col',
        class: (c.num ? 'num ' : '') + (sorted ? 'sorted' : ''),
        'aria-sort': sorted ? (st.desc ? 'descending' : 'ascending') : 'none',
      }, el('button', {
        type: 'button',
        'data-key': c.key,
        onclick: () => {
          if (st.key === c.key) st.desc = !st.desc;
          else {
            st.key = c.key;
            st.desc = !!c.num;
          }
          st.page = 0;
          changed();
        },
      }, c.label, sorted ? (st.desc ? ' ▼' : ' ▲') : '')));
    }
    thead.replaceChildren(tr);
    const t = st.term.toLowerCase();
    const kept = t ? rows.filter((r) => r.name.toLowerCase().includes(t) ||
      (r.file || '').toLowerCase().includes(t)) : rows;
    const pages = Math.max(1, Math.ceil(kept.length / PAGE_ROWS));
    st.page = Math.min(Math.max(0, st.page), pages - 1);
    const first = st.page * PAGE_ROWS;
    const shown = [...kept].sort(cmp).slice(first, first + PAGE_ROWS);
    tbody.replaceChildren(...shown.map((row) => el('tr', { 'data-name': row.name },
      columns.map((c) => el('td', { class: c.num ? 'num' : '' },
        c.render ? c.render(row) : (c.num ? num(row[c.key]) : row[c.key]))))));
    const go = (p, label, id) => el('button', {
      type: 'button', id, disabled: p < 0 || p >= pages || p === st.page,
      onclick: () => {
        st.page = p;
        changed();
      },
    }, label);
    pager.replaceChildren(go(0, '« first', 'page-first'), ' ', go(st.page - 1, '‹ previous', 'page-prev'), ' ',
      el('span', { id: 'page-info' }, kept.length ?
        `rows ${num(first + 1)}–${num(first + shown.length)} of ${num(kept.length)}` +
        (t ? ` matching "${st.term}" (${num(rows.length)} in all)` : '') + `; page ${st.page + 1} of ${pages}` :
        `no function matches "${st.term}"`),
      ' ', go(st.page + 1, 'next ›', 'page-next'), ' ', go(pages - 1, 'last »', 'page-last'));
  }
  function changed() {
    draw();
    if (onChange) onChange(st);
  }
  search.addEventListener('input', () => {
    st.term = search.value.trim();
    st.page = 0;
    changed();
  });
  draw();
  return [el('div', { class: 'controls' }, search), table, pager];
}
