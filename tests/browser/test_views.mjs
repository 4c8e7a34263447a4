// test_views.mjs: the job page's views in a real browser against the real
// oobprofd, each number checked against `oobprof` (top, fold) or against
// the API's flame graph JSON summed another way:
// - the functions table: every row, paged; its search box; it follows the
//   priv, process and window filters; self/total percentages;
// - the flame graph: icicle/flame, heaviest-first or by-name order, the
//   hidden-nodes note and "show all", the tooltip inside the window,
//   keyboard navigation;
// - the URL keeps the state: a reload shows the same view;
// - the sandwich of one function against `oobprof fold`.
// Screenshots: tests/out/screenshots/views-*.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, OUT, Reporter, SRC, check, checkClean, cliTop, jobFor, loadPlaywright,
  missing, runMain, screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const SHARED = process.env.OOB_SHARED || path.join(SRC, '../shared');
const R = new Reporter('test_views');
const TRACE = path.join(GEN, 'progs/mixed.oobt');
const ELF = path.join(GEN, 'progs/mixed');

function oobprof(args) {
  const r = spawnSync(path.join(BUILD, 'oobprof'), args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`oobprof ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const n = (t) => Number(String(t).replace(/[,%]/g, ''));

// The table's rows as {name: [cells]}, page by page from the first.
async function allTableRows(page) {
  const rows = [];
  if (await page.locator('#page-first').isEnabled()) await page.click('#page-first');
  for (;;) {
    rows.push(...await page.locator('#top tbody tr').evaluateAll((trs) => trs.map(
      (tr) => [...tr.children].map((td) => td.innerText))));
    if (!await page.locator('#page-next').isEnabled()) break;
    await page.click('#page-next');
  }
  return rows;
}

// Per-name self and total weights of a flame graph JSON (total: the
// outermost instance of each name on a path counts once).
function byName(root) {
  const m = new Map();
  (function walk(nd, seen) {
    if (nd !== root) {
      const e = m.get(nd.name) || { self: 0, total: 0, calls: 0 };
      e.self += nd.self;
      e.calls += nd.calls;
      if (!seen.has(nd.name)) e.total += nd.value;
      m.set(nd.name, e);
    }
    const next = nd === root ? seen : new Set([...seen, nd.name]);
    for (const c of nd.children || []) walk(c, next);
  })(root, new Set());
  return m;
}

async function waitTable(page, what) {
  await page.waitForFunction((w) => document.querySelector('#top caption')?.textContent.includes(w), what,
    { timeout: 20000 });
  await sleep(200);
}

async function tableMatchesFlame(page, srv, jobId, query, label) {
  const fg = await (await fetch(`${srv.url}/api/v1/jobs/${jobId}/flamegraph?max_nodes=0&${query}`)).json();
  const want = byName(fg);
  const rows = await allTableRows(page);
  // a name may be several functions (one per binary): summed by name
  const got = new Map();
  let sumSelf = 0;
  for (const r of rows) {
    const g = got.get(r[0]) || { self: 0, total: 0, calls: 0 };
    g.self += n(r[3]);
    g.total += n(r[4]);
    g.calls += n(r[2]);
    got.set(r[0], g);
    sumSelf += n(r[3]);
  }
  check(got.size === want.size, `${label}: ${got.size} names in the table, the flame graph has ${want.size}`);
  for (const [name, w] of want) {
    const g = got.get(name);
    check(g && g.self === w.self && g.total === w.total && g.calls === w.calls,
      `${label}: ${name} table ${JSON.stringify(g)}; flame graph ${JSON.stringify(w)}`);
  }
  check(sumSelf === fg.value, `${label}: self sums to ${sumSelf}, root ${fg.value}`);
  return rows.length;
}

async function spikeCases(page, srv) {
  const log = path.join(GEN, 'readers/spike.log');
  const elfs = [path.join(GEN, 'vmlinux'), path.join(SHARED, 'fixtures/spike/init'),
    path.join(SHARED, 'fixtures/spike/prog')];
  const why = missing(log, ...elfs);
  if (why) {
    R.skip('table of a Linux boot', why);
    return;
  }
  const cut = path.join(OUT, 'browser_views/spike300k.log');
  fs.writeFileSync(cut, spawnSync('head', ['-n', '300000', log], { maxBuffer: 1 << 30 }).stdout);
  const truth = cliTop(cut, elfs);
  const job = await jobFor(srv.url, cut, elfs, 'spike boot');

  await R.run('table: every row of oobprof top, paged, with its numbers and shares', async () => {
    await page.goto(`${srv.url}/#/jobs/${job.id}`);
    await waitTable(page, 'by instructions');
    const info = await page.locator('#page-info').innerText();
    check(info.includes(`of ${truth.count.toLocaleString('en-US')}`), `pager "${info}", oobprof top has ${truth.count}`);
    const rows = await allTableRows(page);
    check(rows.length === truth.count, `${rows.length} rows, oobprof top ${truth.count}`);
    const sum = truth.functions.reduce((a, f) => a + f.self_instructions, 0);
    // names may repeat (one per binary): compare as multisets of rows
    const key = (name, self, total, calls) => `${name}|${self}|${total}|${calls}`;
    const want = truth.functions.map((f) => key(f.name, f.self_instructions, f.total_instructions, f.calls)).sort();
    const got = rows.map((r) => key(r[0], n(r[3]), n(r[4]), n(r[2]))).sort();
    check(JSON.stringify(want) === JSON.stringify(got), 'rows differ from oobprof top');
    for (const r of rows.slice(0, 60)) {
      const selfPct = ((100 * n(r[3])) / sum).toFixed(2) + '%';
      const totalPct = ((100 * n(r[4])) / sum).toFixed(2) + '%';
      check(r[5] === selfPct && r[6] === totalPct, `${r[0]}: ${r[5]} ${r[6]}, want ${selfPct} ${totalPct}`);
    }
    await page.click('#page-first');
    return `${rows.length} rows in ${Math.ceil(rows.length / 50)} pages`;
  });

  await R.run('table: the search box keeps the rows whose name or file has the text', async () => {
    const term = 'sched';
    await page.fill('#table-search', term);
    await sleep(200);
    const want = truth.functions.filter((f) => f.name.toLowerCase().includes(term) ||
      (f.file || '').toLowerCase().includes(term));
    const rows = await allTableRows(page);
    check(rows.length === want.length && want.length > 0, `${rows.length} rows, ${want.length} wanted`);
    await page.fill('#table-search', '');
    await sleep(200);
    return `"${term}": ${rows.length}`;
  });

  await R.run('table: follows the kernel-only filter (as the flame graph sums)', async () => {
    await page.selectOption('#priv', 'kernel');
    await waitTable(page, 'kernel frames');
    return `${await tableMatchesFlame(page, srv, job.id, 'priv=kernel', 'kernel')} functions`;
  });
  await page.selectOption('#priv', 'all');
  await waitTable(page, 'by instructions (');

  await R.run('table: follows the process filter', async () => {
    await page.waitForSelector('#processes .proc-pick', { timeout: 10000 });
    const pids = await page.locator('#processes li[data-pid]').evaluateAll((ls) => ls.map((l) => l.dataset.pid));
    const pid = pids.find((p) => Number(p) > 1) || pids[0];
    await page.locator(`#processes li[data-pid="${pid}"] > .proc-row .proc-pick`).click();
    await waitTable(page, 'by instructions, ');
    const k = await tableMatchesFlame(page, srv, job.id, `pid=${pid}`, `pid ${pid}`);
    await page.screenshot({ path: screenshotPath('views-table-process.png'), fullPage: true });
    await page.click('#proc-chip .chip-clear');
    await waitTable(page, 'by instructions (');
    return `pid ${pid}: ${k} functions`;
  });
}

