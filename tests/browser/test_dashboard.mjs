// test_dashboard.mjs: the dashboard's forms and lists in a real browser
// against the real oobprofd, each result read back from the API:
// - a compressed trace is refused before any upload, saying how to
//   decompress it;
// - the upload form sends the binary's @BASE, the Go trace and the inline
//   option into the job's spec, and opens the job when it finishes;
// - re-running a job keeps its uploads and bases and takes new options
//   (tasks, inline);
// - a running job shows instructions done of the total (the trace's
//   records, from GET /api/v1/traces), or an estimate from the bytes read
//   when the total is unknown, with an ETA;
// - an export is fetched with a spinner and saved whole;
// - a refused binary or job start leaves no upload behind (what the
//   attempt stored is deleted again; duplicates of earlier uploads stay),
//   and an upload no job uses is marked in the lists;
// - traces and binaries are deleted from the page (with the finished jobs
//   using them, after a second question);
// - a Python code map chosen in the form is uploaded as format pycode and
//   named in the job's spec; the job's folded stacks, with py: frames, are
//   `oobprof fold --pycode`'s on the same files.
// Screenshots: tests/out/screenshots/dashboard-*.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, OUT, Reporter, SRC, api, check, checkClean, loadPlaywright, missing, runMain,
  screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_dashboard');
const G = path.join(GEN, 'go');
const TRACE = path.join(G, 'demo.oobt');
const ELF = path.join(G, 'gotrace-demo');
const GOTRACE = path.join(G, 'demo.trace');

// The lowest PT_LOAD p_vaddr of an ELF64: its link address (what @BASE
// moves), read from the program headers here.
function linkBase(file) {
  const b = fs.readFileSync(file);
  const phoff = Number(b.readBigUInt64LE(0x20));
  const phentsize = b.readUInt16LE(0x36); const phnum = b.readUInt16LE(0x38);
  let lo = null;
  for (let i = 0; i < phnum; i++) {
    const o = phoff + i * phentsize;
    if (b.readUInt32LE(o) !== 1) continue;
    const v = b.readBigUInt64LE(o + 16);
    if (lo === null || v < lo) lo = v;
  }
  return '0x' + lo.toString(16);
}

