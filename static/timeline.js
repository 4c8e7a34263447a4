// timeline.js: what ran when (GET /api/v1/jobs/<id>/timeline). Swimlanes
// per hart (process and user/kernel), and for jobs with a Go trace per Go P,
// M and goroutine, plus GC, all on the instruction trace's time axis.
// Scroll to zoom, drag to pan: the view asks the server again for its window
// with one pixel as the merge bound, so a lane never carries more intervals
// than it has pixels. Clicking a hart interval shows the flame graph of
// exactly that time range on that hart and the stacks that ran in it, each
// with its weight. Shift-drag (or drag in "select"
// mode) selects a window: its flame graph here, and a link to the job page
// with its flame graph and table. "Critical path" asks for a task's path
// (GET /api/v1/jobs/<id>/path, over the selection if any): a lane of its
// steps above the harts, and the hart intervals it ran in outlined. Under
// the lanes, the stack over time per hart or per process (slices.js).
import { getView } from './api.js';
import { buildProgress, el, message, num, percent, spinner } from './util.js';
import { frameColor } from './colors.js';
import { sliceChart } from './slices.js';

const LANE = 18;
const LABEL = 150;
const GO_COLORS = {
  running: 'hsl(140, 55%, 45%)', runnable: 'hsl(48, 90%, 62%)', waiting: 'hsl(0, 0%, 80%)',
  syscall: 'hsl(280, 50%, 60%)', gc: 'hsl(5, 75%, 55%)', stw: 'hsl(350, 80%, 35%)',
};

function timelineURL(id, from, to, minDuration) {
  const q = new URLSearchParams({ min_duration: String(Math.max(0, Math.floor(minDuration))) });
  if (from !== null) q.set('from', String(Math.floor(from)));
  if (to !== null) q.set('to', String(Math.ceil(to)));
  return `/api/v1/jobs/${id}/timeline?${q}`;
}

// Lanes from the document: [{label, kind, hart, intervals}], intervals as
// {s, e, state, other, n, busy}; busy (the time the state shown held) only
// in a bucketed answer (detail "buckets": a long job seen whole).
function lanesOf(doc, path) {
  const iv = (v) => v.map(([s, e, state, other, n, busy]) => ({ s, e, state, other, n, busy }));
  const lanes = path ? [pathLane(path)] : [];
  lanes.push(...(doc.harts || []).map((h) => ({ label: `hart ${h.hart}`, kind: 'hart', hart: h.hart, intervals: iv(h.intervals) })));
  const go = doc.go || {};
  if (go.gc && go.gc.length) lanes.push({ label: 'GC', kind: 'go', intervals: iv(go.gc) });
  for (const p of go.procs || []) lanes.push({ label: `P${p.id}`, kind: 'go', intervals: iv(p.intervals) });
  for (const m of go.threads || []) lanes.push({ label: `M${m.id}`, kind: 'go', intervals: iv(m.intervals) });
  for (const g of go.goroutines || []) {
    lanes.push({ label: `G${g.id} ${g.name || ''}`, kind: 'go', intervals: iv(g.intervals) });
  }
  return lanes;
}

const PATH_COLORS = {
  runnable: 'hsl(48, 90%, 62%)', blocked: 'hsl(0, 0%, 75%)', interrupt: 'hsl(5, 75%, 55%)',
};

// The critical path as a lane: its steps, each with the task it is about.
function pathLane(path) {
  const who = (st) => (st.pid === null ? st.task : `${st.comm} ${st.pid}`);
  return { label: `path: ${who(path)}`, kind: 'path',
    intervals: path.steps.map((st) => ({ s: st.from, e: Math.max(st.to, st.from + 1), state: st.kind,
      other: null, n: 1, step: st, who: who(st) })) };
}

// Whether a hart interval overlaps a running step of the path on that hart.
function onPath(path, lane, d) {
  return path && lane.kind === 'hart' && path.steps.some((st) => st.kind === 'running' &&
    st.hart === lane.hart && st.from < d.e && d.s < st.to);
}

function colorOf(lane, d, doc) {
  if (lane.kind === 'path') {
    return d.state === 'running' ? frameColor('user', d.who) : PATH_COLORS[d.state] || 'hsl(0,0%,60%)';
  }
  if (lane.kind !== 'hart') return GO_COLORS[d.state] || 'hsl(0,0%,60%)';
  const p = d.other === null ? null : doc.processes[d.other];
  const name = p ? `${p.comm} ${p.pid}` : '';
  return frameColor(d.state === 'kernel' ? 'kernel' : 'user', name);
}

