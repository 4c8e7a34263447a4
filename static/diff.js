// diff.js: two finished jobs compared (#/compare?base=A&other=B), from
// GET /api/v1/compare: each side's weights as shares of its own total, so
// runs of different lengths, or an exact run and a sampled one, compare.
//   - the summary: both sides, the total share error (sum |a-b|/2) over
//     functions and over stacks, how many functions differ by more than
//     3 sigma of a sampled side's binomial error;
//   - a differential flame graph: the frames of one side (the other job by
//     default, as in Gregg's differential flame graphs; the base to see
//     what disappeared), coloured by the change of each context's share:
//     red grew, blue shrank, white unchanged;
//   - the functions whose self share grew and shrank most, with the 3-sigma
//     flag when a side is sampled.
// Shares are shown in percent of each side's total, differences in
// percentage points (pp), both at SHARE_DIGITS decimals.
import { getJSON } from './api.js';
import { keyboardFrames, ORDERS, screenTooltip } from './flame.js';
import { el, escapeHTML, hashParams, message, num, setHashParams } from './util.js';

export const SHARE_DIGITS = 3;

export function pct(share) {
  return share === undefined || share === null ? '—' : (100 * share).toFixed(SHARE_DIGITS) + '%';
}

export function pp(delta) {
  if (delta === undefined || delta === null) return '—';
  const s = (100 * delta).toFixed(SHARE_DIGITS);
  return (delta > 0 && Number(s) !== 0 ? '+' : '') + s + ' pp';
}

// Red for a share that grew, blue for one that shrank, saturated at the
// largest change of the graph (|change| / largest), white when unchanged.
// The smallest change is still tinted (235): only an equal share is white.
export function deltaColor(change, largest) {
  const v = largest > 0 ? Math.min(1, Math.abs(change) / largest) : 0;
  const fade = Math.round(235 - 160 * v);
  if (change > 0) return `rgb(245,${fade},${fade})`;
  if (change < 0) return `rgb(${fade},${fade},245)`;
  return 'rgb(245,245,245)';
}

// The API's tree sized by the other job's weight (value); sized by the
// base, value = base_share x the base's total. change = the node's share
// difference, kept for the colours and the tooltip.
function sized(node, by, baseTotal) {
  const value = by === 'base' ? node.base_share * baseTotal : node.value;
  return {
    name: node.name,
    value,
    change: node.other_share - node.base_share,
    base_share: node.base_share,
    other_share: node.other_share,
    children: (node.children || []).map((c) => sized(c, by, baseTotal)),
  };
}

function largestChange(n) {
  let m = Math.abs(n.change);
  for (const c of n.children) m = Math.max(m, largestChange(c));
  return m;
}

// Contexts of the base that the other job never ran (other_share 0) are
// not drawn when the graph is sized by the other job: counted for a note.
function vanished(n) {
  let k = 0;
  for (const c of n.children) k += c.other_share === 0 && c.base_share > 0 ? 1 : vanished(c);
  return k;
}

function stateFromURL() {
  const q = hashParams();
  const id = (k) => (/^\d+$/.test(q.get(k) || '') ? Number(q.get(k)) : null);
  const pick = (k, ok, dflt) => (ok.includes(q.get(k)) ? q.get(k) : dflt);
  return {
    base: id('base'),
    other: id('other'),
    metric: pick('metric', ['instructions', 'cycles', 'calls'], 'instructions'),
    by: pick('by', ['other', 'base'], 'other'),
    top: /^[1-9]\d{0,3}$/.test(q.get('top') || '') ? Number(q.get('top')) : 10,
    term: q.get('q') || '',
  };
}

function jobLabel(j, traces) {
  const t = traces.get(j.trace);
  return `job ${j.id}: ${t ? t.name : 'trace ' + j.trace}` + (t ? ` (${t.format})` : '');
}

