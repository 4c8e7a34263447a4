// proctree.js: the job's process tree (when the trace told processes
// apart): nested lists, each process a button that filters the flame graph,
// with its exec paths and its share of all processes' CPU.
import { el, num, percent } from './util.js';

// A process's CPU: user plus kernel, in cycles when the flame graph shows
// cycles (and the trace has them), else in instructions.
function processWeight(p, byCycles) {
  const w = byCycles ? p.cycles : p.instructions;
  return w ? w.user + w.kernel : 0;
}

export function processLabel(p) {
  return p.pid >= 0 ? `${p.comm || '?'} ${p.pid}` : `${p.comm || '?'} (pid unknown)`;
}

// Children by parent pid. A process whose parent is not in the trace is a
// root; so is one whose ancestry loops (pid reuse), found as never visited.
function childrenByParent(procs) {
  const pids = new Set(procs.filter((p) => p.pid >= 0).map((p) => p.pid));
  const kids = new Map();
  const roots = [];
  for (const p of procs) {
    if (p.ppid >= 0 && p.ppid !== p.pid && pids.has(p.ppid)) {
      if (!kids.has(p.ppid)) kids.set(p.ppid, []);
      kids.get(p.ppid).push(p);
    } else {
      roots.push(p);
    }
  }
  return [roots, kids];
}

// The share as text and as a bar; the exact counts in the title.
function shareOf(p, total, byCycles) {
  const w = processWeight(p, byCycles);
  const unit = byCycles ? 'cycles' : 'instructions';
  const src = byCycles ? p.cycles : p.instructions;
  const pct = total ? (100 * w) / total : 0;
  return el('span', { class: 'proc-share', title: `${num(w)} ${unit}: user ${num(src.user)}, kernel ${num(src.kernel)}` },
    el('span', { class: 'share-bar', 'aria-hidden': 'true' }, el('span', { style: `width:${pct.toFixed(2)}%` })),
    el('span', { class: 'share-text' }, percent(w, total)),
    el('span', { class: 'muted' }, ` ${num(w)} ${byCycles ? 'cycles' : 'instr.'}`));
}

// Nested lists, each process a row: a show/hide button when it has
// children, a button that filters the flame graph, its exec paths and its
// share of all processes. Plain buttons: reachable and usable by keyboard.
export function processTree(procs, byCycles, selected, onPick) {
  const [roots, kids] = childrenByParent(procs);
  const total = procs.reduce((a, p) => a + processWeight(p, byCycles), 0);
  const visited = new Set();
  const item = (p) => {
    visited.add(p);
    const label = processLabel(p);
    const sub = (p.pid >= 0 ? kids.get(p.pid) || [] : []).filter((c) => !visited.has(c)).map(item);
    const list = sub.length ? el('ul', {}, sub) : null;
    const toggle = list ? el('button', {
      type: 'button', class: 'proc-toggle', 'aria-expanded': 'true', 'aria-label': `children of ${label}`,
      onclick: (e) => {
        const open = list.hidden;
        list.hidden = !open;
        e.currentTarget.setAttribute('aria-expanded', String(open));
      },
    }) : el('span', { class: 'proc-toggle-space' });
    const pick = el('button', {
      type: 'button', class: 'link proc-pick', 'aria-pressed': String(selected === p.pid),
      title: p.pid >= 0 ? `flame graph of ${label} only` : 'flame graph of the tasks whose pid is unknown',
      onclick: () => onPick(p),
    }, label);
    const execs = p.exec && p.exec.length ?
      el('span', { class: 'proc-exec muted' }, 'exec ', p.exec.map((x) => x.path).join(', ')) : null;
    return el('li', { 'data-pid': p.pid }, el('div', { class: 'proc-row' }, toggle, pick, execs,
      shareOf(p, total, byCycles)), list);
  };
  const top = roots.map(item);
  for (const p of procs) if (!visited.has(p)) top.push(item(p));
  return el('ul', { class: 'proc-tree', 'aria-label': 'processes' }, top);
}
