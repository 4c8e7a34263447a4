// test_summary.mjs: the job page's summary in a real browser against the
// real oobprofd, each figure read back from the CLI on the same files:
// - the trust warnings: a trace given no ELF ("ran in user code of no given
//   ELF") and one given another program's ELF ("differ from mutual's") show
//   the warning `oobprof stats` prints on stderr, word for word, one list
//   item per warning, of the API's kinds; a job with the right ELF shows none;
// - the calls line says calls and tail calls apart, with returns and traps:
//   `oobprof stats`'s calls, tail_calls, returns and traps.
// Screenshot: tests/out/screenshots/summary-warnings.png.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, check, checkClean, jobFor, loadPlaywright, missing, runMain,
  screenshotPath, shutdown, startBrowser, startServer,
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
        const api = (job.summary && job.summary.warnings) || [];
        const { warnings } = await readSummary(page, srv.url, job.id);
        check(JSON.stringify(warnings.map((w) => w[1])) === JSON.stringify(cli.warnings),
          `page ${JSON.stringify(warnings)}, CLI ${JSON.stringify(cli.warnings)}`);
        check(JSON.stringify(warnings) === JSON.stringify(api.map((w) => [w.kind, w.message])),
          `page ${JSON.stringify(warnings)}, API ${JSON.stringify(api)}`);
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
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
