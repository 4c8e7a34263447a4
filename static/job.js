// job.js: one job's result. A d3-flame-graph of the calling-context tree
// (search, click to zoom, reset, a tooltip with the exact counts), the metric
// and filter switches, the process tree (proctree.js; a click shows one
// process's flame graph), the top functions as a sortable table, and the
// exports (files, or speedscope bundled with the viewer).
//
// d3-flame-graph 5.0.0's UMD build: the global `flamegraph` is a namespace
// (flamegraph.default() makes a chart, flamegraph.tooltip has the tooltip);
// its own search builds a RegExp from the text, so a plain substring matcher
// is installed instead; new data is shown with chart.update(data).
import { exportURL, fetchBuilt, getJSON, getView, speedscopeURL } from './api.js';
import { ORDERS, keyboardFrames, screenTooltip } from './flame.js';
import { drawSandwich } from './sandwich.js';
import { drawAnnotate } from './annotate.js';
import { pagedTable } from './table.js';
import { HIGHLIGHT, frameColor, legend } from './colors.js';
import { processLabel, processTree } from './proctree.js';
import {
  bytes, date, el, escapeHTML, hashParams, ipc, jobTotal, message, num, percent, progressBar, progressLabel, progressOf,
  setHashParams, spinner,
} from './util.js';

// Nodes asked for at first: a document of a few hundred kB that d3 draws at
// once. "Show all" asks for every node (max_nodes=0).
const MAX_NODES = 4000;

// Names from the root to d ("all" excluded): the key that matches a node of
// one flame graph with the same context in another (other metric).
function pathKey(d) {
  const names = [];
  for (let n = d; n && n.parent; n = n.parent) names.push(n.data.name);
  return names.reverse().join('\u001f');
}

function indexPaths(root) {
  const m = new Map();
  (function walk(n, prefix) {
    for (const c of n.children || []) {
      const k = prefix ? prefix + '\u001f' + c.name : c.name;
      m.set(k, c);
      walk(c, k);
    }
  })(root, '');
  return m;
}

function summary(job, trace) {
  const s = job.summary || {};
  const rows = [
    ['trace', trace ? `${trace.name} (${trace.format}, ${trace.id})` : job.trace],
    ['instructions', num(s.instructions)],
    ['cycles', s.cycles ? num(s.cycles) : 'not in this trace'],
    ['IPC', ipc(s.instructions, s.cycles)],
    ['calls', `${num(s.calls)} (tail calls: ${num(s.tail_calls)}; the calls metric counts both)`],
    ['returns', num(s.returns)],
    ['traps', num(s.traps)],
    ['harts', num(s.harts)],
    ['stack repairs', `${num(s.repairs_unwind)} unwound, ${num(s.repairs_unknown)} resynchronized`],
    ['finished', date(job.finished)],
  ];
  if (job.partial) rows.push(['partial', 'yes: the trace was still arriving or was cut short']);
  const dl = el('dl', { class: 'summary' }, rows.map(([k, v]) => [el('dt', {}, k), el('dd', {}, v)]));
  return [warnings(s.warnings), dl];
}

// What recon saw that makes the profile less than it seems (code of no
// given ELF, a binary that is not what ran): shown first, never hidden.
function warnings(list) {
  if (!list || !list.length) return null;
  return el('ul', { class: 'warnings', role: 'alert', 'aria-label': 'warnings' },
    list.map((w) => el('li', { 'data-kind': w.kind }, w.message)));
}

function select(id, label, options, value) {
  const s = el('select', { id }, options.map(([v, text]) => el('option', { value: v }, text)));
  s.value = value;
  return [el('label', { for: id }, label), s];
}