function sideText(label, s) {
  return `${label}: ${s.format}, ${s.sampled ? `sampled, ${num(s.samples)} samples` : 'exact'}, ` +
    `${num(s.total)} ${s.metric}`;
}

// One row per function of the over or under list, the numbers from the
// API's per-function row of that name.
function functionTable(id, caption, list, rows, bounded) {
  const head = ['function', 'base self', 'other self', 'change', 'base total', 'other total'];
  if (bounded) head.push('3 sigma', 'sampling error?');
  return el('table', { class: 'data', id },
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, head.map((h, i) => el('th', { scope: 'col', class: i ? 'num' : '' }, h)))),
    el('tbody', {}, list.length ? list.map((f) => {
      const r = rows.get(f.name) || {};
      const cells = [el('td', {}, f.name), el('td', { class: 'num' }, pct(r.base)),
        el('td', { class: 'num' }, pct(r.other)), el('td', { class: 'num' }, pp(r.delta)),
        el('td', { class: 'num' }, pct(r.base_total)), el('td', { class: 'num' }, pct(r.other_total))];
      if (bounded) {
        const out = r.within_bound === false;
        cells.push(el('td', { class: 'num' }, r.sigma === undefined ? '—' : pp(3 * r.sigma).replace('+', '')),
          el('td', { class: out ? 'flag-out' : 'flag-in' }, out ? 'no: outside 3 sigma' : 'may be: within 3 sigma'));
      }
      return el('tr', { 'data-name': f.name, 'data-within': bounded ? String(r.within_bound !== false) : null }, cells);
    }) : el('tr', {}, el('td', { colspan: head.length, class: 'muted' }, 'none'))));
}

