// test_viewer.mjs: the viewer in a real browser (Debian's Chromium, headless,
// no network beyond 127.0.0.1) against the real oobprofd. A real RISC-V
// program's trace and ELF are uploaded through the page's own form; the job
// page's flame graph must show the functions `oobprof top` finds (names and
// exact counts in the tooltip), search must highlight, a click must zoom.
// Screenshots of both pages are left in tests/out/screenshots/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, OUT, Reporter, SRC, check, checkClean, cliTop, jobFor, loadPlaywright,
  missing, runMain, screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const SHARED = process.env.OOB_SHARED || path.join(SRC, '../shared');

const R = new Reporter('test_viewer');
const TRACE = path.join(GEN, 'progs/mixed.oobt');
const ELF = path.join(GEN, 'progs/mixed');
const HIGHLIGHT = 'rgb(230, 0, 230)';

// A Linux boot in Spike (the shared fixture, its first 300,000
// instructions): kernel frames in blues, user frames in oranges, and the
// user/kernel filter keeping only the right ones.
async function kernelCase(page, srv) {
  const log = path.join(GEN, 'readers/spike.log');
  const elfs = [path.join(GEN, 'vmlinux'), path.join(SHARED, 'fixtures/spike/init'),
    path.join(SHARED, 'fixtures/spike/prog')];
  const why = missing(log, ...elfs);
  if (why) {
    R.skip('kernel frames coloured apart', why);
    return;
  }
  const cut = path.join(OUT, 'browser_viewer/spike300k.log');
  fs.writeFileSync(cut, spawnSync('head', ['-n', '300000', log], { maxBuffer: 1 << 30 }).stdout);
  const kinds = new Map();
  for (const f of cliTop(cut, elfs).functions) kinds.set(f.name, kinds.has(f.name) ? 'ambiguous' : f.kind);
  const job = await jobFor(srv.url, cut, elfs, 'spike boot');
  const hueOf = (fill) => {
    const [r, , b] = fill.match(/\d+/g).map(Number);
    return b > r ? 'blue' : 'orange';
  };
  const frames = async () => page.locator('#flame g.frame').evaluateAll((gs) => gs.map((g) => [
    g.getAttribute('name'), getComputedStyle(g.querySelector('rect')).fill]));
  await R.run('kernel frames coloured apart from user frames (Spike Linux boot)', async () => {
    await page.goto(`${srv.url}/#/jobs/${job.id}`);
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await sleep(500);
    let nk = 0;
    let nu = 0;
    for (const [name, fill] of await frames()) {
      const k = kinds.get(name);
      if (k === 'kernel') {
        nk++;
        check(hueOf(fill) === 'blue', `kernel ${name} is ${fill}`);
      } else if (k === 'user') {
        nu++;
        check(hueOf(fill) === 'orange', `user ${name} is ${fill}`);
      }
    }
    check(nk > 10 && nu > 3, `${nk} kernel and ${nu} user frames drawn`);
    await page.screenshot({ path: screenshotPath('job-kernel.png'), fullPage: true });
    return `${nk} kernel, ${nu} user frames`;
  });
  await R.run('the user/kernel filter keeps only the weight of those frames', async () => {
    const top = cliTop(cut, elfs).functions;
    const want = {
      kernel: top.filter((f) => f.kind === 'kernel' || f.kind === 'marker')
        .reduce((a, f) => a + f.self_instructions, 0),
      user: top.filter((f) => f.kind === 'user' || f.kind === 'process' || f.kind === 'inline')
        .reduce((a, f) => a + f.self_instructions, 0),
    };
    const out = [];
    for (const priv of ['kernel', 'user']) {
      await page.selectOption('#priv', priv);
      await sleep(600);
      // the data d3 bound to each drawn frame: its kind and own weight
      const nodes = await page.locator('#flame g.frame').evaluateAll((gs) => gs.map((g) => {
        const d = d3.select(g).datum().data;
        return [d.name, d.libtype, d.self, d.value];
      }));
      const root = nodes.find((n) => n[1] === 'root');
      check(root && root[3] === want[priv], `${priv}: root ${root && root[3]}, oobprof top says ${want[priv]}`);
      const other = priv === 'kernel' ? ['user', 'process'] : ['kernel', 'marker'];
      const heavy = nodes.filter((n) => other.includes(n[1]) && n[2] !== 0);
      check(heavy.length === 0, `${priv}: frames of the other side with weight: ${heavy.slice(0, 3)}`);
      out.push(`${priv} ${want[priv]}`);
    }
    await page.selectOption('#priv', 'all');
    await sleep(300);
    return out.join(', ');
  });
}

