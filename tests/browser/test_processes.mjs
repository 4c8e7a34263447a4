// test_processes.mjs: the job page's process tree and per-process flame
// graph in a real browser against the real oobprofd. The Spike full-system
// run (Linux, /init forking pids 15..18, pid 18 exec'ing /prog) is uploaded;
// the Processes card must nest 15..18 under 1 and show each one's share of
// the processes' instructions; a click on pid 18 must redraw the flame graph
// with exactly that process's weight: the value the API gives for ?pid=18,
// itself checked against the CLI's folded stacks under "prog 18" (text, a
// separate path). A user-space job must keep the card hidden.
// Screenshot: tests/out/screenshots/job-processes.png.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, SRC, api, check, checkClean, jobFor, loadPlaywright, missing,
  runMain, screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const SHARED = process.env.OOB_SHARED || path.join(SRC, '../shared');
const R = new Reporter('test_processes');
const LOG = path.join(GEN, 'readers/spike.log');
const ELFS = [path.join(GEN, 'vmlinux'), path.join(SHARED, 'fixtures/spike/init'),
  path.join(SHARED, 'fixtures/spike/prog')];
const CHILDREN = [15, 16, 17, 18];

// `oobprof fold` on the same inputs, summed by first frame (the process
// root, "<comm> <pid>"): each process's instructions from the folded text.
function cliByRoot() {
  const args = ['fold'];
  for (const e of ELFS) args.push('--elf', e);
  const r = spawnSync(path.join(BUILD, 'oobprof'), [...args, LOG], { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.status !== 0) throw new Error('oobprof fold failed: ' + r.stderr);
  const sums = new Map();
  for (const line of r.stdout.split('\n')) {
    const sp = line.lastIndexOf(' ');
    if (sp < 0) continue;
    const first = line.slice(0, sp).split(';')[0];
    sums.set(first, (sums.get(first) || 0) + Number(line.slice(sp + 1)));
  }
  return sums;
}

// The value d3 bound to the flame graph's root frame.
const rootValue = (page) => page.locator('#flame g.frame[name="all"]').evaluate((g) => d3.select(g).datum().data.value);

async function waitRoot(page, want) {
  try {
    await page.waitForFunction((v) => {
      const g = document.querySelector('#flame g.frame[name="all"]');
      return g && d3.select(g).datum().data.value === v;
    }, want, { timeout: 20000 });
  } catch (_) { /* reported by the caller's check */ }
  return rootValue(page);
}

async function treeCases(page, srv, job, folded) {
  const procs = (await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/processes`)).processes;
  const total = procs.reduce((a, p) => a + p.instructions.user + p.instructions.kernel, 0);

  await R.run('process tree: pids 1, 15..18, children nested under 1, shares as the API', async () => {
    await page.goto(`${srv.url}/#/jobs/${job.id}`);
    await page.waitForSelector('#flame svg g.frame', { timeout: 30000 });
    await page.waitForSelector('#processes li[data-pid="18"]', { timeout: 20000 });
    for (const pid of [1, ...CHILDREN]) {
      check(await page.locator(`#processes li[data-pid="${pid}"]`).count() === 1, `pid ${pid} not listed once`);
    }
    const nested = await page.locator('#processes li[data-pid="1"] > ul > li').evaluateAll(
      (lis) => lis.map((li) => Number(li.dataset.pid)));
    check(JSON.stringify(nested.sort((a, b) => a - b)) === JSON.stringify(CHILDREN), `under pid 1: ${nested}`);
    const topLevel = await page.locator('#processes ul.proc-tree > li').evaluateAll(
      (lis) => lis.map((li) => Number(li.dataset.pid)));
    check(topLevel.includes(1) && !CHILDREN.some((c) => topLevel.includes(c)), `top level: ${topLevel}`);
    const out = [];
    for (const pid of [1, 18]) {
      const p = procs.find((x) => x.pid === pid);
      const w = p.instructions.user + p.instructions.kernel;
      const want = (100 * w / total).toFixed(2) + '%';
      const got = await page.locator(`#processes li[data-pid="${pid}"] > .proc-row .share-text`).innerText();
      check(got === want, `pid ${pid}: share "${got}", API counts give ${want}`);
      const label = await page.locator(`#processes li[data-pid="${pid}"] > .proc-row .proc-pick`).innerText();
      check(label === `${p.comm} ${pid}`, `pid ${pid}: label "${label}"`);
      out.push(`${pid} ${got}`);
    }
    const exec = await page.locator('#processes li[data-pid="18"] > .proc-row .proc-exec').innerText();
    check(exec.includes('/prog'), `pid 18 exec: "${exec}"`);
    return out.join(', ');
  });

  await R.run('process tree: the keyboard folds and unfolds a parent', async () => {
    const toggle = page.locator('#processes li[data-pid="1"] > .proc-row .proc-toggle');
    await toggle.focus();
    await page.keyboard.press('Enter');
    const child = page.locator('#processes li[data-pid="15"]');
    check(!(await child.isVisible()) && await toggle.getAttribute('aria-expanded') === 'false', 'Enter did not fold pid 1');
    await page.keyboard.press('Space');
    check(await child.isVisible() && await toggle.getAttribute('aria-expanded') === 'true', 'Space did not unfold pid 1');
  });

  await R.run('a click on pid 18 shows its flame graph: page = API ?pid=18 = CLI folded', async () => {
    const apiFg = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/flamegraph?pid=18`);
    const cli = folded.get('prog 18');
    check(cli > 0 && apiFg.value === cli, `API ?pid=18 ${apiFg.value}, CLI folded "prog 18" ${cli}`);
    await page.locator('#processes li[data-pid="18"] > .proc-row .proc-pick').click();
    await page.waitForSelector('#proc-chip', { timeout: 10000 });
    const chip = await page.locator('#proc-chip').innerText();
    check(chip.startsWith('process: prog 18'), `chip "${chip}"`);
    const got = await waitRoot(page, cli);
    check(got === cli, `page root ${got}, want ${cli}`);
    await sleep(400); // d3-flame-graph animates the widths
    const names = new Set(await page.locator('#flame g.frame').evaluateAll((gs) => gs.map((g) => g.getAttribute('name'))));
    check(names.has('prog 18') && !names.has('init 1') && !names.has('init 17'), `frames drawn: ${[...names].slice(0, 8)}`);
    check(await page.locator('#processes li[data-pid="18"] > .proc-row .proc-pick').getAttribute('aria-pressed') === 'true',
      'pid 18 not marked pressed');
    await page.screenshot({ path: screenshotPath('job-processes.png'), fullPage: true });
    return `${got} instructions`;
  });

  await R.run('the chip clears the filter: the whole graph again', async () => {
    const all = (await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/flamegraph`)).value;
    await page.locator('#proc-chip button').click();
    const got = await waitRoot(page, all);
    check(got === all, `page root ${got} after clearing, API ${all}`);
    check(await page.locator('#proc-filter').isHidden(), 'chip still shown');
    return `${all} instructions`;
  });
}