// The view's state, from the URL's query (#/jobs/<id>?metric=...): what
// saveState writes.
function stateFromURL() {
  const q = hashParams();
  const pick = (k, ok, dflt) => (ok.includes(q.get(k)) ? q.get(k) : dflt);
  const int = (k) => (/^\d+$/.test(q.get(k) || '') ? q.get(k) : '');
  const pid = q.get('pid');
  return {
    metric: pick('metric', ['instructions', 'cycles', 'calls'], 'instructions'),
    priv: pick('priv', ['all', 'user', 'kernel'], 'all'),
    hart: /^\d+$/.test(q.get('hart') || '') ? q.get('hart') : 'all',
    pid: /^-?\d+$/.test(pid || '') ? Number(pid) : null,
    procLabel: '',
    from: int('from'),
    to: int('to'),
    term: q.get('q') || '',
    zoom: q.get('zoom') || '',
    layout: pick('layout', ['flame', 'icicle'], 'flame'),
    order: pick('order', ['weight', 'name'], 'weight'),
    // nodes=all (every node) or a number (a level of detail)
    maxNodes: q.get('nodes') === 'all' ? 0 : /^[1-9]\d*$/.test(q.get('nodes') || '') ? Number(q.get('nodes')) : MAX_NODES,
    sandwich: q.get('fn') || '',
    // the annotate card's function ('' closed) and view
    annotate: q.get('ann') || '',
    annView: pick('aview', ['source', 'disasm'], 'source'),
    table: { key: q.get('sort') || '', desc: q.get('asc') !== '1', page: Math.max(0, Number(int('page') || 1) - 1),
      term: q.get('tq') || '' },
  };
}