// A TracerV trace (cycles): the cycles metric, IPC in the tooltip and table.
async function cyclesCase(page, srv) {
  const trace = path.join(GEN, 'readers/tv-c-v63-w1.bin');
  const elf = path.join(GEN, 'readers/rdprog');
  const why = missing(trace, elf);
  if (why) {
    R.skip('cycles metric and IPC', why);
    return;
  }
  const top = cliTop(trace, elf, 'cycles').functions;
  const job = await jobFor(srv.url, trace, elf, 'tracerv run');
  await R.run('cycles metric and IPC (TracerV trace)', async () => {
    await page.goto(`${srv.url}/#/jobs/${job.id}`);
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await page.selectOption('#metric', 'cycles');
    await page.waitForFunction(() => document.querySelector('#top caption')?.textContent.includes('by cycles'));
    await sleep(500);
    const root = await page.locator('#flame g.frame[name="all"]').evaluate((g) => d3.select(g).datum().data.value);
    const want = top.reduce((a, f) => a + f.self_cycles, 0);
    check(root === want, `root ${root} cycles, oobprof top sums to ${want}`);
    const f = top.find((x) => x.name === 'main');
    await page.locator('#flame g.frame[name="main"]').first().hover();
    const tip = await page.locator('.d3-flame-graph-tip').innerText();
    const ipc = (f.total_instructions / f.total_cycles).toFixed(3);
    check(tip.includes(f.total_cycles.toLocaleString('en-US')) && tip.includes(ipc),
      `tooltip "${tip}" lacks ${f.total_cycles} cycles / IPC ${ipc}`);
    await page.fill('#table-search', 'main'); // the table is paged: find the row
    const row = await page.locator('#top tbody tr').evaluateAll((trs) => trs.map((tr) => tr.innerText)
      .find((t) => t.split('\t')[0] === 'main'));
    check(row && row.includes(ipc), `table row "${row}" lacks IPC ${ipc}`);
    await page.mouse.move(5, 5);
    return `${want} cycles, main IPC ${ipc}`;
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
  const truth = cliTop(TRACE, ELF);
  // The biggest functions by total: wide enough to be drawn and labelled.
  const expected = truth.functions.filter((f) => f.kind === 'user')
    .sort((a, b) => b.total_instructions - a.total_instructions).slice(0, 8);
  const srv = await startServer('browser_viewer');
  const br = await startBrowser(pw, 'viewer');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('dialog', (d) => d.accept());
  let jobId = null;
  try {
    await R.run('dashboard: the format list is what `oobprof --help` reads', async () => {
      const help = spawnSync(path.join(BUILD, 'oobprof'), ['--help'], { encoding: 'utf8' });
      const m = (help.stdout + help.stderr).replace(/\s+/g, ' ').match(/trace format \(([^)]*)\)/);
      check(m, 'no --format list in oobprof --help');
      const want = m[1].split(', ');
      await page.goto(srv.url + '/');
      await page.waitForFunction((n) => document.querySelectorAll('#up-format option').length === n,
        want.length, { timeout: 10000 }).catch(() => {});
      const got = await page.locator('#up-format option').evaluateAll((os) => os.map((o) => o.value));
      check(JSON.stringify(got) === JSON.stringify(want), `options ${got} != ${want}`);
    });
    jobId = await R.run('dashboard: a job uploaded through the form is listed and finishes', async () => {
      await page.goto(srv.url + '/');
      await page.waitForSelector('#upload-form');
      await page.setInputFiles('#up-trace', TRACE);
      await page.setInputFiles('#up-bins', ELF);
      await page.uncheck('#up-open'); // stay on the dashboard (test_dashboard opens the job)
      await page.click('#up-submit');
      const row = page.locator('#jobs tr[data-job]').first();
      await row.waitFor({ timeout: 20000 });
      await page.waitForSelector('#jobs tr[data-state="done"]', { timeout: 60000 });
      const id = await page.locator('#jobs tr[data-state="done"]').first().getAttribute('data-job');
      const traceRow = await page.locator('#traces tbody tr').first().innerText();
      check(traceRow.includes('mixed.oobt') && traceRow.includes('oobt'), 'trace row: ' + traceRow);
      const binRow = await page.locator('#binaries tbody tr').first().innerText();
      check(binRow.includes('mixed') && binRow.includes('riscv'), 'binary row: ' + binRow);
      await page.screenshot({ path: screenshotPath('dashboard.png'), fullPage: true });
      return id;
    });
    if (!jobId) return;

    await R.run('job page: the flame graph shows the functions oobprof top finds', async () => {
      await page.goto(`${srv.url}/#/jobs/${jobId}`);
      await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
      await sleep(400); // d3-flame-graph animates the widths
      const names = new Set(await page.locator('#flame g.frame').evaluateAll(
        (gs) => gs.map((g) => g.getAttribute('name'))));
      const absent = expected.filter((f) => !names.has(f.name)).map((f) => f.name);
      check(absent.length === 0, `not drawn: ${absent.join(', ')} (drawn: ${[...names].slice(0, 20).join(', ')})`);
      const labels = await page.locator('#flame .d3-flame-graph-label').allInnerTexts();
      check(labels.includes(expected[0].name), `no visible label ${expected[0].name}`);
      return `${expected.length} functions, ${names.size} frames drawn`;
    });

    await R.run('tooltip: exact calls and instructions of a context', async () => {
      // main runs once, from one context: its node carries the function's totals.
      const f = truth.functions.find((x) => x.name === 'main');
      check(f, 'oobprof top has no main');
      await page.locator('#flame g.frame[name="main"]').first().hover();
      const tip = page.locator('.d3-flame-graph-tip');
      await tip.waitFor({ state: 'visible' });
      const text = await tip.innerText();
      const want = f.total_instructions.toLocaleString('en-US');
      check(text.includes('main') && text.includes(want) && /calls\s+1\b/.test(text),
        `tooltip "${text}" lacks main / ${want} instructions / 1 call`);
      await page.mouse.move(5, 5);
      return `${want} instructions`;
    });

    await R.run('search highlights the matching frames only', async () => {
      const term = expected[1].name.slice(0, Math.max(3, expected[1].name.length - 2));
      await page.fill('#search', term);
      await sleep(400);
      const fills = await page.locator('#flame g.frame').evaluateAll((gs) => gs.map((g) => [
        g.getAttribute('name'), getComputedStyle(g.querySelector('rect')).fill]));
      const bad = fills.filter(([n, fill]) => n.toLowerCase().includes(term.toLowerCase()) !== (fill === 'rgb(230, 0, 230)'));
      const hits = fills.filter(([, fill]) => fill === HIGHLIGHT).length;
      check(hits > 0, `nothing highlighted for "${term}"`);
      check(bad.length === 0, `wrongly coloured: ${bad.slice(0, 5).map((b) => b.join(' ')).join('; ')}`);
      const details = await page.locator('#details').innerText();
      check(details.includes('match'), `details: ${details}`);
      await page.screenshot({ path: screenshotPath('job-search.png'), fullPage: false });
      // a plain substring, not a RegExp: "(" and ".*" are just characters
      for (const t of ['(', '.*']) {
        await page.fill('#search', t);
        await sleep(300);
        const lit = await page.locator('#flame g.frame').evaluateAll((gs, x) => gs.filter((g) =>
          getComputedStyle(g.querySelector('rect')).fill === 'rgb(230, 0, 230)').map((g) => g.getAttribute('name'))
          .filter((n) => !n.includes(x)), t);
        check(lit.length === 0, `"${t}" highlighted ${lit.slice(0, 3)}`);
      }
      await page.click('#clear-search');
      await sleep(300);
      return `"${term}": ${hits} frames`;
    });

    await R.run('a click zooms into the frame; reset zooms out', async () => {
      const target = expected.find((f) => f.name !== 'main' && f.name !== '_start' &&
        !f.name.startsWith('__libc')) || expected[2];
      const g = page.locator(`#flame g.frame[name="${target.name}"]`).first();
      const full = await page.locator('#flame svg').evaluate((s) => Number(s.getAttribute('width')));
      const before = await g.evaluate((x) => Number(x.querySelector('rect').getAttribute('width')));
      await g.click();
      await sleep(500);
      const after = await g.evaluate((x) => Number(x.querySelector('rect').getAttribute('width')));
      check(before < full * 0.999 && Math.abs(after - full) < 1, `${target.name}: ${before} then ${after} of ${full}`);
      await page.click('#reset-zoom');
      await sleep(500);
      const back = await g.evaluate((x) => Number(x.querySelector('rect').getAttribute('width')));
      check(Math.abs(back - before) < 1, `after reset ${back}, before ${before}`);
      return `${target.name}: ${before.toFixed(0)} -> ${after.toFixed(0)} px`;
    });

    await R.run('top table: sortable, numbers as oobprof top', async () => {
      await page.waitForSelector('#top table tbody tr');
      await page.click('#top th button[data-key="calls"]');
      const rows = await page.locator('#top table tbody tr').evaluateAll((trs) => trs.slice(0, 5).map(
        (tr) => [...tr.children].map((td) => td.innerText)));
      const calls = rows.map((r) => Number(r[2].replace(/,/g, '')));
      check(calls.every((c, i) => i === 0 || calls[i - 1] >= c), `not sorted by calls: ${calls}`);
      const byName = new Map(truth.functions.map((f) => [f.name, f]));
      for (const r of rows) {
        const f = byName.get(r[0]);
        check(f && f.calls === Number(r[2].replace(/,/g, '')) &&
          f.total_instructions === Number(r[4].replace(/,/g, '')), `row ${r.join(' | ')} differs from oobprof top`);
      }
      return `first: ${rows[0][0]} ${rows[0][2]} calls`;
    });

    await R.run('metric switch re-renders (calls)', async () => {
      await page.selectOption('#metric', 'calls');
      await page.waitForFunction(() => document.querySelector('#top caption')?.textContent.includes('by calls'));
      await sleep(400);
      const names = await page.locator('#flame g.frame').count();
      check(names > 3, `${names} frames after the switch`);
      const href = await page.locator('a[data-export="pprof"]').getAttribute('href');
      check(href.includes('metric=calls'), `export link ${href}`);
      await page.selectOption('#metric', 'instructions');
      await sleep(500);
    });

    await R.run('kernel/user filter and export links', async () => {
      await page.selectOption('#priv', 'kernel');
      await sleep(500);
      // a user-space program: nothing left in kernel-only view
      const n = await page.locator('#flame g.frame').count();
      check(n <= 1, `${n} frames in the kernel-only view of a user program`);
      await page.selectOption('#priv', 'all');
      await sleep(500);
      const links = await page.locator('#exports a[data-export]').evaluateAll((as) => as.map((a) => a.href));
      for (const l of links) {
        const resp = await page.request.get(l);
        check(resp.ok(), `${l}: ${resp.status()}`);
      }
      const ss = await page.locator('#open-speedscope').getAttribute('href');
      check(ss.startsWith('/speedscope/index.html#profileURL='), ss);
      await page.screenshot({ path: screenshotPath('job.png'), fullPage: true });
      return `${links.length} export links answer 200`;
    });

    await kernelCase(page, srv);
    await cyclesCase(page, srv);

    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
