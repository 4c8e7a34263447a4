// dashboard.js: what the server holds (traces, binaries, jobs with live
// progress: instructions done of the total, with an ETA), the form that
// uploads a trace, its binaries (each at its link address or a PIE's @BASE)
// and maybe a Go trace and starts a job on them, the form that re-runs a
// job on its uploads with other options, and deleting jobs and inputs.
// An upload attempt that fails part way (a refused binary, a refused job)
// deletes what it stored; the lists mark uploads that no job uses.
import { getJSON, postJSON, remove, safeName, upload } from './api.js';
import { bytes, date, el, jobTotal, message, num, progressBar, progressLabel, progressOf } from './util.js';

const ACTIVE = new Set(['queued', 'running']);

// Compressed traces the server refuses ("not a trace: xz-compressed data"):
// caught here before the upload, with the command that decompresses them.
const COMPRESSED = [
  ['xz', [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], 'xz -dk'],
  ['zstd', [0x28, 0xb5, 0x2f, 0xfd], 'zstd -d'],
  ['gzip', [0x1f, 0x8b], 'gunzip -k'],
  ['bzip2', [0x42, 0x5a, 0x68], 'bunzip2 -k'],
];
export async function compressedNote(file) {
  const head = new Uint8Array(await file.slice(0, 8).arrayBuffer());
  for (const [name, magic, cmd] of COMPRESSED) {
    if (magic.every((b, i) => head[i] === b)) {
      return `${file.name} is ${name}-compressed: decompress it first (${cmd} ${file.name}) and upload ` +
        'the result; LZ4 frames are the one compression the server reads.';
    }
  }
  return null;
}

// "0x4000000000", "4000000000" (hex) or "": the base of a binary (null: its
// link address); throws on anything else.
function parseBase(text, name) {
  const t = text.trim();
  if (!t) return null;
  if (!/^(0x)?[0-9a-f]{1,16}$/i.test(t)) throw new Error(`base of ${name}: "${t}" is not a hex address`);
  return '0x' + t.replace(/^0x/i, '').toLowerCase();
}

function select(id, options, value) {
  const s = el('select', { id, name: id }, options.map(([v, t]) => el('option', { value: v }, t)));
  s.value = value;
  return s;
}

// The job's options the forms offer (the rest of a re-run's spec is kept).
function optionFields(prefix, opts = {}) {
  const format = select(`${prefix}-format`, [['auto', 'auto']], 'auto');
  getJSON('/api/v1/formats').then((t) => {
    for (const f of t.formats.filter((x) => x.readable)) {
      format.append(el('option', { value: f.name, title: f.description }, f.name));
    }
    format.value = opts.format || 'auto';
  }).catch(() => { /* auto alone: detection still works */ });
  const inline = el('input', { type: 'checkbox', id: `${prefix}-inline`, checked: !!opts.inline });
  const pcs = el('input', { type: 'checkbox', id: `${prefix}-pcs`, checked: !!opts.pcs,
    title: 'count per instruction: the annotate view and pprof at the exact pc (about 40 % slower)' });
  const tasks = select(`${prefix}-tasks`, [['auto', 'auto (the kernel\'s events, else derived)'],
    ['satp', 'satp (one process per address space)']], opts.tasks || 'auto');
  const fields = [
    el('label', { for: `${prefix}-format` }, 'Format'), format,
    el('label', { for: `${prefix}-inline` }, 'Inline frames'), inline,
    el('label', { for: `${prefix}-pcs` }, 'Per-line counts'), pcs,
    el('label', { for: `${prefix}-tasks` }, 'Tasks'), tasks,
  ];
  const read = () => ({ format: format.value, inline: inline.checked, pcs: pcs.checked, tasks: tasks.value });
  return [fields, read];
}

// Waits for the job to finish, then opens it (if asked and still on the
// dashboard).
function openWhenDone(id, status, want) {
  const poll = async () => {
    if (!want() || !document.body.contains(status)) return;
    let j;
    try {
      j = await getJSON(`/api/v1/jobs/${id}`);
    } catch (_) {
      setTimeout(poll, 1000);
      return;
    }
    if (ACTIVE.has(j.state)) setTimeout(poll, 500);
    else if (j.state === 'done') location.hash = `#/jobs/${id}`;
    else status.replaceChildren(message(`job ${id} ${j.state}` + (j.error ? `: ${j.error.message}` : '')));
  };
  poll();
}

