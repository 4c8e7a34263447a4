// test_speedscope.mjs: the speedscope app bundled with the viewer (npm
// package speedscope, dist/release, served by oobprofd under /speedscope/)
// imports each of our exports of a real job from the same origin, offline.
// Success: the page title "<name> - speedscope" and the sandwich view
// listing our functions with the totals `oobprof top` computes (exact for
// the count units; within display rounding for Perfetto's microseconds).
// Failure: speedscope's "Something went wrong" or any dialog (its
// "Unrecognized format" alert).
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, SRC, check, cliTop, jobFor, loadPlaywright, missing, runMain,
  screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_speedscope');
const TRACE = path.join(GEN, 'progs/mixed.oobt');
const ELF = path.join(GEN, 'progs/mixed');
const NAME = 'mixed run';

// speedscope's formatting: "49,181" (unit none), "49.18µs", "1.20ms", "3.00s".
function parseValue(s) {
  const m = s.trim().match(/^([\d,.]+)\s*(ns|µs|ms|s|min)?/);
  if (!m) return NaN;
  const v = Number(m[1].replace(/,/g, ''));
  const scale = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9, min: 60e9 }[m[2]] ?? 1;
  return v * scale;
}

// The sandwich table's visible rows: [{name, total, self}].
async function sandwichRows(page) {
  const text = await page.evaluate(() => document.body.innerText);
  const at = text.indexOf('Symbol Name');
  check(at >= 0, 'no sandwich table');
  const lines = text.slice(at + 'Symbol Name'.length).split('\n').map((l) => l.trim()).filter(Boolean);
  const rows = [];
  for (let i = 0; i + 2 < lines.length; i += 3) {
    rows.push({ total: parseValue(lines[i]), self: parseValue(lines[i + 1]), name: lines[i + 2] });
  }
  return rows.filter((r) => !Number.isNaN(r.total) && !Number.isNaN(r.self));
}

async function openInSpeedscope(br, base, jobId, format, query = '') {
  const page = await br.context.newPage();
  const dialogs = [];
  page.on('dialog', (d) => {
    dialogs.push(d.message());
    d.dismiss();
  });
  const url = `${base}/api/v1/jobs/${jobId}/export/${format}${query}`;
  await page.goto(`${base}/speedscope/index.html#profileURL=${encodeURIComponent(url)}&view=sandwich`);
  for (let i = 0; i < 150; i++) {
    const title = await page.title();
    const body = await page.evaluate(() => document.body.innerText);
    if (body.includes('Something went wrong')) throw new Error(`${format}: speedscope says "Something went wrong"`);
    if (dialogs.length) throw new Error(`${format}: speedscope alert: ${dialogs[0]}`);
    if (title.endsWith(' - speedscope') && body.includes('Symbol Name')) {
      await sleep(300);
      return { page, title };
    }
    await sleep(100);
  }
  throw new Error(`${format}: not imported after 15 s (title "${await page.title()}")`);
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), path.join(BUILD, 'oobprof'), TRACE, ELF, CHROMIUM,
    path.join(SRC, 'static/speedscope/index.html'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const truth = cliTop(TRACE, ELF);
  const count = new Map();
  for (const f of truth.functions) count.set(f.name, (count.get(f.name) || 0) + 1);
  const byName = new Map(truth.functions.filter((f) => count.get(f.name) === 1).map((f) => [f.name, f]));
  const srv = await startServer('browser_speedscope');
  const br = await startBrowser(pw, 'speedscope');
  try {
    const job = await jobFor(srv.url, TRACE, ELF, NAME);
    // exact: formats counting in raw units; perfetto: 1 instruction = 1 ns,
    // shown by speedscope as microseconds with 2 decimals (4 digits).
    const cases = [
      ['speedscope', '', `${NAME} - speedscope`, 0],
      ['perfetto', '', 'perfetto - speedscope', 0.005],
      ['pprof', '', 'pprof - speedscope', 0],
      ['folded', '', 'folded - speedscope', 0],
      ['speedscope', '?sampled=1', `${NAME} - speedscope`, 0],
    ];
    for (const [format, query, wantTitle, tol] of cases) {
      await R.run(`${format}${query}: imported, sandwich totals as oobprof top`, async () => {
        const { page, title } = await openInSpeedscope(br, srv.url, job.id, format, query);
        check(title === wantTitle, `title "${title}", expected "${wantTitle}"`);
        const rows = await sandwichRows(page);
        check(rows.length >= 10, `only ${rows.length} rows in the sandwich view`);
        let compared = 0;
        for (const r of rows) {
          const f = byName.get(r.name);
          if (!f) {
            check(count.has(r.name) || r.name === '[unknown]', `unknown function "${r.name}"`);
            continue;
          }
          const ok = (got, want) => Math.abs(got - want) <= Math.max(tol * want, tol ? 10 : 0);
          check(ok(r.total, f.total_instructions) && ok(r.self, f.self_instructions),
            `${r.name}: total ${r.total} self ${r.self}, oobprof top says ${f.total_instructions} ${f.self_instructions}`);
          compared++;
        }
        check(compared >= 10, `only ${compared} rows compared`);
        if (!query) await page.screenshot({ path: screenshotPath(`speedscope-${format}.png`) });
        await page.close();
        return `${compared} functions${tol ? ' within display rounding' : ' exact'}`;
      });
    }
    await R.run('the viewer\'s "Open in speedscope" link opens the job', async () => {
      const page = await br.context.newPage();
      await page.goto(`${srv.url}/#/jobs/${job.id}`);
      const href = await page.locator('#open-speedscope').getAttribute('href');
      await page.goto(srv.url + href + '&view=sandwich');
      await page.waitForFunction(() => document.title.endsWith(' - speedscope'), null, { timeout: 15000 });
      const rows = await sandwichRows(page);
      check(rows.length >= 10 && byName.has(rows[0].name), `rows: ${JSON.stringify(rows.slice(0, 2))}`);
      await page.close();
    });
    await R.run('nothing was fetched from outside 127.0.0.1', async () => {
      check(br.blocked.length === 0, `blocked: ${br.blocked.slice(0, 3).join(', ')}`);
    });
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