async function waitJob(url, id) {
  for (let i = 0; i < 3000; i++) {
    const j = await api(url, 'GET', `/api/v1/jobs/${id}`);
    if (j.state !== 'queued' && j.state !== 'running') return j;
    await sleep(100);
  }
  throw new Error(`job ${id} did not finish`);
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), CHROMIUM, TRACE, ELF, GOTRACE);
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_dashboard');
  const br = await startBrowser(pw, 'dashboard');
  const page = await br.context.newPage();
  const errors = [];
  const posts = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => { if (r.method() === 'POST') posts.push(r.url()); });
  page.on('dialog', (d) => d.accept());
  const base = linkBase(ELF);
  let job = null;
  try {
    await page.goto(`${srv.url}/#/`);
    await page.waitForSelector('#upload-form');
    await R.run('a compressed trace is refused before upload, with how to decompress it', async () => {
      const xz = path.join(OUT, 'browser_dashboard', 'demo.oobt.xz');
      const r = spawnSync('sh', ['-c', `head -c 4096 "${TRACE}" | xz -c > "${xz}"`]);
      check(r.status === 0 && fs.statSync(xz).size > 0, 'xz failed');
      await page.setInputFiles('#up-trace', xz);
      await page.waitForFunction(() => document.querySelector('#upload-status')?.textContent.includes('compressed'));
      const text = await page.locator('#upload-status').textContent();
      check(text.includes('xz-compressed') && text.includes('xz -dk demo.oobt.xz'), `said: ${text}`);
      check(await page.locator('#up-submit').isDisabled(), 'submit still enabled');
      check(!posts.some((u) => u.includes('/api/v1/traces')), `uploaded anyway: ${posts}`);
      return text.slice(0, 80);
    });
    await R.run('upload: @BASE, Go trace and inline reach the spec; the job opens when done', async () => {
      await page.setInputFiles('#up-trace', TRACE);
      await page.setInputFiles('#up-bins', ELF);
      await page.fill('#up-base-0', base);
      await page.setInputFiles('#up-go', GOTRACE);
      await page.check('#up-inline');
      await page.click('#up-submit');
      await page.waitForFunction(() => /^#\/jobs\/\d+$/.test(location.hash), null, { timeout: 300000 });
      const id = Number((await page.evaluate(() => location.hash)).split('/').pop());
      job = await api(srv.url, 'GET', `/api/v1/jobs/${id}`);
      check(job.state === 'done', `job ${id} ${job.state}`);
      const b = job.spec.binaries[0];
      check(b.base === base, `spec base ${b.base}, typed ${base}`);
      check(job.spec.options.inline === true, `inline ${job.spec.options.inline}`);
      // the total the progress uses is the true one: the upload's record count
      const t = await api(srv.url, 'GET', `/api/v1/traces/${job.trace}`);
      check(job.progress.instructions === t.records, `job read ${job.progress.instructions}, trace has ${t.records} records`);
      const g = await api(srv.url, 'GET', `/api/v1/traces/${job.spec.go_trace}`);
      check(g.format === 'gotrace' && g.name === 'demo.trace', `go trace ${g.name} ${g.format}`);
      await page.waitForSelector('#flame svg g.frame', { timeout: 60000 });
      return `job ${id}: binary ${b.id} @ ${b.base}, go_trace ${job.spec.go_trace}`;
    });
    await R.run('an export is fetched with a spinner and saved whole under its name', async () => {
      const link = page.locator('#exports a[data-export="folded"]');
      const href = new URL(await link.getAttribute('href'), srv.url).href;
      const want = Buffer.from(await (await fetch(href)).arrayBuffer());
      const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60000 }), link.click()]);
      const file = await dl.path();
      const got = fs.readFileSync(file);
      check(got.equals(want), `saved ${got.length} bytes, the API gives ${want.length}`);
      const said = Number(await page.locator('#export-status').getAttribute('data-bytes'));
      check(said === want.length, `status says ${said} bytes`);
      check(/folded/.test(dl.suggestedFilename()), `file name ${dl.suggestedFilename()}`);
      return `${dl.suggestedFilename()}: ${want.length} bytes`;
    });
    await R.run('an export answered 202 shows the build\'s progress, then saves the whole file', async () => {
      // wait=0: the server answers 202 at its first read of the stack events
      await page.route('**/export/perfetto*', (route) => route.continue({
        headers: { ...route.request().headers(), prefer: 'respond-async, wait=0' } }));
      const link = page.locator('#exports a[data-export="perfetto"]');
      const href = new URL(await link.getAttribute('href'), srv.url).href;
      const seen = [];
      const watch = setInterval(async () => {
        const t = await page.locator('#export-status').textContent().catch(() => '');
        if (/of stack events\)/.test(t)) seen.push(t);
      }, 50);
      const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 120000 }), link.click()]);
      clearInterval(watch);
      await page.unroute('**/export/perfetto*');
      const got = fs.readFileSync(await dl.path());
      const want = Buffer.from(await (await fetch(href)).arrayBuffer());
      check(seen.length > 0, 'no progress shown while the export was built');
      check(got.equals(want) && got.length > 1000, `saved ${got.length} bytes, the API gives ${want.length}`);
      return `${seen[0]}; ${dl.suggestedFilename()}: ${got.length} bytes`;
    });
    await R.run('re-run: the same uploads and bases, the new options', async () => {
      await page.goto(`${srv.url}/#/`);
      await page.click(`tr[data-job="${job.id}"] button.rerun`);
      await page.waitForSelector('#rerun-form');
      check(await page.inputValue('#rr-base-0') === base, 'base not prefilled');
      check(await page.isChecked('#rr-inline'), 'inline not prefilled');
      await page.selectOption('#rr-tasks', 'satp');
      await page.uncheck('#rr-inline');
      await page.click('#rerun-submit');
      await page.waitForFunction(() => /job \d+ started/.test(document.querySelector('#rerun-status')?.textContent || ''));
      const id = Number((await page.locator('#rerun-status').textContent()).match(/job (\d+)/)[1]);
      const j = await waitJob(srv.url, id);
      // satp needs CSR writes, which this oobt trace does not record: the
      // server's refusal shows the option reached it
      check(j.state === 'failed' && /satp/.test(j.error.message), `re-run ${j.state}: ${JSON.stringify(j.error)}`);
      check(j.trace === job.trace && j.spec.go_trace === job.spec.go_trace, 'other uploads');
      check(JSON.stringify(j.spec.binaries) === JSON.stringify(job.spec.binaries), `binaries ${JSON.stringify(j.spec.binaries)}`);
      check(j.spec.options.tasks === 'satp' && j.spec.options.inline === false, `options ${JSON.stringify(j.spec.options)}`);
      await page.screenshot({ path: screenshotPath('dashboard-rerun.png'), fullPage: true });
      return `job ${id}: ${JSON.stringify(j.spec.options).slice(0, 60)}`;
    });
    await R.run('a refused binary or job leaves no upload behind; what was there before stays', async () => {
      const before = async () => [(await api(srv.url, 'GET', '/api/v1/traces')).traces.map((x) => x.id).sort(),
        (await api(srv.url, 'GET', '/api/v1/binaries')).binaries.map((x) => x.id).sort()];
      const [t0, b0] = await before();
      const dir = path.join(OUT, 'browser_dashboard');
      const junk = path.join(dir, 'junk.elf');
      fs.writeFileSync(junk, 'not an ELF file\n');
      // a new binary, one the server has (duplicate), a refused one
      const prog = path.join(GEN, 'progs/mutual');
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector('#upload-form');
      const n0 = posts.length;
      await page.setInputFiles('#up-trace', path.join(GEN, 'progs/mutual.oobt'));
      await page.setInputFiles('#up-bins', [prog, ELF, junk]);
      await page.fill('#up-base-1', base);
      await page.setInputFiles('#up-go', []);
      await page.uncheck('#up-open');
      await page.click('#up-submit');
      await page.waitForSelector('#upload-rollback', { timeout: 60000 });
      const said = await page.locator('#upload-status').innerText();
      const [t1, b1] = await before();
      check(JSON.stringify(t1) === JSON.stringify(t0) && JSON.stringify(b1) === JSON.stringify(b0),
        `traces ${t0} -> ${t1}, binaries ${b0} -> ${b1}; page: ${said}`);
      check(!posts.slice(n0).some((u) => u.includes('/api/v1/traces')), 'the trace was uploaded after a refused binary');
      check(/removed .*binary \d+ \(mutual\)/.test(said) && !said.includes('gotrace-demo'), `page: ${said}`);
      // the trace and two new binaries stored, then the job refused: one
      // binary is this machine's, not RISC-V code
      const other = path.join(dir, 'other.oobt');
      fs.copyFileSync(path.join(GEN, 'progs/mutual.oobt'), other);
      const host = path.join(dir, 'host-true');
      fs.copyFileSync('/bin/true', host);
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector('#upload-form');
      await page.setInputFiles('#up-trace', other);
      await page.setInputFiles('#up-bins', [prog, host]);
      await page.uncheck('#up-open');
      await page.click('#up-submit');
      await page.waitForSelector('#upload-rollback', { timeout: 60000 });
      const said2 = await page.locator('#upload-status').innerText();
      const [t2, b2] = await before();
      check(JSON.stringify(t2) === JSON.stringify(t0) && JSON.stringify(b2) === JSON.stringify(b0),
        `traces ${t0} -> ${t2}, binaries ${b0} -> ${b2}; page: ${said2}`);
      check(/removed .*trace \d+ \(other\.oobt\)/.test(said2) && /binary \d+ \(mutual\)/.test(said2) &&
        /binary \d+ \(host-true\)/.test(said2), `page: ${said2}`);
      await page.locator('#upload-form').screenshot({ path: screenshotPath('dashboard-rollback.png') });
      // a removal that fails is reported, with a button that removes it
      await page.route('**/api/v1/traces/*', (route) => (route.request().method() === 'DELETE' ?
        route.fulfill({ status: 503, json: { error: { code: 'busy', message: 'try again' } } }) : route.continue()));
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector('#upload-form');
      await page.setInputFiles('#up-trace', other);
      await page.setInputFiles('#up-bins', [host]);
      await page.uncheck('#up-open');
      await page.click('#up-submit');
      const keep = page.locator('#upload-rollback button[data-kept^="traces/"]');
      await keep.waitFor({ timeout: 60000 });
      const kept = Number((await keep.getAttribute('data-kept')).split('/')[1]);
      const [t3] = await before();
      check(t3.includes(kept), `trace ${kept} reported kept, server has ${t3}`);
      await page.unroute('**/api/v1/traces/*');
      await keep.click();
      await page.waitForFunction(() => /removed/.test(document.querySelector('#upload-rollback p.msg.error')?.textContent));
      const [t4, b4] = await before();
      check(JSON.stringify(t4) === JSON.stringify(t0) && JSON.stringify(b4) === JSON.stringify(b0),
        `after "Delete it": traces ${t4}, binaries ${b4}`);
      return `${said.split('\n')[0].slice(0, 60)} | ${said2.split('\n').pop().slice(0, 100)}`;
    });
    await R.run('an upload no job uses is marked in the lists', async () => {
      const t = await api(srv.url, 'POST', '/api/v1/traces?name=alone.oobt', fs.readFileSync(path.join(GEN, 'progs/mutual.oobt')));
      await page.goto(`${srv.url}/#/`);
      const cell = page.locator(`tr[data-trace="${t.id}"] td[data-jobs]`);
      await cell.waitFor();
      const alone = [await cell.innerText(), await cell.getAttribute('class')];
      const used = page.locator(`tr[data-trace="${job.trace}"] td[data-jobs]`);
      const jobs = (await api(srv.url, 'GET', '/api/v1/jobs')).jobs.filter((j) => j.trace === job.trace).length;
      const n = Number(await used.getAttribute('data-jobs'));
      await api(srv.url, 'DELETE', `/api/v1/traces/${t.id}`);
      // the next case loads the dashboard afresh (not a hash change, which
      // would wait for the page's next 5-second refresh)
      await page.goto('about:blank');
      check(alone[0] === 'none' && /unused/.test(alone[1]), `unused trace shows ${alone}`);
      check(n === jobs && n >= 2, `trace ${job.trace}: ${n} jobs shown, ${jobs} use it`);
      return `trace ${t.id}: none; trace ${job.trace}: ${n} jobs`;
    });
    await R.run('a running job shows instructions done of the total, or an estimate, with an ETA', async () => {
      const t = await api(srv.url, 'GET', `/api/v1/traces/${job.trace}`);
      const now = Math.floor(Date.now() / 1000);
      const done = Math.floor(t.records / 4);
      const fake = (id, trace) => ({ ...job, id, trace, spec: { ...job.spec, trace }, state: 'running',
        started: now - 30, progress: { bytes: t.size / 2, total_bytes: t.size, instructions: done, fraction: 0.5 } });
      await page.route('**/api/v1/jobs?limit=1000', async (route) => {
        const real = await (await route.fetch()).json();
        real.jobs.push(fake(900, job.trace), fake(901, 999));
        await route.fulfill({ json: real });
      });
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector('tr[data-job="901"] .job-progress');
      const known = page.locator('tr[data-job="900"] .job-progress');
      const text = await known.textContent();
      check(Number(await known.getAttribute('data-total')) === t.records, `total ${await known.getAttribute('data-total')}, trace records ${t.records}`);
      check(text.includes(`${done.toLocaleString('en-US')} / ${t.records.toLocaleString('en-US')} instructions`), `row: ${text}`);
      // a quarter done in 30 s: about 90 s left (the clock moved a little)
      const eta = text.match(/ETA (\d+) min (\d+) s/);
      check(eta && Math.abs(Number(eta[1]) * 60 + Number(eta[2]) - 90) <= 10, `ETA in "${text}"`);
      const est = page.locator('tr[data-job="901"] .job-progress');
      const etext = await est.textContent();
      check(Number(await est.getAttribute('data-total')) === done * 2 && etext.includes('estimated'), `estimate: ${etext}`);
      await page.screenshot({ path: screenshotPath('dashboard-progress.png') });
      await page.unroute('**/api/v1/jobs?limit=1000');
      return `${text}; ${etext}`;
    });
    await R.run('delete a trace (and, asked again, its finished jobs) and a binary', async () => {
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector(`tr[data-trace="${job.trace}"]`);
      await page.click(`tr[data-trace="${job.trace}"] button.danger`);
      await page.waitForSelector(`tr[data-trace="${job.trace}"]`, { state: 'detached', timeout: 20000 });
      const traces = (await api(srv.url, 'GET', '/api/v1/traces')).traces.map((x) => x.id);
      const jobs = (await api(srv.url, 'GET', '/api/v1/jobs')).jobs;
      check(!traces.includes(job.trace), `trace ${job.trace} still listed`);
      check(!jobs.some((j) => j.trace === job.trace), 'its jobs are still listed');
      const bid = job.spec.binaries[0].id;
      await page.click(`tr[data-binary="${bid}"] button.danger`);
      await page.waitForSelector(`tr[data-binary="${bid}"]`, { state: 'detached', timeout: 20000 });
      const bins = (await api(srv.url, 'GET', '/api/v1/binaries')).binaries;
      check(bins.length === 0, `${bins.length} binaries left`);
      return `trace ${job.trace}, binary ${bid}; ${traces.length} traces left`;
    });
    const py = path.join(GEN, 'python');
    const [ptrace, pbin] = [path.join(py, 'pychain.oobt'), path.join(py, 'bin/python3.11')];
    const noPy = missing(ptrace, pbin);
    if (noPy) R.skip('a Python code map reaches the spec as pycode', `${noPy} (gen-python)`);
    else await R.run('a Python code map reaches the spec as pycode; the job has py: frames', async () => {
      const map = path.join(OUT, 'browser_dashboard', 'pychain.pymap');
      const m = spawnSync('sh', ['-c', `sh "${SRC}/tests/tools/pymap.sh" "${py}" /usr/bin/python3.11 pychain > "${map}"`]);
      check(m.status === 0, `pymap.sh: ${m.stderr}`);
      const cli = spawnSync(path.join(BUILD, 'oobprof'), ['fold', '--elf', pbin, '--pycode', map, ptrace],
        { maxBuffer: 1 << 28 });
      check(cli.status === 0, `oobprof fold: ${cli.stderr}`);
      await page.goto(`${srv.url}/#/`);
      await page.waitForSelector('#upload-form');
      await page.setInputFiles('#up-trace', ptrace);
      await page.setInputFiles('#up-bins', pbin);
      await page.setInputFiles('#up-pycode', map);
      await page.check('#up-open');
      await page.click('#up-submit');
      await page.waitForFunction(() => /^#\/jobs\/\d+$/.test(location.hash), null, { timeout: 300000 });
      const id = Number((await page.evaluate(() => location.hash)).split('/').pop());
      const j = await api(srv.url, 'GET', `/api/v1/jobs/${id}`);
      check(j.state === 'done', `job ${id} ${j.state}`);
      const up = await api(srv.url, 'GET', `/api/v1/traces/${j.spec.pycode}`);
      check(up.format === 'pycode' && up.name === 'pychain.pymap', `pycode upload ${up.name} ${up.format}`);
      const folded = Buffer.from(await (await fetch(`${srv.url}/api/v1/jobs/${id}/folded`)).arrayBuffer());
      check(folded.equals(cli.stdout), `folded: ${folded.length} bytes, oobprof fold --pycode ${cli.stdout.length}`);
      const pyLines = folded.toString().split('\n').filter((l) => l.includes(';py:')).length;
      check(pyLines > 0, 'no py: frame');
      await page.waitForSelector('#flame svg g.frame', { timeout: 60000 });
      return `job ${id}: pycode ${j.spec.pycode}; ${pyLines} folded stacks with py: frames = the CLI's`;
    });
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