// Deletes the uploads of a failed attempt, newest first, and says what was
// removed; one that cannot be (a job started on the same content meanwhile,
// the server gone) is listed as kept, with a button that deletes it.
async function rollBack(created, refresh) {
  const removed = [];
  const kept = [];
  for (const c of [...created].reverse()) {
    try {
      await remove(`/api/v1/${c.kind}/${c.id}`);
      removed.push(c.label);
    } catch (e) {
      kept.push({ ...c, why: e.message });
    }
  }
  refresh();
  const box = el('div', { id: 'upload-rollback' });
  if (removed.length) box.append(message(`No job was started; removed what this upload stored: ${removed.join(', ')}.`, 'info'));
  else if (!kept.length) box.append(message('No job was started; nothing new was stored.', 'info'));
  for (const k of kept) {
    const del = el('button', { type: 'button', class: 'danger', 'data-kept': `${k.kind}/${k.id}`, onclick: async () => {
      try {
        await remove(`/api/v1/${k.kind}/${k.id}`);
        del.replaceWith(' removed');
      } catch (e) {
        del.after(` ${e.message}`);
      }
      refresh();
    } }, 'Delete it');
    box.append(el('p', { class: 'msg error', role: 'alert' }, `${k.label} is still stored, used by no job of this ` +
      `upload (${k.why}). `, del));
  }
  return box;
}

function uploadForm(onJob) {
  const status = el('div', { class: 'upload-status', id: 'upload-status', 'aria-live': 'polite' });
  const traceIn = el('input', { type: 'file', id: 'up-trace', name: 'trace', required: true });
  const binsIn = el('input', { type: 'file', id: 'up-bins', name: 'binaries', multiple: true });
  const bases = el('div', { id: 'up-bases' });
  const goIn = el('input', { type: 'file', id: 'up-go', name: 'go_trace' });
  const eventsIn = el('input', { type: 'file', id: 'up-events', name: 'events' });
  const pyIn = el('input', { type: 'file', id: 'up-pycode', name: 'pycode' });
  const [opts, readOpts] = optionFields('up');
  const open = el('input', { type: 'checkbox', id: 'up-open', checked: true });
  const submit = el('button', { type: 'submit', id: 'up-submit', class: 'primary' }, 'Upload and start job');

  // one base field per binary chosen: PIE binaries run where the loader
  // put them, which only the user knows
  binsIn.addEventListener('change', () => {
    bases.replaceChildren(...[...binsIn.files].map((f, i) => el('div', { class: 'base-row' },
      el('label', { for: `up-base-${i}` }, `${f.name} @`),
      el('input', { id: `up-base-${i}`, class: 'mono', size: 20, placeholder: 'link address',
        title: 'run-time address of its lowest PT_LOAD segment (hex), for a PIE or a moved library' }))));
  });
  traceIn.addEventListener('change', async () => {
    const f = traceIn.files[0];
    const note = f ? await compressedNote(f) : null;
    status.replaceChildren(note ? message(note) : '');
    submit.disabled = !!note;
  });

  async function send(ev) {
    ev.preventDefault();
    const trace = traceIn.files[0];
    if (!trace) return;
    status.replaceChildren();
    let specBins;
    try {
      for (const f of [trace, ...eventsIn.files]) {
        const note = await compressedNote(f);
        if (note) throw new Error(note);
      }
      specBins = [...binsIn.files].map((b, i) => parseBase(document.getElementById(`up-base-${i}`)?.value || '', b.name));
    } catch (e) {
      status.replaceChildren(message(e.message));
      return;
    }
    submit.disabled = true;
    const files = [trace, ...binsIn.files, ...goIn.files, ...eventsIn.files, ...pyIn.files];
    let done = 0;
    const bar = progressBar(0, 'upload progress');
    const what = el('span', {}, '');
    status.append(what, ' ', bar);
    const step = (f) => (x) => { bar.value = (done + x * f.size) / total; };
    const total = files.reduce((s, f) => s + f.size, 0) || 1;
    // What this attempt stored that was not there before (the server
    // answers duplicate: true for content it had): removed again when a
    // later step fails, so that a refused binary or job leaves no upload
    // that no job uses.
    const created = [];
    const put = async (f, kind, fmt) => {
      what.textContent = 'uploading ' + f.name;
      const r = await upload(`/api/v1/${kind}?name=${encodeURIComponent(safeName(f.name))}${fmt || ''}`, f, step(f));
      done += f.size;
      if (!r.duplicate) created.push({ kind, id: r.id, label: `${kind === 'binaries' ? 'binary' : 'trace'} ${r.id} (${r.name})` });
      return r;
    };
    try {
      const o = readOpts();
      // binaries first: small, and the upload the server refuses most
      // often (not an ELF, not RISC-V), before a long trace upload
      const binaries = [];
      for (const [i, b] of [...binsIn.files].entries()) {
        const r = await put(b, 'binaries');
        binaries.push(specBins[i] ? { id: r.id, base: specBins[i] } : r.id);
      }
      const t = await put(trace, 'traces', o.format === 'auto' ? '' : '&format=' + o.format);
      const spec = { trace: t.id, binaries, options: o };
      if (goIn.files[0]) spec.go_trace = (await put(goIn.files[0], 'traces', '&format=gotrace')).id;
      if (eventsIn.files[0]) spec.events = (await put(eventsIn.files[0], 'traces', '&format=events')).id;
      if (pyIn.files[0]) spec.pycode = (await put(pyIn.files[0], 'traces', '&format=pycode')).id;
      bar.value = 1;
      what.textContent = 'starting the job';
      const job = await postJSON('/api/v1/jobs', spec);
      status.replaceChildren(message(`job ${job.id} started on trace ${t.id}` +
        (open.checked ? '; it opens when it finishes' : ''), 'ok'));
      onJob(job);
      if (open.checked) openWhenDone(job.id, status, () => open.checked);
    } catch (e) {
      status.replaceChildren(message(e.message));
      status.append(await rollBack(created, onJob));
    } finally {
      submit.disabled = false;
    }
  }

  return el('form', { id: 'upload-form', class: 'card', onsubmit: send },
    el('h2', {}, 'New job'),
    el('p', { class: 'muted' }, 'A trace (TracerV, Spike, QEMU, oobt; LZ4 accepted, not xz/zstd/gzip) and ' +
      'the ELF files it ran (program, libraries, vmlinux), each at its link address unless given a base ' +
      '(@BASE: where a PIE or a library was loaded). Optional: the Go execution trace of the same run, ' +
      'a task-event log, and the code map of a CPython 3.11 program (tests/tools/pycode.py) for its ' +
      'py: frames.'),
    el('div', { class: 'fields' },
      el('label', { for: 'up-trace' }, 'Trace'), traceIn,
      el('label', { for: 'up-bins' }, 'Binaries'), el('div', {}, binsIn, bases),
      el('label', { for: 'up-go' }, 'Go trace'), goIn,
      el('label', { for: 'up-events' }, 'Task events'), eventsIn,
      el('label', { for: 'up-pycode' }, 'Python code map'), pyIn,
      opts,
      el('label', { for: 'up-open' }, 'Open the job when it finishes'), open),
    submit, status);
}