function describe(lane, d, doc) {
  const span = `[${num(d.s)}, ${num(d.e)}) ${doc.axis}: ${num(d.e - d.s)}`;
  const merged = d.busy !== undefined
    ? ` (${num(d.n)} intervals; the one shown ran ${(100 * d.busy / Math.max(1, d.e - d.s)).toFixed(1)} % of it)`
    : d.n > 1 ? ` (${d.n} intervals merged; the longest shown)` : '';
  if (lane.kind === 'path') {
    const st = d.step;
    const wake = st.wakes ? `, then woke ${st.wakes.stack.slice(-3).join(' > ')}` : '';
    const top = st.stacks && st.stacks.length ? `; most in ${st.stacks[0].stack.slice(-1)[0]}` : '';
    return `critical path: ${d.who} ${st.kind} on hart ${st.hart} [${num(st.from)}, ${num(st.to)}) ${doc.axis}: ${num(st.to - st.from)}${top}${wake}`;
  }
  if (lane.kind === 'hart') {
    const p = d.other === null ? null : doc.processes[d.other];
    const who = p ? `${p.comm} (pid ${p.pid})` : 'no process';
    return `${lane.label}: ${who}, ${d.state} ${span}${merged}`;
  }
  const where = d.other === null ? '' : ` on ${lane.label.startsWith('P') ? 'M' : 'P'}${d.other}`;
  return `${lane.label}: ${d.state}${where} ${span}${merged}`;
}

// Tick labels with k/M/G and as many digits as the tick step needs, so
// that neighbouring ticks never read the same (no "0M", "1M", "1M").
export function axisFormat(scale, count) {
  const ticks = scale.ticks(count);
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
  const big = Math.max(...ticks.map(Math.abs), 1);
  const digits = Math.max(1, Math.ceil(Math.log10(big / step) + 1e-9) + 1);
  return d3.format(`.${Math.min(15, digits)}~s`);
}

function axisOf(scale) {
  return d3.axisTop(scale).ticks(8).tickFormat(axisFormat(scale, 8));
}

// The stacks of a flame graph JSON (the API's: value = total, self = own
// weight): every context that ran itself, root first, with its self weight,
// heaviest first. With every node asked for (max_nodes=0) they are exactly
// the stacks that ran in the window, as `oobprof fold --window` lists them.
export function stacksOf(root) {
  const out = [];
  (function walk(n, path) {
    const here = n === root ? path : [...path, n.name];
    if (n !== root && n.self) out.push({ path: here, weight: n.self });
    for (const c of n.children || []) walk(c, here);
  })(root, []);
  return out.sort((a, b) => b.weight - a.weight || a.path.join(';').localeCompare(b.path.join(';')));
}

const MAX_STACKS = 200;
// A list of the stacks that ran in an interval: the leaf in bold, its
// callers before it, the weight and its share of the interval.
function stackList(data) {
  const stacks = stacksOf(data);
  const shown = stacks.slice(0, MAX_STACKS);
  return el('section', { id: 'timeline-stacks', 'data-count': stacks.length },
    el('h3', {}, `Stacks in it: ${num(stacks.length)}` + (stacks.length > MAX_STACKS ? `, the ${MAX_STACKS} heaviest shown` : '')),
    el('ol', { class: 'stack-list' }, shown.map((st) => el('li', { 'data-stack': st.path.join(';'), 'data-weight': st.weight },
      el('span', { class: 'stack-weight' }, `${num(st.weight)} ${data.metric} (${percent(st.weight, data.value)})`), ' ',
      el('span', { class: 'stack-path mono' }, st.path.slice(0, -1).join(' → '), st.path.length > 1 ? ' → ' : '',
        el('strong', {}, st.path[st.path.length - 1]))))));
}