// A user-space program (no kernel, no processes): no card, a flame graph.
async function noProcessesCase(page, srv) {
  const trace = path.join(GEN, 'progs/mixed.oobt');
  const elf = path.join(GEN, 'progs/mixed');
  const why = missing(trace, elf);
  if (why) {
    R.skip('a job without processes keeps the card hidden', why);
    return;
  }
  const job = await jobFor(srv.url, trace, elf, 'mixed');
  await R.run('a job without processes keeps the card hidden', async () => {
    const procs = (await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/processes`)).processes;
    check(procs.length === 0, `${procs.length} processes`);
    await page.goto(`${srv.url}/#/jobs/${job.id}`);
    await page.waitForSelector('#flame svg g.frame', { timeout: 20000 });
    await sleep(500);
    check(await page.locator('#processes').isHidden(), 'Processes card shown');
    check(await page.locator('#proc-chip').count() === 0, 'a process chip is shown');
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), path.join(BUILD, 'oobprof'), LOG, ...ELFS, CHROMIUM,
    path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const folded = cliByRoot();
  const srv = await startServer('browser_processes');
  const br = await startBrowser(pw, 'processes');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    const job = await jobFor(srv.url, LOG, ELFS, 'spike full system');
    await treeCases(page, srv, job, folded);
    await noProcessesCase(page, srv);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