async function flameCases(page, srv, job) {
  const base = `${srv.url}/#/jobs/${job.id}`;
  const frameOf = (name) => page.locator(`#flame g.frame[name="${name}"]`).first();
  const yOf = (name) => frameOf(name).evaluate((g) => Number(g.getAttribute('transform').match(/,\s*([\d.]+)/)[1]));
  await R.run('flame graph: icicle puts the root on top, flame at the bottom', async () => {
    await page.goto(base);
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await sleep(400);
    const flameY = await yOf('all');
    await page.selectOption('#layout', 'icicle');
    await sleep(400);
    const icicleY = await yOf('all');
    check(icicleY === 0 && flameY > 0, `root at y ${flameY} (flame), ${icicleY} (icicle)`);
    await page.screenshot({ path: screenshotPath('views-icicle.png') });
    await page.selectOption('#layout', 'flame');
    await sleep(300);
    return `y ${flameY} -> 0`;
  });

  await R.run('flame graph: heaviest first, or by name', async () => {
    // the drawn children of the node with the most drawn children
    const order = () => page.locator('#flame g.frame').evaluateAll((gs) => {
      const ds = gs.map((g) => d3.select(g).datum());
      const drawn = new Set(ds.map((d) => d.id));
      const p = ds.filter((d) => d.children).sort((a, b) => b.children.filter((c) => drawn.has(c.id)).length -
        a.children.filter((c) => drawn.has(c.id)).length)[0];
      return p.children.filter((c) => drawn.has(c.id)).sort((a, b) => a.x0 - b.x0)
        .map((c) => [c.data.name, c.data.value]);
    });
    const byWeight = await order();
    check(byWeight.length > 2, `${byWeight.length} children`);
    check(byWeight.every((c, i) => i === 0 || byWeight[i - 1][1] >= c[1]), `not heaviest first: ${byWeight}`);
    await page.selectOption('#order', 'name');
    await sleep(400);
    const byName = (await order()).map((c) => c[0]);
    const sorted = [...byName].sort((a, b) => a.localeCompare(b));
    check(JSON.stringify(byName) === JSON.stringify(sorted), `not by name: ${byName}`);
    await page.selectOption('#order', 'weight');
    await sleep(300);
    return `${byWeight.map((c) => c[0]).join(', ')}`;
  });

  await R.run('flame graph: the hidden nodes are counted and "show all" draws them', async () => {
    const all = await (await fetch(`${srv.url}/api/v1/jobs/${job.id}/flamegraph?max_nodes=0`)).json();
    await page.goto(`${base}?nodes=20`);
    await page.reload();
    await page.waitForSelector('#hidden-nodes', { timeout: 20000 });
    const note = await page.locator('#hidden-nodes').innerText();
    check(note.includes(`20 of ${all.nodes.toLocaleString('en-US')}`), `note "${note}", ${all.nodes} nodes in all`);
    await page.click('#show-all-nodes');
    await page.waitForFunction((k) => document.getElementById('flame').dataset.nodes === String(k), all.nodes,
      { timeout: 20000 });
    check(!(await page.locator('#hidden-nodes').count()), 'the note stays after show all');
    check(page.url().includes('nodes=all'), `URL ${page.url()}`);
    return `20 of ${all.nodes}, then all`;
  });

  await R.run('flame graph: the tooltip stays inside the window', async () => {
    await page.goto(base);
    await page.reload();
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await sleep(400);
    await page.evaluate(() => document.getElementById('flame').scrollIntoView({ block: 'end' }));
    const box = await page.locator('#flame svg').boundingBox();
    const vp = page.viewportSize();
    // the bottom-right corner of the root frame: the widest, lowest frame
    await page.mouse.move(box.x + box.width - 3, box.y + box.height - 8);
    const tip = page.locator('.d3-flame-graph-tip');
    await tip.waitFor({ state: 'visible' });
    const r = await tip.boundingBox();
    check(r.x >= 0 && r.y >= 0 && r.x + r.width <= vp.width && r.y + r.height <= vp.height,
      `tip at ${JSON.stringify(r)} in ${vp.width}x${vp.height}`);
    await page.screenshot({ path: screenshotPath('views-tooltip.png') });
    await page.mouse.move(5, 5);
    return `tip at ${r.x.toFixed(0)},${r.y.toFixed(0)}`;
  });

  await R.run('flame graph: keyboard: Tab, arrows, Enter zooms, Escape resets', async () => {
    const root = frameOf('all');
    await root.focus();
    const focused = () => page.evaluate(() => {
      const g = document.activeElement.closest('g.frame');
      return g ? d3.select(g).datum().data.name : null;
    });
    check(await focused() === 'all' && await root.getAttribute('tabindex') === '0', 'the root is not focusable');
    await page.keyboard.press('ArrowUp');
    const child = await focused();
    const want = await root.evaluate((g) => [...d3.select(g).datum().children].sort((a, b) => b.value - a.value)[0].data.name);
    check(child === want, `ArrowUp went to ${child}, the heaviest child is ${want}`);
    for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowUp');
    const deep = await focused();
    await page.keyboard.press('ArrowDown');
    const back = await focused();
    const parent = await page.evaluate(() => d3.select(document.activeElement.closest('g.frame')).datum().data.name);
    check(back === parent && back !== deep, `ArrowDown from ${deep} went to ${back}`);
    await page.keyboard.press('Enter');
    await sleep(500);
    const full = await page.locator('#flame svg').evaluate((s) => Number(s.getAttribute('width')));
    const w = await page.evaluate(() => Number(document.activeElement.closest('g.frame').querySelector('rect').getAttribute('width')));
    check(Math.abs(w - full) < 1, `Enter: ${back} is ${w} of ${full} px`);
    check(page.url().includes('zoom='), `zoom not in the URL: ${page.url()}`);
    await page.keyboard.press('Escape');
    await sleep(400);
    return `all -> ${child} ... ${deep} -> ${back}, zoomed`;
  });

  await R.run('URL state: a reload shows the same view', async () => {
    await page.goto(base);
    await page.reload();
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await sleep(300);
    await page.selectOption('#metric', 'calls');
    await waitTable(page, 'by calls');
    await page.selectOption('#layout', 'icicle');
    await page.selectOption('#order', 'name');
    await page.fill('#search', 'msort');
    await page.fill('#table-search', 'ht_');
    await frameOf('main').click();
    await sleep(500);
    const url = page.url();
    await page.reload();
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await waitTable(page, 'by calls');
    await sleep(600);
    const got = {
      metric: await page.inputValue('#metric'), layout: await page.inputValue('#layout'),
      order: await page.inputValue('#order'), search: await page.inputValue('#search'),
      table: await page.inputValue('#table-search'),
    };
    const want = { metric: 'calls', layout: 'icicle', order: 'name', search: 'msort', table: 'ht_' };
    check(JSON.stringify(got) === JSON.stringify(want), `after reload ${JSON.stringify(got)} (${url})`);
    const full = await page.locator('#flame svg').evaluate((s) => Number(s.getAttribute('width')));
    const w = await frameOf('main').evaluate((g) => Number(g.querySelector('rect').getAttribute('width')));
    check(Math.abs(w - full) < 1, `main is ${w} of ${full} px: the zoom is lost`);
    const rows = await page.locator('#top tbody tr').evaluateAll((trs) => trs.map((t) => t.dataset.name));
    check(rows.length > 0 && rows.every((r) => r.includes('ht_')), `table rows ${rows}`);
    const lit = await page.locator('#flame g.frame').evaluateAll((gs) => gs.filter((g) =>
      getComputedStyle(g.querySelector('rect')).fill === 'rgb(230, 0, 230)').length);
    check(lit > 0, 'search not highlighted after reload');
    await page.screenshot({ path: screenshotPath('views-url-state.png'), fullPage: true });
    return url.slice(url.indexOf('#'));
  });

  await R.run('sandwich: callers and callees of a recursive function = oobprof fold', async () => {
    const fn = 'msort';
    const want = { callers: new Map(), callees: new Map(), total: 0 };
    for (const line of oobprof(['fold', '--elf', ELF, TRACE]).split('\n')) {
      const m = line.match(/^(.*) (\d+)$/);
      if (!m) continue;
      const st = m[1].split(';');
      const w = Number(m[2]);
      const i = st.indexOf(fn);
      if (i < 0) continue;
      want.total += w;
      if (i > 0) want.callers.set(st[i - 1], (want.callers.get(st[i - 1]) || 0) + w);
      if (i + 1 < st.length) want.callees.set(st[i + 1], (want.callees.get(st[i + 1]) || 0) + w);
    }
    await page.goto(base);
    await page.reload();
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await waitTable(page, 'by instructions');
    await page.fill('#table-search', fn);
    await page.click(`.sandwich-open[data-fn="${fn}"]`);
    await page.waitForSelector('#sandwich-callers-table', { timeout: 20000 });
    const read = (sel) => page.locator(`${sel} tbody tr[data-name]`).evaluateAll((trs) =>
      trs.map((tr) => [tr.dataset.name, Number(tr.children[1].innerText.replace(/,/g, ''))]));
    const callers = new Map(await read('#sandwich-callers-table'));
    const callees = new Map(await read('#sandwich-callees-table'));
    const same = (a, b) => a.size === b.size && [...a].every(([k, v]) => b.get(k) === v);
    check(same(callers, want.callers), `callers ${JSON.stringify([...callers])}, fold ${JSON.stringify([...want.callers])}`);
    check(same(callees, want.callees), `callees ${JSON.stringify([...callees])}, fold ${JSON.stringify([...want.callees])}`);
    const sum = await page.locator('#sandwich-summary').innerText();
    check(sum.includes(want.total.toLocaleString('en-US')), `summary "${sum}", fold total ${want.total}`);
    check(page.url().includes(`fn=${fn}`), `URL ${page.url()}`);
    await page.locator('#sandwich').screenshot({ path: screenshotPath('views-sandwich.png') });
    return `${callers.size} callers, ${callees.size} callees, ${want.total} instructions`;
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), path.join(BUILD, 'oobprof'), TRACE, ELF, CHROMIUM,
    path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_views');
  const br = await startBrowser(pw, 'views');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    const job = await jobFor(srv.url, TRACE, ELF, 'mixed');
    const end = job.summary.instructions;
    await R.run('table: a window is exactly oobprof top --window', async () => {
      const from = Math.floor(end / 3);
      const to = Math.floor((2 * end) / 3);
      const truth = JSON.parse(oobprof(['top', '--json', '--window', `${from}:${to}`, '--elf', ELF, TRACE]));
      // the CLI lists every function of the run, those that did not run in
      // the window with zeros; the table (as the flame graph) has those
      // that did
      truth.functions = truth.functions.filter((f) => f.total_instructions || f.calls);
      truth.count = truth.functions.length;
      await page.goto(`${srv.url}/#/jobs/${job.id}?from=${from}&to=${to}`);
      await waitTable(page, 'window');
      const rows = await allTableRows(page);
      check(rows.length === truth.count, `${rows.length} rows, oobprof top --window ${truth.count}`);
      for (const f of truth.functions) {
        const r = rows.find((x) => x[0] === f.name);
        check(r && n(r[3]) === f.self_instructions && n(r[4]) === f.total_instructions && n(r[2]) === f.calls,
          `${f.name}: row ${r && r.join('|')}, oobprof ${f.self_instructions}/${f.total_instructions}/${f.calls}`);
      }
      const root = await page.locator('#flame g.frame[name="all"]').evaluate((g) => d3.select(g).datum().data.value);
      const sum = truth.functions.reduce((a, f) => a + f.self_instructions, 0);
      check(root === sum, `flame graph root ${root}, oobprof top --window sums to ${sum}`);
      const chip = await page.locator('#win-chip').innerText();
      check(chip.includes(from.toLocaleString('en-US')), `chip "${chip}"`);
      await page.screenshot({ path: screenshotPath('views-window.png'), fullPage: true });
      return `[${from}, ${to}): ${rows.length} functions, ${sum} instructions`;
    });

    await flameCases(page, srv, job);
    await spikeCases(page, srv);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
