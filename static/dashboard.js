// dashboard.js: what the server holds (traces, binaries, jobs with live
// progress) and the form that uploads a trace and its binaries and starts a
// job on them.
import { getJSON, postJSON, remove, safeName, upload } from './api.js';
import { bytes, date, el, message, num, progressBar } from './util.js';

const ACTIVE = new Set(['queued', 'running']);

function uploadForm(onJob) {
  const status = el('div', { class: 'upload-status', 'aria-live': 'polite' });
  const traceIn = el('input', { type: 'file', id: 'up-trace', name: 'trace', required: true });
  const binsIn = el('input', { type: 'file', id: 'up-bins', name: 'binaries', multiple: true });
  // The server's format table: "auto", then the formats a job reads.
  const format = el('select', { id: 'up-format', name: 'format' },
    el('option', { value: 'auto' }, 'auto'));
  getJSON('/api/v1/formats').then((t) => {
    for (const f of t.formats.filter((x) => x.readable)) {
      format.append(el('option', { value: f.name, title: f.description }, f.name));
    }
  }).catch(() => { /* auto alone: detection still works */ });
  const inline = el('input', { type: 'checkbox', id: 'up-inline', name: 'inline' });
  const submit = el('button', { type: 'submit', id: 'up-submit', class: 'primary' }, 'Upload and start job');

  async function send(ev) {
    ev.preventDefault();
    const trace = traceIn.files[0];
    if (!trace) return;
    submit.disabled = true;
    status.replaceChildren();
    const files = [trace, ...binsIn.files];
    let done = 0;
    const bar = progressBar(0, 'upload progress');
    const what = el('span', {}, '');
    status.append(what, ' ', bar);
    const step = (f) => (x) => { bar.value = (done + x * f.size) / total; };
    const total = files.reduce((s, f) => s + f.size, 0) || 1;
    try {
      what.textContent = 'uploading ' + trace.name;
      const fmt = format.value === 'auto' ? '' : '&format=' + format.value;
      const t = await upload(`/api/v1/traces?name=${encodeURIComponent(safeName(trace.name))}${fmt}`,
        trace, step(trace));
      done += trace.size;
      const ids = [];
      for (const b of binsIn.files) {
        what.textContent = 'uploading ' + b.name;
        const r = await upload(`/api/v1/binaries?name=${encodeURIComponent(safeName(b.name))}`,
          b, step(b));
        done += b.size;
        ids.push(r.id);
      }
      bar.value = 1;
      what.textContent = 'starting the job';
      const opts = { format: format.value, inline: inline.checked };
      const job = await postJSON('/api/v1/jobs', { trace: t.id, binaries: ids, options: opts });
      status.replaceChildren(message(`job ${job.id} started on trace ${t.id}`, 'ok'));
      onJob(job);
    } catch (e) {
      status.replaceChildren(message(e.message));
    } finally {
      submit.disabled = false;
    }
  }

  return el('form', { id: 'upload-form', class: 'card', onsubmit: send },
    el('h2', {}, 'New job'),
    el('p', { class: 'muted' }, 'A trace (TracerV, Spike, QEMU, oobt; LZ4 accepted) and the ELF ' +
      'files it ran (program, libraries, vmlinux). Binaries are symbolized at their link ' +
      'address.'),
    el('div', { class: 'fields' },
      el('label', { for: 'up-trace' }, 'Trace'), traceIn,
      el('label', { for: 'up-bins' }, 'Binaries'), binsIn,
      el('label', { for: 'up-format' }, 'Format'), format,
      el('label', { for: 'up-inline' }, 'Inline frames'), inline),
    submit, status);
}

function jobRow(j, traces, refresh) {
  const t = traces.get(j.trace);
  const p = j.progress || {};
  const del = el('button', {
    type: 'button',
    class: 'danger',
    'aria-label': `delete job ${j.id}`,
    onclick: async () => {
      if (!confirm(`Delete job ${j.id}${ACTIVE.has(j.state) ? ' (it will be cancelled)' : ''}?`)) return;
      try {
        await remove(`/api/v1/jobs/${j.id}`);
      } catch (e) {
        alert(e.message);
      }
      refresh();
    },
  }, 'Delete');
  let prog;
  if (j.state === 'done') prog = el('span', { class: 'muted' }, num(p.instructions) + ' instr.');
  else if (ACTIVE.has(j.state)) {
    prog = el('span', {}, progressBar(p.fraction || 0, `job ${j.id} progress`), ' ',
      num(p.instructions), ' instr.');
  } else prog = el('span', { class: 'muted' }, j.error ? j.error.message : '');
  return el('tr', { 'data-job': j.id, 'data-state': j.state },
    el('td', { class: 'num' }, el('a', { href: `#/jobs/${j.id}` }, j.id)),
    el('td', {}, t ? t.name : `trace ${j.trace}`),
    el('td', {}, el('span', { class: 'state ' + j.state }, j.state), j.partial ? ' (partial)' : ''),
    el('td', { class: 'progress-cell' }, prog),
    el('td', {}, date(j.created)),
    el('td', {}, j.state === 'done' ? el('a', { href: `#/jobs/${j.id}`, class: 'button' }, 'Open') : '', ' ', del));
}

function table(id, caption, head, rows) {
  return el('table', { id, class: 'data' }, el('caption', {}, caption),
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows));
}

export function renderDashboard(main) {
  const lists = el('div', { id: 'lists' });
  let timer = null;
  let gone = false;

  async function refresh() {
    clearTimeout(timer);
    let jobs, traces, bins;
    try {
      [jobs, traces, bins] = await Promise.all([getJSON('/api/v1/jobs?limit=1000'),
        getJSON('/api/v1/traces?limit=1000'), getJSON('/api/v1/binaries?limit=1000')]);
    } catch (e) {
      lists.replaceChildren(message(e.message));
      if (!gone) timer = setTimeout(refresh, 5000);
      return;
    }
    if (gone) return;
    const tmap = new Map(traces.traces.map((t) => [t.id, t]));
    const jobRows = [...jobs.jobs].reverse().map((j) => jobRow(j, tmap, refresh));
    lists.replaceChildren(
      table('jobs', 'Jobs', ['id', 'trace', 'state', 'progress', 'created', ''], jobRows),
      table('traces', 'Traces', ['id', 'name', 'size', 'format', 'state', 'date'],
        [...traces.traces].reverse().map((t) => el('tr', { 'data-trace': t.id },
          el('td', { class: 'num' }, t.id), el('td', {}, t.name), el('td', { class: 'num' }, bytes(t.size)),
          el('td', {}, t.format), el('td', {}, t.state), el('td', {}, date(t.created))))),
      table('binaries', 'Binaries', ['id', 'name', 'size', 'format', 'functions', 'date'],
        [...bins.binaries].reverse().map((b) => el('tr', { 'data-binary': b.id },
          el('td', { class: 'num' }, b.id), el('td', {}, b.name), el('td', { class: 'num' }, bytes(b.size)),
          el('td', {}, `ELF ${b.arch}${b.pie ? ' PIE' : ''}${b.has_dwarf ? ', DWARF' : ''}`),
          el('td', { class: 'num' }, num(b.functions)), el('td', {}, date(b.created))))));
    const busy = jobs.jobs.some((j) => ACTIVE.has(j.state));
    timer = setTimeout(refresh, busy ? 700 : 5000);
  }

  main.append(el('h1', {}, 'Dashboard'), uploadForm(refresh), lists);
  refresh();
  return () => {
    gone = true;
    clearTimeout(timer);
  };
}
