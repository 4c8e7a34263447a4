// annotate.js: perf annotate with exact numbers (GET .../annotate): one
// function's instructions, cycles and calls per source line (with the line's
// text where the server has the file) or per instruction (with objdump's
// text). Needs a job run with per-pc counts (options.pcs); the server's 409
// says so otherwise.
import { getJSON } from './api.js';
import { el, message, num, percent } from './util.js';

function countCells(r, cycles, total) {
  return [el('td', { class: 'num' }, num(r.instructions)),
    el('td', { class: 'num' }, percent(r.instructions, total)),
    cycles && el('td', { class: 'num' }, num(r.cycles)),
    el('td', { class: 'num' }, num(r.calls))];
}

function heads(cycles, ...rest) {
  return el('thead', {}, el('tr', {}, el('th', { scope: 'col', class: 'num' }, 'instructions'),
    el('th', { scope: 'col', class: 'num' }, '%'),
    cycles && el('th', { scope: 'col', class: 'num' }, 'cycles'),
    el('th', { scope: 'col', class: 'num' }, 'calls made'),
    ...rest.map((h) => el('th', { scope: 'col' }, h))));
}

const base = (f) => (f ? f.split('/').pop() : '?');

function sourceTable(f, cycles) {
  return el('table', { class: 'data annotate', id: 'annotate-source' },
    el('caption', {}, `${f.name} by source line: the innermost line of each instruction`),
    heads(cycles, 'line', 'source'),
    el('tbody', {}, f.lines.map((r) => el('tr', { 'data-line': `${base(r.file)}:${r.line}`, class: r.instructions ? '' : 'muted' },
      ...countCells(r, cycles, f.instructions),
      el('td', {}, `${base(r.file)}:${r.line}`),
      el('td', {}, el('code', {}, r.text === undefined ? '' : r.text))))));
}

function disasmTable(f, cycles) {
  return el('table', { class: 'data annotate', id: 'annotate-disasm' },
    el('caption', {}, `${f.name} by instruction`),
    heads(cycles, 'address', 'instruction', 'line'),
    el('tbody', {}, f.insns.map((r) => el('tr', { 'data-pc': r.pc, class: r.instructions ? '' : 'muted' },
      ...countCells(r, cycles, f.instructions),
      el('td', {}, el('code', {}, r.addr)),
      el('td', {}, el('code', {}, r.asm === undefined ? '' : r.asm)),
      el('td', {}, r.line ? `${base(r.file)}:${r.line}` + (r.inlined.length ? ` (inlined: ${r.inlined.join(' › ')})` : '') : '')))));
}

let seq = 0;
// Draws fn's view into box; onClose hides it.
export async function drawAnnotate(box, jobId, fn, view, onView, onClose) {
  const mine = ++seq;
  const close = el('button', { type: 'button', id: 'annotate-close', onclick: onClose }, 'close');
  const tabs = ['source', 'disasm'].map((v) => el('button', {
    type: 'button', id: `annotate-${v}-tab`, 'aria-pressed': String(v === view),
    onclick: () => onView(v),
  }, v === 'source' ? 'source lines' : 'instructions'));
  const head = [el('h2', {}, `Annotate: ${fn}`), el('div', { class: 'controls' }, ...tabs, close)];
  box.replaceChildren(...head, el('p', { class: 'muted' }, 'loading…'));
  let doc;
  try {
    doc = await getJSON(`/api/v1/jobs/${jobId}/annotate?fn=${encodeURIComponent(fn)}&view=${view}`);
  } catch (e) {
    if (mine === seq) box.replaceChildren(...head, message(e.message));
    return;
  }
  if (mine !== seq) return;
  const parts = [];
  if (doc.disasm_error) parts.push(message(`No instruction text: ${doc.disasm_error}`, 'info'));
  for (const f of doc.functions) {
    parts.push(el('p', { class: 'annotate-total' },
      `${f.name} (${f.binary || '?'}, ${f.addr}): ${num(f.instructions)} instructions` +
      (doc.cycles ? `, ${num(f.cycles)} cycles` : '') + `, ${num(f.calls)} calls made: exact counts, ` +
      'equal to the table\'s self counts.'));
    parts.push(view === 'source' ? sourceTable(f, doc.cycles) : disasmTable(f, doc.cycles));
  }
  box.replaceChildren(...head, ...parts);
}