function drawFlame(box, url, title, withStacks = false) {
  const wait = spinner('Building…');
  box.replaceChildren(el('h3', {}, title), wait.el, el('div', { id: 'timeline-flame' }));
  getView(url, wait.progress).then((data) => {
    wait.stop();
    wait.el.remove();
    if (withStacks) box.append(stackList(data));
    const width = Math.max(400, box.clientWidth - 10);
    const chart = flamegraph.default().width(width).cellHeight(18).minFrameSize(1)
      .setColorMapper((d) => frameColor(d.data.libtype, d.data.name))
      .tooltip(flamegraph.tooltip.defaultFlamegraphTooltip().html((d) =>
        `${d.data.name}: ${num(d.data.value)} ${data.metric}, ${num(d.data.calls)} calls`));
    d3.select('#timeline-flame').datum(data).call(chart);
    box.dataset.value = String(data.value);
  }).catch((e) => {
    wait.stop();
    wait.el.replaceWith(message(e.message));
  });
}

// What the colours mean: one hue per process (blues in the kernel, oranges
// in user space, as in the flame graph) and the Go states.
const MAX_LEGEND = 40;
function legendOf(doc) {
  const item = (color, label, kind) => el('li', { 'data-kind': kind, 'data-color': color },
    el('span', { class: 'swatch', style: `background:${color}` }), label);
  const procs = doc.processes || [];
  const items = procs.slice(0, MAX_LEGEND).map((p) => {
    const name = `${p.comm} ${p.pid}`;
    return el('li', { 'data-kind': 'process', 'data-pid': p.pid, 'data-color': frameColor('user', name),
      'data-kernel-color': frameColor('kernel', name) },
    el('span', { class: 'swatch', style: `background:${frameColor('user', name)}`, title: 'user' }),
    el('span', { class: 'swatch', style: `background:${frameColor('kernel', name)}`, title: 'kernel' }),
    `${p.comm} (pid ${p.pid})`);
  });
  if (procs.length > MAX_LEGEND) items.push(el('li', { class: 'muted' }, `and ${num(procs.length - MAX_LEGEND)} more processes`));
  if (!procs.length) {
    items.push(item(frameColor('user', ''), 'user', 'priv'), item(frameColor('kernel', ''), 'kernel', 'priv'));
  }
  const go = doc.go ? Object.entries(GO_COLORS).map(([state, c]) => item(c, `Go: ${state}`, 'go')) : [];
  return el('div', { id: 'timeline-legend' },
    el('ul', { class: 'legend', 'aria-label': 'process colours (left swatch user, right kernel)' }, items),
    go.length ? el('ul', { class: 'legend', 'aria-label': 'Go states' }, go) : null);
}

