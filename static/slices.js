// slices.js: the stack over time under the timeline's lanes
// (GET /api/v1/jobs/<id>/slices): per hart, or per process on each hart, a
// flame chart of the frames as they open and close, outermost on top, one
// row per depth. The slices are the Perfetto exports' (one rule on the
// server), cut to the visible window; those narrower than a pixel are left
// out by the server and counted, and the view says how many. Zooming asks
// again for the new window (the timeline calls load after its debounce).
// A window too long to replay answers 413: the view says to zoom in.
import { getJSON } from './api.js';
import { el, num } from './util.js';
import { frameColor } from './colors.js';

const ROW = 14;
const HEAD = 16;
const MAX_ROWS = 48;

function trackLabel(doc, t) {
  if (doc.by !== 'process') return `hart ${t.hart}`;
  if (t.process === null) return `no process · hart ${t.hart}`;
  return `${t.comm}${t.pid >= 0 ? ` ${t.pid}` : ''} · hart ${t.hart}`;
}

// Each track's rows: a heading line, then min(depth, MAX_ROWS) rows.
function layout(doc) {
  let y = 0;
  return doc.tracks.map((t) => {
    const rows = Math.min(t.depth, MAX_ROWS);
    const out = { t, y, rows, label: trackLabel(doc, t) };
    y += HEAD + rows * ROW + 4;
    return out;
  });
}

// opts: {id, label (the lanes' label width), width(), detail (the element
// hover text goes to), zoomTo(transform) (a zoom here moves the timeline)}.
export function sliceChart(opts) {
  const mode = el('select', { id: 'timeline-slices-by', 'aria-label': 'stack slices' },
    el('option', { value: 'off' }, 'no stacks'), el('option', { value: 'hart' }, 'stacks per hart'),
    el('option', { value: 'process' }, 'stacks per process'));
  const status = el('span', { id: 'timeline-slices-status', class: 'muted', 'aria-live': 'polite' });
  const box = el('div', { id: 'timeline-slices', class: 'timeline' });
  const root = el('section', { id: 'timeline-slices-box' },
    el('p', { class: 'controls' }, el('label', { for: 'timeline-slices-by' }, 'Stack over time: '), mode, ' ', status),
    box);
  let doc = null;
  let x = null;
  let seq = 0;
  let svg = null;
  const left = (d) => Math.max(opts.label, x(d[0]));
  const wide = (d) => x(d[1]) - left(d);
  const place = (sel) => sel.attr('x', left).attr('width', (d) => Math.max(1, wide(d)));
  // names inside the slices wide enough for a few letters (about 6.5 px each)
  const name = (d) => {
    const n = Math.floor((wide(d) - 4) / 6.5);
    const s = doc.frames[d[3]].name;
    return n < 3 ? '' : s.length <= n ? s : `${s.slice(0, n - 1)}…`;
  };
  const label = (sel) => sel.attr('x', (d) => left(d) + 2).text(name);

  function describe(t, d) {
    const f = doc.frames[d[3]];
    return `${trackLabel(doc, t)}: ${f.name} (${f.kind}, depth ${d[2]}) [${num(d[0])}, ${num(d[1])}) ${doc.axis}: ${num(d[1] - d[0])}`;
  }

  function draw() {
    box.replaceChildren();
    if (!doc) return;
    const rows = layout(doc);
    const h = rows.length ? rows[rows.length - 1].y + HEAD + rows[rows.length - 1].rows * ROW + 4 : 0;
    svg = d3.select(box).append('svg').attr('width', opts.width()).attr('height', h)
      .attr('role', 'img').attr('aria-label', `stack slices per ${doc.by}`);
    for (const r of rows) {
      const g = svg.append('g').attr('class', 'slice-track').attr('transform', `translate(0,${r.y})`)
        .attr('data-hart', r.t.hart).attr('data-process', r.t.process ?? '');
      const more = r.t.depth > r.rows ? ` (depth ${r.t.depth}: ${r.rows} shown)` : '';
      g.append('text').attr('x', 4).attr('y', HEAD - 4).attr('class', 'lane-label').text(r.label + more);
      const shown = r.t.slices.filter((d) => d[2] < r.rows);
      g.selectAll('rect').data(shown).join('rect').attr('class', 'slice')
        .attr('y', (d) => HEAD + d[2] * ROW).attr('height', ROW - 1)
        .attr('fill', (d) => frameColor(doc.frames[d[3]].kind, doc.frames[d[3]].name))
        .attr('data-start', (d) => d[0]).attr('data-end', (d) => d[1]).attr('data-depth', (d) => d[2])
        .attr('data-name', (d) => doc.frames[d[3]].name)
        .call(place)
        .on('mouseover', (ev, d) => { opts.detail.textContent = describe(r.t, d); })
        .append('title').text((d) => describe(r.t, d));
      g.selectAll('text.slice-name').data(shown.filter((d) => wide(d) > 24)).join('text')
        .attr('class', 'slice-name').attr('y', (d) => HEAD + d[2] * ROW + ROW - 4)
        .attr('pointer-events', 'none').call(label);
    }
    const zoom = d3.zoom().scaleExtent([1, 1e7]).extent([[opts.label, 0], [opts.width(), h]])
      .on('zoom', (ev) => { if (ev.sourceEvent) opts.zoomTo(ev.transform); });
    svg.call(zoom);
  }

  return {
    el: root,
    // the timeline's zoom: the slices move with it until the next load
    rescale(scale, transform) {
      x = scale;
      if (!svg) return;
      svg.property('__zoom', transform);
      svg.selectAll('rect.slice').call(place);
      svg.selectAll('text.slice-name').call(label);
    },
    async load(scale, transform) {
      x = scale;
      const by = mode.value;
      const my = ++seq;
      if (by === 'off') {
        doc = null;
        svg = null;
        box.replaceChildren();
        status.textContent = '';
        return;
      }
      const [a, b] = x.domain();
      const from = Math.max(0, Math.floor(a));
      const to = Math.max(from + 1, Math.ceil(b));
      const px = Math.max(0, Math.floor((b - a) / Math.max(1, opts.width() - opts.label)));
      const q = new URLSearchParams({ from: String(from), to: String(to), min_duration: String(px), by });
      status.textContent = 'loading…';
      try {
        const d = await getJSON(`/api/v1/jobs/${opts.id}/slices?${q}`);
        if (my !== seq) return;
        doc = d;
        Object.assign(box.dataset, { from: String(d.from), to: String(d.to), min: String(d.min_duration), by });
        status.textContent = `${num(d.slices)} slices in [${num(d.from)}, ${num(d.to)}) ${d.axis}; ` +
          `${num(d.hidden)} narrower than a pixel (${num(d.min_duration)} ${d.axis}) not shown`;
        draw();
        if (transform) svg.property('__zoom', transform);
      } catch (e) {
        if (my !== seq) return;
        doc = null;
        svg = null;
        box.replaceChildren();
        delete box.dataset.from;
        status.textContent = e.message.includes('bound') ? `zoom in to see the stacks: ${e.message}` : e.message;
      }
    },
    onChange(fn) { mode.addEventListener('change', fn); },
  };
}