export function renderJob(main, id) {
  // pid: the process the flame graph is restricted to (null: all), and its
  // label for the chip that clears the filter.
  const state = stateFromURL();
  let gone = false;
  let timer = null;
  let chart = null;
  let tip = null;
  let job = null;
  let trace = null;
  let stats = new Map(); // path -> node of the instructions graph (for tooltips)
  let rootValue = 0;
  let processes = []; // GET .../processes, when the trace told them apart
  let flameSeq = 0; // the latest flame graph request: older answers are dropped

  const head = el('h1', {}, `Job ${id}`);
  const info = el('div', { id: 'job-info' });
  const note = el('div', { id: 'job-note', 'aria-live': 'polite' });
  main.append(el('p', {}, el('a', { href: '#/' }, '← Dashboard')), head, note, info);

  function tooltipHTML(d) {
    const n = d.data;
    const s = state.metric === 'instructions' ? n : stats.get(pathKey(d));
    const insns = s ? s.value : undefined;
    const where = [n.file ? `${n.file}${n.line ? ':' + n.line : ''}` : null, n.binary, n.libtype]
      .filter(Boolean).map(escapeHTML).join(' · ');
    const row = (k, v) => `<tr><th>${k}</th><td>${v}</td></tr>`;
    return `<strong>${escapeHTML(n.name)}</strong>` + (where ? `<div class="where">${where}</div>` : '') +
      '<table>' + row('calls', num(n.calls)) + row('instructions', num(insns)) +
      row('cycles', n.cycles ? num(n.cycles) : '—') + row('IPC', ipc(insns, n.cycles)) +
      row(`% of ${state.metric}`, percent(n.value, rootValue)) +
      row(`self ${state.metric}`, num(n.self)) + '</table>';
  }

  // The URL keeps what the view shows (a reload or a copied link shows it
  // again); replaceState: no history entry, no hashchange (no re-render).
  function saveState() {
    setHashParams(`#/jobs/${id}`, {
      metric: state.metric === 'instructions' ? '' : state.metric,
      priv: state.priv === 'all' ? '' : state.priv,
      hart: state.hart === 'all' ? '' : state.hart,
      pid: state.pid === null ? '' : state.pid,
      from: state.from, to: state.to,
      q: state.term, zoom: state.zoom,
      layout: state.layout === 'flame' ? '' : state.layout,
      order: state.order === 'weight' ? '' : state.order,
      nodes: state.maxNodes === MAX_NODES ? '' : state.maxNodes || 'all',
      fn: state.sandwich,
      ann: state.annotate, aview: state.annotate && state.annView !== 'source' ? state.annView : '',
      tq: state.table.term, sort: state.table.key, asc: state.table.desc ? '' : '1',
      page: state.table.page ? state.table.page + 1 : '',
    });
  }

  // The filters of the flame graph, the table and the sandwich, as query
  // parameters of the API.
  function filterParams(metric) {
    const p = new URLSearchParams({ metric, priv: state.priv });
    if (state.hart !== 'all') p.set('hart', state.hart);
    if (state.pid !== null) p.set('pid', state.pid);
    if (state.from !== '') p.set('from', state.from);
    if (state.to !== '') p.set('to', state.to);
    return p;
  }

  let keys = null;
  function makeChart(container, details) {
    tip = screenTooltip(tooltipHTML);
    keys = keyboardFrames(container, {
      label: (d) => `${d.data.name}: ${num(d.data.value)} ${state.metric} (${percent(d.data.value, rootValue)})`,
      inverted: () => state.layout === 'icicle',
      zoom: (d) => chart.zoomTo(d),
      reset: () => chart.resetZoom(),
      onFocus: (d, g) => {
        tip.show({ rect: g.getBoundingClientRect() }, d);
        pickFrame(d);
      },
      onBlur: () => tip.hide(),
      keys: {
        a: (d) => d.parent && openAnnotate(d.data.name, 'source'),
        s: (d) => d.parent && openSandwich(d.data.name),
      },
    });
    return flamegraph.default()
      .width(container.clientWidth || 900)
      .cellHeight(18)
      .transitionDuration(250)
      .minFrameSize(1)
      .sort(ORDERS[state.order])
      .inverted(state.layout === 'icicle')
      .onClick((d) => {
        pickFrame(d);
        state.zoom = d.parent ? pathKey(d).split('\u001f').join(';') : '';
        saveState();
        keys.refresh();
      })
      .title('')
      .tooltip(tip)
      .setDetailsElement(details)
      .setColorMapper((d) => (d.highlight ? HIGHLIGHT : frameColor(d.data.libtype, d.data.name)))
      .setSearchMatch((d, term) => !!term && d.data.name.toLowerCase().includes(term.toLowerCase()))
      .setSearchHandler((results, sum, total) => {
        details.textContent = `${results.length} frames match "${state.term}": ` +
          `${num(sum)} of ${num(total)} ${state.metric} (${percent(sum, total)})`;
      })
      .setLabelHandler((d) => `${d.data.name}: ${num(d.data.value)} ${state.metric} ` +
        `(${percent(d.data.value, rootValue)})`);
  }

  async function fetchGraphs() {
    const q = (metric) => {
      const p = filterParams(metric);
      p.set('max_nodes', state.maxNodes);
      return `/api/v1/jobs/${id}/flamegraph?${p}`;
    };
    // a window's graphs are built from the stack events: seconds on a long run
    const shown = await getView(q(state.metric));
    const insns = state.metric === 'instructions' ? shown : await getView(q('instructions'));
    return [shown, insns];
  }

  async function drawFlame(container, details, flameNote) {
    let shown, insns;
    const seq = ++flameSeq; // a process clicked while a graph loads wins
    try {
      [shown, insns] = await fetchGraphs();
    } catch (e) {
      if (seq === flameSeq) flameNote.replaceChildren(message(e.message));
      return;
    }
    if (gone || seq !== flameSeq) return;
    flameNote.replaceChildren();
    stats = indexPaths(insns);
    rootValue = shown.value;
    if (shown.merged) {
      const all = el('button', { type: 'button', id: 'show-all-nodes', onclick: () => {
        state.maxNodes = 0;
        saveState();
        drawFlame(container, details, flameNote);
      } }, `Show all ${num(shown.nodes + shown.merged)} nodes`);
      flameNote.append(el('p', { class: 'msg info', id: 'hidden-nodes', role: 'status' },
        `${num(shown.nodes)} of ${num(shown.nodes + shown.merged)} contexts drawn: the ${num(shown.merged)} ` +
        'smallest are merged into their callers (their weight shows as the callers\' self). ', all));
    }
    if (!chart) {
      chart = makeChart(container, details);
      d3.select(container).datum(shown).call(chart);
    } else {
      chart.update(shown);
    }
    if (state.term) chart.search(state.term);
    restoreZoom();
    keys.refresh();
    container.dataset.nodes = String(shown.nodes);
  }

  // The zoom of the URL (names from the root, ";"-separated), when the
  // graph has that context.
  function restoreZoom() {
    if (!state.zoom) return;
    let n = d3.select(document.getElementById('flame')).datum();
    for (const name of state.zoom.split(';')) {
      n = n && (n.children || []).find((c) => c.data.name === name);
    }
    if (n) chart.zoomTo(n);
  }

  let tableSeq = 0;
  async function drawTable(box) {
    let top;
    const seq = ++tableSeq;
    try {
      const p = filterParams(state.metric);
      p.set('limit', 10000000);
      top = await getView(`/api/v1/jobs/${id}/top?${p}`);
    } catch (e) {
      if (seq === tableSeq) box.replaceChildren(message(e.message));
      return;
    }
    if (gone || seq !== tableSeq) return;
    const cycles = !!(job.summary && job.summary.cycles);
    // shares of the metric shown (instructions when it is calls: a call
    // count has no total)
    const pm = state.metric === 'cycles' ? 'cycles' : 'instructions';
    const base = top.functions.reduce((a, f) => a + f['self_' + pm], 0);
    const rows = top.functions.map((f) => ({
      ...f, ipc: f.total_cycles ? f.total_instructions / f.total_cycles : 0,
      self_pct: base ? (100 * f['self_' + pm]) / base : 0, total_pct: base ? (100 * f['total_' + pm]) / base : 0,
    }));
    const pct = (v) => v.toFixed(2) + '%';
    const cols = [
      { key: 'name', label: 'function', render: (f) => el('button', {
        type: 'button', class: 'link', title: 'search the flame graph for it',
        onclick: () => setSearch(f.name),
      }, f.name) },
      { key: 'kind', label: 'kind' },
      { key: 'calls', label: 'calls', num: true },
      { key: 'self_instructions', label: 'self instr.', num: true },
      { key: 'total_instructions', label: 'total instr.', num: true },
      { key: 'self_pct', label: `self % (${pm === 'cycles' ? 'cycles' : 'instr.'})`, num: true, render: (f) => pct(f.self_pct) },
      { key: 'total_pct', label: `total % (${pm === 'cycles' ? 'cycles' : 'instr.'})`, num: true, render: (f) => pct(f.total_pct) },
      cycles && { key: 'self_cycles', label: 'self cycles', num: true },
      cycles && { key: 'total_cycles', label: 'total cycles', num: true },
      cycles && { key: 'ipc', label: 'IPC', num: true, render: (f) => ipc(f.total_instructions, f.total_cycles) },
      { key: 'file', label: 'source', render: (f) => (f.file ? `${f.file.split('/').pop()}${f.line ? ':' + f.line : ''}` : '') },
      { key: 'sandwich', label: 'callers / callees', render: (f) => el('button', {
        type: 'button', class: 'link sandwich-open', 'data-fn': f.name,
        title: `who calls ${f.name}, and what it calls`,
        onclick: () => openSandwich(f.name),
      }, 'sandwich') },
      { key: 'annotate', label: 'per line', render: (f) => el('button', {
        type: 'button', class: 'link annotate-open', 'data-fn': f.name,
        title: `exact counts per source line and per instruction of ${f.name}`,
        onclick: () => openAnnotate(f.name, 'source'),
      }, 'annotate') },
    ].filter(Boolean);
    if (!cols.some((c) => c.key === state.table.key)) state.table.key = state.metric === 'calls' ? 'calls' : 'self_' + state.metric;
    const caption = `Functions by ${state.metric}${filterText()} (${num(top.count)} in all; ` +
      'recursion counted once in totals)';
    box.replaceChildren(el('h2', {}, 'Functions'),
      ...pagedTable(cols, rows, state.table, caption, saveState));
  }

  // The filters in words, for captions.
  function filterText() {
    const parts = [];
    if (state.pid !== null) parts.push(state.procLabel || `pid ${state.pid}`);
    if (state.hart !== 'all') parts.push(`hart ${state.hart}`);
    if (state.priv !== 'all') parts.push(`${state.priv} frames`);
    if (state.from !== '' || state.to !== '') parts.push(`window [${num(state.from || 0)}, ${state.to === '' ? 'end' : num(state.to)})`);
    return parts.length ? ', ' + parts.join(', ') : '';
  }

  let annotateBox = null;
  function openAnnotate(fn, view) {
    state.annotate = fn;
    state.annView = view;
    saveState();
    showAnnotate();
  }
  function showAnnotate() {
    if (!annotateBox) return;
    annotateBox.hidden = !state.annotate;
    if (!state.annotate) return;
    drawAnnotate(annotateBox, id, state.annotate, state.annView, (v) => openAnnotate(state.annotate, v), () => {
      state.annotate = '';
      saveState();
      showAnnotate();
    });
    annotateBox.scrollIntoView({ block: 'nearest' });
  }

  // The frame last clicked or focused in the flame graph, with what can be
  // opened for its function: the next Tab stop after the graph.
  let frameBar = null;
  function pickFrame(d) {
    if (!frameBar) return;
    const name = d.data.name;
    const fn = !!d.parent; // the root is no function
    frameBar.replaceChildren(el('span', { class: 'muted' }, 'Frame: '), el('strong', { id: 'frame-name' }, name),
      el('button', { type: 'button', id: 'frame-annotate', disabled: !fn,
        title: `exact counts per source line and per instruction of ${name} (key A on a frame)`,
        onclick: () => openAnnotate(name, 'source') }, 'annotate'),
      el('button', { type: 'button', id: 'frame-sandwich', disabled: !fn,
        title: `who calls ${name}, and what it calls (key S on a frame)`,
        onclick: () => openSandwich(name) }, 'callers / callees'));
  }

  let sandwichBox = null;
  function openSandwich(fn) {
    state.sandwich = fn;
    saveState();
    showSandwich();
  }
  function showSandwich() {
    if (!sandwichBox) return;
    sandwichBox.hidden = !state.sandwich;
    if (!state.sandwich) return;
    const p = filterParams(state.metric);
    p.set('max_nodes', 0); // exact: every context
    drawSandwich(sandwichBox, `/api/v1/jobs/${id}/flamegraph?${p}`, state.sandwich, state.metric, () => {
      state.sandwich = '';
      saveState();
      showSandwich();
    });
    sandwichBox.scrollIntoView({ block: 'nearest' });
  }

  let setSearch = () => {};
  let relabelProcess = () => {};
  let exports = null; // the Exports card, rebuilt when its options change

  // Export options kept across redraws (clock rate, Perfetto's minimum).
  const exportOpts = { clock_hz: '', min_duration: '' };

  // An export is made when asked (a replay of the stack events: seconds
  // on long runs): fetched here with a spinner, the elapsed time, the
  // server's progress while it builds and the bytes received, then saved
  // under the server's file name.
  const exportStatus = el('p', { id: 'export-status', 'aria-live': 'polite' });
  async function saveExport(ev, f, label) {
    if (ev.ctrlKey || ev.metaKey || ev.shiftKey || !window.ReadableStream) return;
    ev.preventDefault();
    const wait = spinner(`Preparing ${label}…`);
    exportStatus.replaceChildren(wait.el);
    try {
      const resp = await fetchBuilt(ev.currentTarget.href, wait.progress);
      if (!resp.ok) throw new Error(`${label}: HTTP ${resp.status}: ${(await resp.text()).slice(0, 200)}`);
      const reader = resp.body.getReader();
      const parts = [];
      let n = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parts.push(value);
        n += value.length;
        wait.el.lastChild.textContent = `Receiving ${label}: ${bytes(n)}`;
      }
      const name = (resp.headers.get('Content-Disposition') || '').match(/filename="?([^";]+)"?/);
      const a = el('a', { href: URL.createObjectURL(new Blob(parts)), download: name ? name[1] : `job-${id}-${f}` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(a.href), 60000);
      exportStatus.replaceChildren(message(`${a.download}: ${bytes(n)} in ${wait.elapsed().toFixed(1)} s`, 'ok'));
      exportStatus.dataset.bytes = String(n);
    } catch (e) {
      exportStatus.replaceChildren(message(e.message));
    } finally {
      wait.stop();
    }
  }

  function exportsBox() {
    const m = { metric: state.metric };
    const timeOpts = (f) => {
      const o = {};
      const perfetto = f === 'perfetto' || f === 'perfetto-pb';
      if ((f === 'speedscope' || perfetto) && exportOpts.clock_hz) o.clock_hz = exportOpts.clock_hz;
      if (perfetto && exportOpts.min_duration) o.min_duration = exportOpts.min_duration;
      return o;
    };
    const numberInput = (id, key, label, title) => [
      el('label', { for: id }, label),
      el('input', {
        id, type: 'number', min: 0, step: 1, value: exportOpts[key], title, class: 'short',
        onchange: (e) => {
          exportOpts[key] = e.target.value && Number(e.target.value) > 0 ? String(Math.floor(Number(e.target.value))) : '';
          exports.replaceWith(exports = exportsBox());
        },
      })];
    const files = [
      ['speedscope', 'speedscope (.json)', 'exact open/close of every frame, per hart'],
      ['perfetto-pb', 'Perfetto (.pftrace.gz)', 'for ui.perfetto.dev: processes and threads, compact for long traces'],
      ['perfetto', 'Perfetto / Chrome trace (.json)', 'for chrome://tracing too; large for long traces'],
      ['pprof', 'pprof (.pb.gz)', 'go tool pprof'],
      ['folded', 'folded stacks (.txt)', 'flamegraph.pl, speedscope'],
    ];
    return el('section', { id: 'exports', class: 'card' }, el('h2', {}, 'Exports'),
      el('p', {},
        el('a', { class: 'button primary', id: 'open-speedscope', target: '_blank', rel: 'noopener',
          href: speedscopeURL(id, trace ? trace.name : `job ${id}`, timeOpts('speedscope')) }, 'Open in speedscope'),
        ' ', el('span', { class: 'muted' }, 'the speedscope app bundled with this server, offline'),
        ' ', el('a', { class: 'button', id: 'open-timeline', href: `#/jobs/${id}/timeline` }, 'Timeline'),
        ' ', el('a', { class: 'button', id: 'open-compare', href: `#/compare?base=${id}` }, 'Compare with another job')),
      el('div', { class: 'controls' },
        numberInput('clock-hz', 'clock_hz', 'Clock (Hz)', 'cycles per second: speedscope and Perfetto times in ns (traces with cycles)'),
        numberInput('min-duration', 'min_duration', 'Perfetto: leave out frames under (ns)', 'keeps exports of long traces small')),
      el('ul', { class: 'exports' }, files.map(([f, label, why]) => el('li', {},
        el('a', { class: 'button', 'data-export': f, href: exportURL(id, f, { ...m, ...timeOpts(f), download: 1 }),
          onclick: (ev) => saveExport(ev, f, label) }, label),
        ' ', el('span', { class: 'muted' }, why)))),
      exportStatus,
      speedscopeNote());
  }

  // The server gives speedscope the sampled form (weights per stack, no
  // time) above SPEEDSCOPE_MAX_EVENTS stack events, and says so in the
  // file's name and an X-Oobprof-Fallback header. An event takes 6 bytes
  // or more in the job's log: a smaller log cannot be over the bound.
  const SPEEDSCOPE_MAX_EVENTS = 5000000;
  function speedscopeNote() {
    const bytes = job.stack_events_bytes;
    if (!bytes || bytes / 6 <= SPEEDSCOPE_MAX_EVENTS) return null;
    return el('p', { class: 'muted', id: 'speedscope-note' },
      `Note: this job has up to ${num(Math.floor(bytes / 6))} stack events; above ` +
      `${num(SPEEDSCOPE_MAX_EVENTS)} speedscope gets the sampled form (weights per stack, no time), ` +
      'and its name says "sampled". Perfetto (.pftrace.gz) keeps every event.');
  }

  // The Processes card: hidden until the job says it has processes.
  function drawProcesses(box, onPick) {
    const byCycles = state.metric === 'cycles' && !!(job.summary && job.summary.cycles);
    box.hidden = !processes.length;
    if (!processes.length) return;
    box.replaceChildren(el('h2', {}, 'Processes'),
      el('p', { class: 'muted' }, `CPU share by ${byCycles ? 'cycles' : 'instructions'} (user + kernel) ` +
        'of all processes. Click a process to show only its flame graph.'),
      processTree(processes, byCycles, state.pid, onPick));
  }

  // The chip that says which process the flame graph shows, and clears it.
  function drawChip(chip, onClear) {
    chip.hidden = state.pid === null;
    chip.replaceChildren();
    if (state.pid === null) return;
    chip.append(el('span', { class: 'chip', id: 'proc-chip' }, `process: ${state.procLabel} `,
      el('button', { type: 'button', class: 'chip-clear', 'aria-label': 'show all processes', title: 'show all processes',
        onclick: onClear }, '×')));
  }

  function renderResult() {
    const s = job.summary || {};
    const harts = s.harts || 1;
    const metrics = [['instructions', 'instructions'], ['calls', 'calls']];
    if (s.cycles) metrics.splice(1, 0, ['cycles', 'cycles']);
    const hartOpts = [['all', harts > 1 ? `all ${harts} harts` : 'hart 0']];
    for (let h = 0; harts > 1 && h < harts; h++) hartOpts.push([String(h), `hart ${h}`]);
    const [mLabel, mSel] = select('metric', 'Metric', metrics, state.metric);
    const [pLabel, pSel] = select('priv', 'Frames', [['all', 'user and kernel'], ['user', 'user only'],
      ['kernel', 'kernel only']], state.priv);
    const [hLabel, hSel] = select('hart', 'Hart', hartOpts, state.hart);
    if (harts <= 1) hSel.disabled = true;
    const search = el('input', { id: 'search', type: 'search', placeholder: 'function name',
      'aria-label': 'search functions (substring)', value: state.term });
    const [lLabel, lSel] = select('layout', 'Layout', [['flame', 'flame (root at the bottom)'],
      ['icicle', 'icicle (root on top)']], state.layout);
    const [oLabel, oSel] = select('order', 'Order', [['weight', 'heaviest first'], ['name', 'by name']], state.order);
    const reset = el('button', { type: 'button', id: 'reset-zoom' }, 'Reset zoom');
    const clear = el('button', { type: 'button', id: 'clear-search' }, 'Clear search');
    const details = el('div', { id: 'details', class: 'details', 'aria-live': 'polite' }, '\u00a0');
    const flameNote = el('div', { id: 'flame-note' });
    const container = el('div', { id: 'flame', class: 'flame' });
    const tableBox = el('section', { id: 'top', class: 'card' });
    const procBox = el('section', { id: 'processes', class: 'card', hidden: true });
    const chip = el('div', { id: 'proc-filter', hidden: true, 'aria-live': 'polite' });
    const winChip = el('div', { id: 'window-filter', hidden: true, 'aria-live': 'polite' });
    sandwichBox = el('section', { id: 'sandwich', class: 'card', hidden: true });
    annotateBox = el('section', { id: 'annotate', class: 'card', hidden: true });
    frameBar = el('div', { id: 'frame-actions', class: 'controls', 'aria-live': 'polite' },
      el('span', { class: 'muted' }, 'Click or focus a frame: its function\'s annotate and callers / callees open from here.'));

    setSearch = (term) => {
      state.term = term;
      search.value = term;
      saveState();
      if (!chart) return;
      if (term) chart.search(term);
      else chart.clear();
    };
    // Picking a process (or clearing the chip) refetches the flame graph;
    // the tree redraws to mark the pressed button.
    // A filter changed: the flame graph, the table and the sandwich follow;
    // the zoom path may not exist in the new graph (kept if it does).
    const refilter = () => {
      state.table.page = 0;
      saveState();
      drawFlame(container, details, flameNote);
      drawTable(tableBox);
      showSandwich();
    };
    const setProcess = (p) => {
      state.pid = p ? p.pid : null;
      state.procLabel = p ? (p.pid >= 0 ? processLabel(p) : 'tasks whose pid is unknown') : '';
      drawChip(chip, () => setProcess(null));
      drawProcesses(procBox, setProcess);
      refilter();
    };
    relabelProcess = () => drawChip(chip, () => setProcess(null));
    const clearWindow = () => {
      state.from = '';
      state.to = '';
      drawWindowChip(winChip, clearWindow);
      refilter();
    };
    drawWindowChip(winChip, clearWindow);
    const redraw = () => {
      refilter();
      drawProcesses(procBox, setProcess);
      exports.replaceWith(exports = exportsBox());
    };
    mSel.addEventListener('change', () => { state.metric = mSel.value; redraw(); });
    pSel.addEventListener('change', () => { state.priv = pSel.value; refilter(); });
    hSel.addEventListener('change', () => { state.hart = hSel.value; refilter(); });
    lSel.addEventListener('change', () => {
      state.layout = lSel.value;
      saveState();
      if (chart) chart.inverted(state.layout === 'icicle').update();
      if (keys) keys.refresh();
    });
    oSel.addEventListener('change', () => {
      state.order = oSel.value;
      saveState();
      if (chart) chart.sort(ORDERS[state.order]).update();
      if (keys) keys.refresh();
    });
    search.addEventListener('input', () => setSearch(search.value.trim()));
    reset.addEventListener('click', () => chart && chart.resetZoom());
    clear.addEventListener('click', () => setSearch(''));

    exports = exportsBox();
    info.replaceChildren(
      el('section', { class: 'card' }, el('h2', {}, 'Summary'), summary(job, trace)),
      procBox,
      el('section', { class: 'card flame-card' },
        el('h2', {}, 'Flame graph'),
        el('div', { class: 'controls' }, mLabel, mSel, pLabel, pSel, hLabel, hSel, search, clear, reset),
        el('div', { class: 'controls' }, lLabel, lSel, oLabel, oSel),
        chip, winChip, legend(), flameNote, details, container, frameBar,
        el('p', { class: 'muted' }, 'Click a frame to zoom into it; hover for exact counts. Keyboard: Tab to ' +
          'the graph, arrows move to the caller, the heaviest callee or a sibling, Enter zooms, Escape resets, ' +
          'A annotates the frame\'s function, S shows its callers and callees.')),
      sandwichBox, annotateBox, tableBox, exports);
    drawFlame(container, details, flameNote);
    drawTable(tableBox);
    showSandwich();
    showAnnotate();
    loadProcesses(procBox, setProcess);
  }

  // The chip that says which window of the run is shown, and clears it.
  function drawWindowChip(chip, onClear) {
    const on = state.from !== '' || state.to !== '';
    chip.hidden = !on;
    chip.replaceChildren();
    if (!on) return;
    chip.append(el('span', { class: 'chip', id: 'win-chip' },
      `window: [${num(state.from || 0)}, ${state.to === '' ? 'end' : num(state.to)}) ${axisName()} `,
      el('button', { type: 'button', class: 'chip-clear', 'aria-label': 'show the whole run', title: 'show the whole run',
        onclick: onClear }, '×')));
  }
  function axisName() {
    return job && job.summary && job.summary.cycles ? 'cycles' : 'instructions';
  }

  // A job without processes (or an older server) keeps the card hidden.
  async function loadProcesses(box, onPick) {
    try {
      const r = await getJSON(`/api/v1/jobs/${id}/processes`);
      processes = Array.isArray(r.processes) ? r.processes : [];
    } catch (_) {
      processes = [];
    }
    // a pid from the URL gets its name once the processes are known
    const p = state.pid !== null && processes.find((x) => x.pid === state.pid);
    if (p && !gone) {
      state.procLabel = p.pid >= 0 ? processLabel(p) : 'tasks whose pid is unknown';
      relabelProcess();
    }
    if (!gone) drawProcesses(box, onPick);
  }

  let resizeTimer = null;
  function onResize() {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      const c = document.getElementById('flame');
      if (chart && c) {
        chart.width(c.clientWidth);
        chart.update();
      }
    }, 200);
  }
  window.addEventListener('resize', onResize);

  async function load() {
    try {
      job = await getJSON(`/api/v1/jobs/${id}`);
      if (!trace) trace = await getJSON(`/api/v1/traces/${job.trace}`).catch(() => null);
    } catch (e) {
      note.replaceChildren(message(e.message));
      return;
    }
    if (gone) return;
    head.textContent = `Job ${id}` + (trace ? `: ${trace.name}` : '');
    document.title = `oobprof: job ${id}`;
    if (job.state === 'queued' || job.state === 'running') {
      const pr = progressOf(job, jobTotal(job, (t) => (trace && trace.id === t ? trace : null)));
      note.replaceChildren(el('p', { id: 'job-progress', 'data-done': pr.done, 'data-total': pr.total ?? '' },
        `${job.state}: `, progressBar(pr.fraction, 'job progress'), ' ', progressLabel(pr)));
      timer = setTimeout(load, 700);
      return;
    }
    if (job.state !== 'done') {
      note.replaceChildren(message(`job ${job.state}` + (job.error ? `: ${job.error.message}` : '')));
      return;
    }
    note.replaceChildren();
    renderResult();
  }
  load();

  return () => {
    gone = true;
    clearTimeout(timer);
    window.removeEventListener('resize', onResize);
    if (tip) tip.hide();
    if (chart) chart.destroy();
  };
}
