// sandwich.js: one function's callers and callees (the "sandwich" of
// speedscope), from the flame graph JSON of every context (max_nodes=0)
// under the page's filters: two small flame graphs (callers drawn
// downwards from the function, callees upwards) and the direct callers and
// callees with their exact weights.
import { getJSON } from './api.js';
import { sandwich } from './flame.js';
import { el, message, num, percent } from './util.js';

function directTable(id, caption, kids, total, metric) {
  return el('table', { class: 'data', id },
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'function'),
      el('th', { scope: 'col', class: 'num' }, metric), el('th', { scope: 'col', class: 'num' }, `% of the function's`))),
    el('tbody', {}, kids.length ? kids.map((k) => el('tr', { 'data-name': k.name },
      el('td', {}, k.name), el('td', { class: 'num' }, num(k.value)), el('td', { class: 'num' }, percent(k.value, total))))
      : el('tr', {}, el('td', { colspan: 3, class: 'muted' }, 'none'))));
}

function miniChart(target, data, inverted, metric) {
  const width = Math.max(300, target.clientWidth || 600);
  const chart = flamegraph.default().width(width).cellHeight(16).minFrameSize(1).transitionDuration(0)
    .inverted(inverted).sort((a, b) => b.data.value - a.data.value)
    .setColorMapper((d) => (d.depth === 0 ? 'hsl(300, 60%, 80%)' : `hsl(${20 + (d.depth * 37) % 40}, 80%, 70%)`))
    .title('')
    .setLabelHandler((d) => `${d.data.name}: ${num(d.data.value)} ${metric}`);
  d3.select(target).datum(data).call(chart);
}

let seq = 0;
export async function drawSandwich(box, url, fn, metric, onClose) {
  const mine = ++seq;
  box.replaceChildren(el('h2', {}, `Sandwich: ${fn}`), el('p', { class: 'muted' }, 'loading…'));
  let root;
  try {
    root = await getJSON(url);
  } catch (e) {
    if (mine === seq) box.replaceChildren(el('h2', {}, `Sandwich: ${fn}`), message(e.message));
    return;
  }
  if (mine !== seq) return;
  const s = sandwich(root, fn);
  const close = el('button', { type: 'button', id: 'sandwich-close', onclick: onClose }, 'Close');
  if (!s.instances) {
    box.replaceChildren(el('h2', {}, `Sandwich: ${fn}`, ' ', close),
      message(`${fn} does not run in this view (filters or window).`, 'info'));
    return;
  }
  const callersBox = el('div', { id: 'sandwich-callers', class: 'flame' });
  const calleesBox = el('div', { id: 'sandwich-callees', class: 'flame' });
  box.replaceChildren(
    el('h2', {}, `Sandwich: ${fn}`, ' ', close),
    el('p', { id: 'sandwich-summary' }, `${fn}: ${num(s.total)} ${metric} in all (${percent(s.total, root.value)} ` +
      `of the view), ${num(s.self)} its own, in ${num(s.instances)} contexts; recursion counted once.`),
    el('div', { class: 'sandwich-tables' },
      directTable('sandwich-callers-table', `Called by (${metric} of ${fn} under each caller)`,
        s.callers.children, s.total, metric),
      directTable('sandwich-callees-table', `Calls (${metric} of each callee under ${fn}; the rest is its own)`,
        s.callees.children, s.total, metric)),
    el('h3', {}, 'Callers (the function on top, its callers below)'), callersBox,
    el('h3', {}, 'Callees (the function at the bottom, what it calls above)'), calleesBox);
  miniChart(callersBox, s.callers, true, metric);
  miniChart(calleesBox, s.callees, false, metric);
}