// Re-running a job: its spec with other options, on the same uploads.
function rerunForm(job, traces, bins, onJob, onClose) {
  const spec = JSON.parse(JSON.stringify(job.spec || {}));
  const status = el('div', { id: 'rerun-status', 'aria-live': 'polite' });
  const [opts, readOpts] = optionFields('rr', spec.options || {});
  const binRows = (spec.binaries || []).map((b, i) => {
    const bin = bins.get(b.id);
    return el('div', { class: 'base-row' },
      el('label', { for: `rr-base-${i}` }, `${bin ? bin.name : 'binary ' + b.id} (${b.id}) @`),
      el('input', { id: `rr-base-${i}`, class: 'mono', size: 20, value: b.base || '', placeholder: 'link address' }));
  });
  const ids = spec.traces || [spec.trace];
  const submit = el('button', { type: 'submit', class: 'primary', id: 'rerun-submit' }, 'Start the new job');
  async function send(ev) {
    ev.preventDefault();
    try {
      spec.binaries = (spec.binaries || []).map((b, i) => {
        const base = parseBase(document.getElementById(`rr-base-${i}`).value, `binary ${b.id}`);
        return base ? { id: b.id, base } : b.id;
      });
      spec.options = { ...spec.options, ...readOpts() };
      submit.disabled = true;
      const j = await postJSON('/api/v1/jobs', spec);
      status.replaceChildren(message(`job ${j.id} started`, 'ok'));
      onJob(j);
    } catch (e) {
      status.replaceChildren(message(e.message));
    } finally {
      submit.disabled = false;
    }
  }
  return el('form', { id: 'rerun-form', class: 'card', 'data-job': job.id, onsubmit: send },
    el('h2', {}, `Re-run job ${job.id}`),
    el('p', { class: 'muted' }, 'On the same uploads: trace ', ids.map((t) => `${(traces.get(t) || {}).name || ''} (${t})`).join(', '),
      spec.go_trace ? `, Go trace ${spec.go_trace}` : '', spec.events ? `, events ${spec.events}` : '',
      spec.pycode ? `, Python code map ${spec.pycode}` : '', '.'),
    el('div', { class: 'fields' }, el('span', {}, 'Binaries'), el('div', {}, binRows), opts),
    submit, ' ', el('button', { type: 'button', onclick: onClose }, 'Close'), status);
}

// DELETE, and when finished jobs still use the input, a second question.
async function removeInput(kind, id, label, refresh) {
  if (!confirm(`Delete ${label}?`)) return;
  try {
    await remove(`/api/v1/${kind}/${id}`);
  } catch (e) {
    if (e.status === 409 && /with_jobs/.test(e.message) && confirm(`${e.message}\n\nDelete those jobs too?`)) {
      try {
        await remove(`/api/v1/${kind}/${id}?with_jobs=1`);
      } catch (e2) {
        alert(e2.message);
      }
    } else {
      alert(e.message);
    }
  }
  refresh();
}