export function renderCompare(main) {
  const state = stateFromURL();
  let gone = false;
  let chart = null;
  let tip = null;
  let seq = 0;
  const pickBox = el('section', { class: 'card', id: 'compare-pick' }, el('p', { class: 'muted' }, 'loading jobs…'));
  const note = el('div', { id: 'compare-note', 'aria-live': 'polite' });
  const result = el('div', { id: 'compare-result' });
  main.append(el('p', {}, el('a', { href: '#/' }, '← Dashboard')), el('h1', {}, 'Compare two jobs'),
    pickBox, note, result);

  function saveState() {
    setHashParams('#/compare', {
      base: state.base ?? '', other: state.other ?? '',
      metric: state.metric === 'instructions' ? '' : state.metric,
      by: state.by === 'other' ? '' : state.by,
      top: state.top === 10 ? '' : state.top,
      q: state.term,
    });
  }

  function select(id, label, options, value, onChange) {
    const s = el('select', { id }, options.map(([v, text]) => el('option', { value: v }, text)));
    s.value = value === null ? '' : String(value);
    s.addEventListener('change', () => onChange(s.value));
    return [el('label', { for: id }, label), s];
  }

  async function drawPicker() {
    let jobs;
    let traces;
    try {
      const [j, t] = await Promise.all([getJSON('/api/v1/jobs?limit=1000'), getJSON('/api/v1/traces?limit=1000')]);
      jobs = j.jobs.filter((x) => x.state === 'done');
      traces = new Map(t.traces.map((x) => [x.id, x]));
    } catch (e) {
      pickBox.replaceChildren(message(e.message));
      return;
    }
    if (gone) return;
    const opts = [['', 'choose a finished job'], ...jobs.map((j) => [String(j.id), jobLabel(j, traces)])];
    const change = (k) => (v) => {
      state[k] = k === 'base' || k === 'other' ? (v ? Number(v) : null) : k === 'top' ? Number(v) : v;
      saveState();
      drawResult();
    };
    const tops = [5, 10, 20, 50, 100].map((n) => [String(n), String(n)]);
    if (!tops.some(([v]) => Number(v) === state.top)) tops.push([String(state.top), String(state.top)]);
    const swap = el('button', { type: 'button', id: 'compare-swap', onclick: () => {
      [state.base, state.other] = [state.other, state.base];
      saveState();
      pickBox.querySelector('#compare-base').value = state.base ?? '';
      pickBox.querySelector('#compare-other').value = state.other ?? '';
      drawResult();
    } }, 'Swap');
    pickBox.replaceChildren(
      el('p', { class: 'muted' }, 'Each side as shares of its own total, so runs of different lengths compare, ' +
        'and an exact run with a sampled one (perf script, folded, pprof or uniprof uploaded as a trace).'),
      el('div', { class: 'controls' },
        select('compare-base', 'Base', opts, state.base, change('base')),
        select('compare-other', 'Other', opts, state.other, change('other')), swap),
      el('div', { class: 'controls' },
        select('compare-metric', 'Metric', [['instructions', 'instructions'], ['cycles', 'cycles'], ['calls', 'calls']],
          state.metric, change('metric')),
        select('compare-by', 'Frames of', [['other', 'the other job (what grew)'], ['base', 'the base job (what shrank or vanished)']],
          state.by, change('by')),
        select('compare-top', 'Functions listed', tops, state.top, change('top'))));
  }

  function tooltipHTML(d) {
    const n = d.data;
    const row = (k, v) => `<tr><th>${k}</th><td>${v}</td></tr>`;
    return `<strong>${escapeHTML(n.name)}</strong><table>` + row('base', pct(n.base_share)) +
      row('other', pct(n.other_share)) + row('change', pp(n.change)) + '</table>';
  }

  function drawFlame(box, data) {
    if (chart) chart.destroy();
    if (tip) tip.destroy();
    const largest = largestChange(data);
    tip = screenTooltip(tooltipHTML);
    const details = el('div', { id: 'compare-details', class: 'details', 'aria-live': 'polite' }, '\u00a0');
    const container = el('div', { id: 'compare-flame', class: 'flame' });
    const search = el('input', { id: 'compare-search', type: 'search', placeholder: 'function name', value: state.term,
      'aria-label': 'search functions (substring)' });
    const reset = el('button', { type: 'button', id: 'compare-reset' }, 'Reset zoom');
    const hidden = state.by === 'other' ? vanished(data) : 0;
    box.replaceChildren(el('h2', {}, 'Differential flame graph'),
      el('p', { class: 'muted' }, `Frames of the ${state.by} job, sized by its ${state.metric}; colour: the change ` +
        'of the context\'s share of its side\'s total, other minus base.'),
      el('ul', { class: 'legend', 'aria-label': 'colours' },
        el('li', {}, el('span', { class: 'swatch', style: `background:${deltaColor(1, 1)}` }), 'share grew'),
        el('li', {}, el('span', { class: 'swatch', style: `background:${deltaColor(-1, 1)}` }), 'share shrank'),
        el('li', {}, el('span', { class: 'swatch', style: `background:${deltaColor(0, 1)}` }), 'unchanged'),
        el('li', { class: 'muted' }, `full colour: ${pp(largest).replace('+', '')}, the largest change`)),
      hidden ? el('p', { class: 'msg info', id: 'compare-vanished' }, `${num(hidden)} contexts of the base ` +
        'never ran in the other job and are not drawn: show the frames of the base job to see them.') : null,
      el('div', { class: 'controls' }, search, reset), details, container);
    const keys = keyboardFrames(container, {
      label: (d) => `${d.data.name}: base ${pct(d.data.base_share)}, other ${pct(d.data.other_share)}`,
      inverted: () => false,
      zoom: (d) => chart.zoomTo(d),
      reset: () => chart.resetZoom(),
      onFocus: (d, g) => tip.show({ rect: g.getBoundingClientRect() }, d),
      onBlur: () => tip.hide(),
    });
    chart = flamegraph.default()
      .width(container.clientWidth || 900)
      .cellHeight(18)
      .transitionDuration(0)
      .minFrameSize(1)
      .sort(ORDERS.weight)
      .title('')
      .tooltip(tip)
      .setDetailsElement(details)
      .setColorMapper((d) => (d.highlight ? '#e600e6' : deltaColor(d.data.change, largest)))
      .setSearchMatch((d, term) => !!term && d.data.name.toLowerCase().includes(term.toLowerCase()))
      .setLabelHandler((d) => `${d.data.name}: base ${pct(d.data.base_share)}, other ${pct(d.data.other_share)}, ` +
        `change ${pp(d.data.change)}`)
      .onClick(() => keys.refresh());
    d3.select(container).datum(data).call(chart);
    keys.refresh();
    if (state.term) chart.search(state.term);
    search.addEventListener('input', () => {
      state.term = search.value.trim();
      saveState();
      if (state.term) chart.search(state.term);
      else chart.clear();
    });
    reset.addEventListener('click', () => chart.resetZoom());
  }

  async function drawResult() {
    const mine = ++seq;
    result.replaceChildren();
    note.replaceChildren();
    if (state.base === null || state.other === null) {
      note.replaceChildren(message('Choose a base job and another job.', 'info'));
      return;
    }
    note.replaceChildren(el('p', { class: 'muted' }, 'comparing…'));
    const q = new URLSearchParams({ base: state.base, other: state.other, metric: state.metric, top: state.top });
    let c;
    try {
      c = await getJSON(`/api/v1/compare?${q}`);
    } catch (e) {
      if (mine === seq) note.replaceChildren(message(e.message));
      return;
    }
    if (gone || mine !== seq) return;
    note.replaceChildren();
    const s = c.summary;
    const bounded = !!s.bound;
    const rows = new Map(c.functions.map((f) => [f.name, f]));
    const flameBox = el('section', { class: 'card flame-card', id: 'compare-flame-card' });
    result.replaceChildren(
      el('section', { class: 'card', id: 'compare-summary' }, el('h2', {}, 'Summary'),
        el('dl', { class: 'summary' },
          el('dt', {}, 'base'), el('dd', { id: 'compare-base-side' }, sideText(`job ${state.base}`, c.base)),
          el('dt', {}, 'other'), el('dd', { id: 'compare-other-side' }, sideText(`job ${state.other}`, c.other)),
          el('dt', {}, 'function error'), el('dd', { id: 'compare-function-error' }, pct(s.function_error)),
          el('dt', {}, 'stack error'), el('dd', { id: 'compare-stack-error' }, pct(s.stack_error)),
          el('dt', {}, 'functions, stacks'), el('dd', {}, `${num(s.functions)}, ${num(s.stacks)}`),
          el('dt', {}, 'sampling bound'), el('dd', { id: 'compare-bound' }, bounded ?
            `${s.bound}: ${num(s.outside_bound)} of ${num(s.functions)} functions differ by more` :
            'none: both sides exact, every difference is real')),
        el('p', { class: 'muted' }, 'Error: half the sum of the absolute differences of the shares (0: the same ' +
          'profile, 100%: nothing in common).')),
      flameBox,
      el('section', { class: 'card', id: 'compare-functions' }, el('h2', {}, 'Functions that changed most'),
        el('p', { class: 'muted' }, 'Self shares of each side\'s total; change = other − base in percentage points.' +
          (bounded ? ' 3 sigma: the binomial error the sample count allows; within it, the change may be ' +
            'sampling noise.' : '')),
        functionTable('compare-over', `Grew (top ${s.over.length})`, s.over, rows, bounded),
        functionTable('compare-under', `Shrank (top ${s.under.length})`, s.under, rows, bounded)));
    drawFlame(flameBox, sized(c.flame, state.by, c.base.total));
  }

  drawPicker();
  drawResult();
  return () => {
    gone = true;
    if (tip) tip.destroy();
    if (chart) chart.destroy();
  };
}