export function renderTimeline(main, id) {
  const status = el('p', { class: 'muted', id: 'timeline-status' });
  // the first document replays the job's stack events: seconds on a long run
  const wait = spinner('Loading the timeline…');
  status.append(wait.el);
  const chartBox = el('div', { id: 'timeline', class: 'timeline' });
  // the axis above the lanes, sticky: in view while 160 goroutine lanes scroll
  const axisBox = el('div', { id: 'timeline-axis', class: 'timeline-axis' });
  const windowLink = el('a', { id: 'timeline-window', class: 'button', href: `#/jobs/${id}` },
    'Flame graph and table of the visible window');
  const detail = el('p', { id: 'timeline-detail', class: 'mono' }, 'Hover an interval for details; click a hart interval for its flame graph.');
  const flameBox = el('div', { id: 'timeline-flame-box' });
  const selectMode = el('input', { type: 'checkbox', id: 'timeline-select-mode' });
  const selection = el('p', { id: 'timeline-selection', 'aria-live': 'polite', class: 'muted' },
    'Shift-drag (or tick "select" and drag) over the lanes to select a window.');
  const legendBox = el('div', { id: 'timeline-legend-box' });
  const pathTask = el('input', { id: 'timeline-path-task', size: 16, placeholder: 'pid or task name',
    'aria-label': 'task of the critical path' });
  const pathButton = el('button', { id: 'timeline-path-show', type: 'button' }, 'Critical path');
  const pathStatus = el('span', { id: 'timeline-path-status', class: 'muted', 'aria-live': 'polite' });
  main.append(
    el('p', {}, el('a', { href: `#/jobs/${id}` }, `← job ${id}`)),
    el('h2', {}, `Job ${id}: timeline`), status,
    el('p', { class: 'controls' }, windowLink, ' ', el('label', { for: 'timeline-select-mode' }, selectMode,
      ' select: drag selects a window instead of panning')),
    el('p', { class: 'controls' }, pathTask, ' ', pathButton, ' ', pathStatus),
    selection, legendBox, axisBox, chartBox, detail);
  const slices = sliceChart({ id, label: LABEL, width: () => width(), detail,
    zoomTo: (t) => { if (mainSvg) mainSvg.call(mainZoom.transform, t); } });
  main.append(slices.el, flameBox);
  slices.onChange(() => { if (x) slices.load(x, transform); });
  let mainSvg = null;
  let mainZoom = null;
  let doc = null;
  let path = null;
  let x = null;
  let x0 = null;
  let timer = null;
  let alive = true;
  let transform = d3.zoomIdentity;
  let restoring = false;
  const width = () => Math.max(500, chartBox.clientWidth || 900);

  function render() {
    const lanes = lanesOf(doc, path);
    const w = width();
    const h = lanes.length * LANE + 4;
    chartBox.replaceChildren();
    axisBox.replaceChildren();
    const axisSvg = d3.select(axisBox).append('svg').attr('width', w).attr('height', 34);
    axisSvg.append('text').attr('class', 'axis-unit').attr('x', 4).attr('y', 28).text(doc.axis);
    const axisG = axisSvg.append('g').attr('class', 'axis').attr('transform', 'translate(0,30)');
    const drawAxis = () => {
      axisG.call(axisOf(x));
      const [a, b] = x.domain();
      windowLink.href = `#/jobs/${id}?from=${Math.max(0, Math.floor(a))}&to=${Math.ceil(b)}`;
    };
    drawAxis();
    const svg = d3.select(chartBox).append('svg').attr('width', w).attr('height', h)
      .attr('role', 'img').attr('aria-label', `timeline of job ${id}`);
    lanes.forEach((lane, i) => {
      const g = svg.append('g').attr('class', `lane lane-${lane.kind}`).attr('transform', `translate(0,${i * LANE})`);
      g.append('text').attr('x', 4).attr('y', LANE - 5).attr('class', 'lane-label').text(lane.label.slice(0, 22));
      g.selectAll('rect').data(lane.intervals).join('rect')
        .attr('class', 'iv')
        .attr('x', (d) => Math.max(LABEL, x(d.s)))
        .attr('width', (d) => Math.max(1, x(d.e) - Math.max(LABEL, x(d.s))))
        .attr('y', 1).attr('height', LANE - 2)
        .attr('fill', (d) => colorOf(lane, d, doc))
        .classed('on-path', (d) => onPath(path, lane, d))
        .attr('stroke', (d) => (onPath(path, lane, d) ? 'black' : null))
        .attr('data-start', (d) => d.s).attr('data-end', (d) => d.e)
        .on('mouseover', (ev, d) => { detail.textContent = describe(lane, d, doc); })
        .on('click', (ev, d) => {
          if (lane.kind !== 'hart' || selecting(ev)) return;
          // every node (max_nodes=0): the stacks listed are all there are
          const url = `/api/v1/jobs/${id}/flamegraph?from=${d.s}&to=${d.e}&hart=${lane.hart}&max_nodes=0`;
          drawFlame(flameBox, url, `Flame graph of [${num(d.s)}, ${num(d.e)}) on ${lane.label}`, true);
        })
        .append('title').text((d) => describe(lane, d, doc));
    });
    brushOn(svg, h);
    const zoom = d3.zoom().scaleExtent([1, 1e7]).translateExtent([[LABEL, 0], [w, h]])
      .extent([[LABEL, 0], [w, h]])
      // shift (or select mode) drags a selection instead: no pan then
      .filter((ev) => (ev.type === 'wheel' || !ev.button) && !(ev.type !== 'wheel' && selecting(ev)))
      .on('zoom', (ev) => {
        transform = ev.transform;
        x = transform.rescaleX(x0);
        svg.selectAll('rect.iv')
          .attr('x', (d) => Math.max(LABEL, x(d.s)))
          .attr('width', (d) => Math.max(1, x(d.e) - Math.max(LABEL, x(d.s))));
        drawAxis();
        slices.rescale(x, transform);
        if (restoring) return;
        clearTimeout(timer);
        timer = setTimeout(() => {
          load(x.domain()[0], x.domain()[1], false);
          slices.load(x, transform);
        }, 300);
      });
    // A new document keeps the zoom the user chose (without asking again).
    restoring = true;
    svg.call(zoom).call(zoom.transform, transform);
    restoring = false;
    mainSvg = svg;
    mainZoom = zoom;
  }

  const selecting = (ev) => ev.shiftKey || selectMode.checked;

  // The selection: a band drawn while dragging; on release, the window in
  // axis units (whole units that cover the pixels), its flame graph below,
  // and the link to the job page's flame graph and table of it.
  function brushOn(svg, h) {
    const band = svg.append('rect').attr('class', 'selection-band').attr('y', 0).attr('height', h)
      .attr('width', 0).attr('visibility', 'hidden');
    let start = null;
    const px = (ev) => Math.min(width(), Math.max(LABEL, d3.pointer(ev, svg.node())[0]));
    svg.on('pointerdown.select', (ev) => {
      if (ev.button || !selecting(ev)) return;
      start = px(ev);
      band.attr('x', start).attr('width', 0).attr('visibility', 'visible');
      svg.node().setPointerCapture(ev.pointerId);
      ev.preventDefault();
    }).on('pointermove.select', (ev) => {
      if (start === null) return;
      const p = px(ev);
      band.attr('x', Math.min(start, p)).attr('width', Math.abs(p - start));
    }).on('pointerup.select', (ev) => {
      if (start === null) return;
      const [a, b] = [start, px(ev)].sort((u, v) => u - v);
      start = null;
      if (b - a < 2) {
        band.attr('visibility', 'hidden');
        return;
      }
      select(Math.max(0, Math.floor(x.invert(a))), Math.ceil(x.invert(b)));
    });
  }

  function select(from, to) {
    const link = el('a', { id: 'timeline-selection-open', class: 'button primary',
      href: `#/jobs/${id}?from=${from}&to=${to}` }, 'Flame graph and table of the selection');
    selection.className = '';
    selection.dataset.from = String(from);
    selection.dataset.to = String(to);
    selection.replaceChildren(`Selected [${num(from)}, ${num(to)}) ${doc.axis}: ${num(to - from)} long. `, link);
    drawFlame(flameBox, `/api/v1/jobs/${id}/flamegraph?from=${from}&to=${to}`,
      `Flame graph of [${num(from)}, ${num(to)}) on all harts`);
  }

  async function load(from, to, first) {
    const px = (to - from) / (width() - LABEL);
    try {
      const d = await getView(timelineURL(id, first ? null : from, first ? null : to, px),
        first ? wait.progress : () => {});
      if (!alive) return;
      doc = d;
      if (first) {
        x0 = d3.scaleLinear().domain([d.start, d.end]).range([LABEL, width()]);
        x = x0.copy();
      }
      const go = d.go ? (d.go.clock.ok ? `, Go clock ${d.go.clock.source} on ${num(d.go.clock.anchors || 0)} anchors`
        : `, Go trace not aligned: ${d.go.clock.error}`) : '';
      status.textContent = `axis: ${d.axis}, ${num(d.end - d.start)} long; ${num(d.merged)} intervals merged at this zoom${go}`;
      if (first) {
        wait.stop();
        legendBox.replaceChildren(legendOf(d));
      }
      render();
    } catch (e) {
      wait.stop();
      status.replaceWith(message(e.message));
    }
  }

  // The critical path of the task named, over the selection if there is one.
  pathButton.addEventListener('click', async () => {
    const q = new URLSearchParams({ task: pathTask.value.trim() });
    if (selection.dataset.from) {
      q.set('from', selection.dataset.from);
      q.set('to', selection.dataset.to);
    }
    try {
      pathStatus.textContent = 'Building the critical path…';
      path = await getView(`/api/v1/jobs/${id}/path?${q}`,
        (p) => { pathStatus.textContent = `Building the critical path… ${buildProgress(p)}`; });
      const run = path.steps.filter((st) => st.kind === 'running').length;
      pathStatus.textContent = `${path.steps.length} steps (${run} running, ${num(path.running)} of ${num(path.span)} ${path.axis} spent running)`;
      if (doc) render();
    } catch (e) {
      path = null;
      pathStatus.textContent = e.message;
      if (doc) render();
    }
  });

  // First the extent (everything merged to one interval per lane), then the
  // whole run at one pixel's resolution.
  getView(timelineURL(id, null, null, 1e18), wait.progress).then((d) => load(d.start, d.end, true))
    .catch((e) => { wait.stop(); status.replaceWith(message(e.message)); });
  return () => { alive = false; clearTimeout(timer); wait.stop(); };
}