function jobRow(j, traces, refresh, rerun) {
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
    const pr = progressOf(j, jobTotal(j, (id) => traces.get(id)));
    prog = el('span', { class: 'job-progress', 'data-done': pr.done, 'data-total': pr.total ?? '',
      'data-estimated': String(pr.estimated) },
    progressBar(pr.fraction, `job ${j.id} progress`), ' ',
    j.state === 'queued' ? `queued${p.queue_position !== undefined ? ' (position ' + p.queue_position + ')' : ''}` : progressLabel(pr));
  } else prog = el('span', { class: 'muted' }, j.error ? j.error.message : '');
  const again = el('button', { type: 'button', class: 'rerun', 'aria-label': `re-run job ${j.id}`,
    onclick: () => rerun(j) }, 'Re-run');
  return el('tr', { 'data-job': j.id, 'data-state': j.state },
    el('td', { class: 'num' }, el('a', { href: `#/jobs/${j.id}` }, j.id)),
    el('td', {}, t ? t.name : `trace ${j.trace}`),
    el('td', {}, el('span', { class: 'state ' + j.state }, j.state), j.partial ? ' (partial)' : ''),
    el('td', { class: 'progress-cell' }, prog),
    el('td', {}, date(j.created)),
    el('td', {}, j.state === 'done' ? el('a', { href: `#/jobs/${j.id}`, class: 'button' }, 'Open') : '', ' ', again, ' ', del));
}

// How many jobs use each trace (as trace, Go trace, events or code map) and each
// binary: an upload no job uses is marked, so that a left-over is seen.
function usesOf(jobs) {
  const u = { traces: new Map(), binaries: new Map() };
  const add = (m, id) => { if (id !== undefined && id !== null) m.set(id, (m.get(id) || 0) + 1); };
  for (const j of jobs) {
    const s = j.spec || {};
    const ts = new Set([...(s.traces || [s.trace ?? j.trace]), s.go_trace, s.events, s.pycode]);
    for (const t of ts) add(u.traces, t);
    for (const b of new Set((s.binaries || []).map((x) => (typeof x === 'object' ? x.id : x)))) add(u.binaries, b);
  }
  return u;
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
    const bmap = new Map(bins.binaries.map((b) => [b.id, b]));
    const rerun = (j) => {
      const f = rerunForm(j, tmap, bmap, () => refresh(), () => { f.remove(); });
      const old = document.getElementById('rerun-form');
      if (old) old.replaceWith(f);
      else lists.before(f);
      f.scrollIntoView({ block: 'nearest' });
    };
    const jobRows = [...jobs.jobs].reverse().map((j) => jobRow(j, tmap, refresh, rerun));
    const uses = usesOf(jobs.jobs);
    const usedBy = (kind, id) => {
      const n = uses[kind].get(id) || 0;
      return el('td', { class: n ? 'num' : 'num unused', 'data-jobs': n,
        title: n ? '' : 'no job uses it: start one, or delete it' }, n ? num(n) : 'none');
    };
    const delBtn = (kind, id, label) => el('button', { type: 'button', class: 'danger', 'aria-label': `delete ${label}`,
      onclick: () => removeInput(kind, id, label, refresh) }, 'Delete');
    lists.replaceChildren(
      table('jobs', 'Jobs', ['id', 'trace', 'state', 'progress', 'created', ''], jobRows),
      table('traces', 'Traces', ['id', 'name', 'size', 'format', 'state', 'jobs', 'date', ''],
        [...traces.traces].reverse().map((t) => el('tr', { 'data-trace': t.id },
          el('td', { class: 'num' }, t.id), el('td', {}, t.name), el('td', { class: 'num' }, bytes(t.size)),
          el('td', {}, t.format), el('td', {}, t.state), usedBy('traces', t.id), el('td', {}, date(t.created)),
          el('td', {}, delBtn('traces', t.id, `trace ${t.id} (${t.name})`))))),
      table('binaries', 'Binaries', ['id', 'name', 'size', 'format', 'functions', 'jobs', 'date', ''],
        [...bins.binaries].reverse().map((b) => el('tr', { 'data-binary': b.id },
          el('td', { class: 'num' }, b.id), el('td', {}, b.name), el('td', { class: 'num' }, bytes(b.size)),
          el('td', {}, `ELF ${b.arch}${b.pie ? ' PIE' : ''}${b.has_dwarf ? ', DWARF' : ''}`),
          el('td', { class: 'num' }, num(b.functions)), usedBy('binaries', b.id), el('td', {}, date(b.created)),
          el('td', {}, delBtn('binaries', b.id, `binary ${b.id} (${b.name})`))))));
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
