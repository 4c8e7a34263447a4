// test_summary.mjs: the job page's summary in a real browser against the
// real oobprofd, each figure read back from the CLI on the same files:
// - the trust warnings: a trace given no ELF ("ran in user code of no given
//   ELF") and one given another program's ELF ("differ from mutual's") show
//   the warning `oobprof stats` prints on stderr, word for word, one list
//   item per warning, of the API's kinds; a job with the right ELF shows none;
// - the calls line says calls and tail calls apart, with returns and traps:
//   `oobprof stats`'s calls, tail_calls, returns and traps;
// - a task-event log chosen in the upload form goes up as format events
//   and into the job's spec: the job's processes are `oobprof processes
//   --events`'s on the same files (pids 42 and 43, as the log declares).
// Screenshot: tests/out/screenshots/summary-warnings.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, OUT, Reporter, api, check, checkClean, jobFor, loadPlaywright, missing,
  runMain, screenshotPath, shutdown, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_summary');
const TRACE = path.join(GEN, 'progs/mixed.oobt');
const ELF = path.join(GEN, 'progs/mixed');
const OTHER = path.join(GEN, 'progs/mutual');

// `oobprof stats` on the same inputs: its counters, and its warnings
// (stderr lines "oobprof: warning: ...").
function cliStats(elfs) {
  const args = ['stats'];
  for (const e of elfs) args.push('--elf', e);
  const r = spawnSync(path.join(BUILD, 'oobprof'), [...args, TRACE], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('oobprof stats failed: ' + r.stderr);
  const stats = {};
  for (const l of r.stdout.split('\n')) {
    const m = l.match(/^(\w+): (\d+)$/);
    if (m) stats[m[1]] = Number(m[2]);
  }
  const warnings = r.stderr.split('\n').filter((l) => l.startsWith('oobprof: warning: '))
    .map((l) => l.slice('oobprof: warning: '.length));
  return { stats, warnings };
}

// The summary's rows (dt -> dd text) and its warning items.
async function readSummary(page, url, id) {
  await page.goto(`${url}/#/jobs/${id}`);
  await page.waitForSelector('dl.summary dd');
  const rows = await page.locator('dl.summary').evaluate((dl) => {
    const out = {};
    const dts = [...dl.querySelectorAll('dt')];
    for (const dt of dts) out[dt.textContent] = dt.nextElementSibling.textContent;
    return out;
  });
  const warnings = await page.locator('ul.warnings li').evaluateAll((lis) =>
    lis.map((li) => [li.getAttribute('data-kind'), li.textContent]));
  return { rows, warnings };
}

const digits = (s) => Number(String(s).replace(/[^0-9]/g, ''));

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), CHROMIUM, TRACE, ELF, OTHER);
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_summary');
  const br = await startBrowser(pw, 'summary');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    const cases = [
      ['no ELF: code of no given ELF', [], 'noelf'],
      ['another program\'s ELF: the instructions differ', [OTHER], 'other'],
    ];
    for (const [name, elfs, tag] of cases) {
      await R.run(`trust warning, ${name}`, async () => {
        const cli = cliStats(elfs);
        check(cli.warnings.length >= 1, `the CLI warned of nothing: ${JSON.stringify(cli)}`);
        const job = await jobFor(srv.url, TRACE, elfs, `mixed-${tag}`);
        const apiWarn = (job.summary && job.summary.warnings) || [];
        const { warnings } = await readSummary(page, srv.url, job.id);
        check(JSON.stringify(warnings.map((w) => w[1])) === JSON.stringify(cli.warnings),
          `page ${JSON.stringify(warnings)}, CLI ${JSON.stringify(cli.warnings)}`);
        check(JSON.stringify(warnings) === JSON.stringify(apiWarn.map((w) => [w.kind, w.message])),
          `page ${JSON.stringify(warnings)}, API ${JSON.stringify(apiWarn)}`);
        if (tag === 'other') await page.screenshot({ path: screenshotPath('summary-warnings.png') });
        return `${warnings.map((w) => w[0]).join(', ')}: ${warnings[0][1].slice(0, 70)}`;
      });
    }
    await R.run('the right ELF: no warning; calls, tail calls, returns, traps = oobprof stats', async () => {
      const cli = cliStats([ELF]);
      check(cli.warnings.length === 0, `the CLI warned: ${cli.warnings}`);
      const job = await jobFor(srv.url, TRACE, [ELF], 'mixed');
      const { rows, warnings } = await readSummary(page, srv.url, job.id);
      check(warnings.length === 0, `page warns: ${JSON.stringify(warnings)}`);
      const m = rows.calls.match(/^([\d,]+) \(tail calls: ([\d,]+);/);
      check(m, `calls row: ${rows.calls}`);
      const s = cli.stats;
      check(digits(m[1]) === s.calls && digits(m[2]) === s.tail_calls,
        `page calls ${m[1]}, tail ${m[2]}; CLI ${s.calls}, ${s.tail_calls}`);
      check(digits(rows.returns) === s.returns && digits(rows.traps) === s.traps,
        `page returns ${rows.returns}, traps ${rows.traps}; CLI ${s.returns}, ${s.traps}`);
      check(s.tail_calls > 0 && s.calls !== s.returns, `a trace without tail calls tests nothing: ${JSON.stringify(s)}`);
      return `${rows.calls}; returns ${rows.returns}`;
    });
    await R.run('task events chosen in the form reach the job: its processes = oobprof processes --events', async () => {
      // mixed, declared pid 42 that forks pid 43 a third of the way in
      // (as test_full_events.sh): the processes come from these lines only
      const n = fs.readFileSync(path.join(GEN, 'progs/mixed.hist'), 'utf8').split('\n')
        .reduce((a, l) => a + (Number(l.split(' ')[1]) || 0), 0);
      const k = Math.floor(n / 3);
      const ev = path.join(OUT, 'browser_summary', 'ev.jsonl');
      fs.writeFileSync(ev, [
        { event: 'exec', hart: 0, seq: 0, pid: 42, path: '/bin/mixed' },
        { event: 'switch', hart: 0, seq: 0, pid: 42 },
        { event: 'fork', hart: 0, seq: k, pid: 42, child: 43 },
        { event: 'switch', hart: 0, seq: k, pid: 43 },
      ].map((e) => JSON.stringify(e)).join('\n') + '\n');
      const cli = spawnSync(path.join(BUILD, 'oobprof'), ['processes', '--json', '--events', ev, '--elf', ELF, TRACE],
        { encoding: 'utf8' });
      check(cli.status === 0, `oobprof processes: ${cli.stderr}`);
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector('#upload-form');
      await page.setInputFiles('#up-trace', TRACE);
      await page.setInputFiles('#up-bins', ELF);
      await page.setInputFiles('#up-events', ev);
      await page.check('#up-open');
      await page.click('#up-submit');
      await page.waitForFunction(() => /^#\/jobs\/\d+$/.test(location.hash), null, { timeout: 120000 });
      const id = Number((await page.evaluate(() => location.hash)).split('/').pop());
      const job = await api(srv.url, 'GET', `/api/v1/jobs/${id}`);
      const up = await api(srv.url, 'GET', `/api/v1/traces/${job.spec.events}`);
      check(up.format === 'events' && up.name === 'ev.jsonl', `events upload ${up.name} ${up.format}`);
      const got = await api(srv.url, 'GET', `/api/v1/jobs/${id}/processes`);
      const want = JSON.parse(cli.stdout);
      check(JSON.stringify(got.processes) === JSON.stringify(want.processes),
        `API ${JSON.stringify(got.processes).slice(0, 200)}; CLI ${JSON.stringify(want.processes).slice(0, 200)}`);
      const pids = got.processes.map((p) => p.pid).sort();
      check(JSON.stringify(pids) === '[42,43]', `pids ${pids}`);
      return `job ${id}: events ${job.spec.events}; pids ${pids}, ${got.switches} switches`;
    });
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
