// test_timeline.mjs: the timeline page in a real browser against the real
// oobprofd, on the Spike full-system run (Linux, /init, /prog; one hart, no
// cycles, so an interval's length is its instruction count). The page must
// draw the hart lane with the API's intervals, show an interval's process on
// hover, and a click must draw the flame graph of exactly that interval: its
// root value equals the interval's length, computed by the test from the
// rectangle's own data-start/data-end. Zooming asks the server for the new
// window. Shift-drag selects a window (checked against the axis's own
// scale), whose flame graph and job page show exactly it; the legend has
// every process in the colours its intervals are drawn with. The clicked
// interval lists its stacks: exactly `oobprof fold --window` of it. A
// task's critical path draws a lane of exactly the API's steps and outlines
// the hart intervals it ran in. Screenshots: tests/out/screenshots/
// timeline.png, timeline-select.png, timeline-stacks.png, timeline-path.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, SRC, api, check, checkClean, jobFor, loadPlaywright, missing,
  runMain, screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const SHARED = process.env.OOB_SHARED || path.join(SRC, '../shared');
const R = new Reporter('test_timeline');
const LOG = path.join(GEN, 'readers/spike.log');
const ELFS = [path.join(GEN, 'vmlinux'), path.join(SHARED, 'fixtures/spike/init'),
  path.join(SHARED, 'fixtures/spike/prog')];

// A Go program on qemu-riscv64 with its own execution trace: the page adds
// GC, P, M and goroutine lanes, drawn where the server's document puts them.
async function goCase(page, srv) {
  const G = path.join(GEN, 'go');
  const files = ['demo.oobt', 'demo.trace', 'gotrace-demo'].map((f) => path.join(G, f));
  const why = missing(...files);
  if (why) {
    R.skip('Go lanes', why);
    return;
  }
  await R.run('a job with a Go trace shows P, M and goroutine lanes', async () => {
    const up = (p, kind) => api(srv.url, 'POST', `/api/v1/${kind}?name=${path.basename(p)}`, fs.readFileSync(p));
    const t = await up(files[0], 'traces');
    const g = await up(files[1], 'traces');
    const b = await up(files[2], 'binaries');
    check(g.format === 'gotrace', `Go trace detected as ${g.format}`);
    const j = await api(srv.url, 'POST', '/api/v1/jobs',
      JSON.stringify({ trace: t.id, binaries: [b.id], go_trace: g.id }));
    // Generous bounds: CI machines under sanitizers can be several times
    // slower than a workstation; what is checked is the drawing, not speed.
    let st = null;
    for (let i = 0; i < 3000 && (!st || st.state !== 'done'); i++) {
      if (st) await sleep(100);
      st = await api(srv.url, 'GET', `/api/v1/jobs/${j.id}`);
      check(st.state === 'done' || st.state === 'queued' || st.state === 'running', `job ${st.state}`);
    }
    check(st.state === 'done', `job still ${st.state} after 300 s`);
    await page.goto(`${srv.url}/#/jobs/${j.id}/timeline`);
    try {
      await page.waitForSelector('#timeline .lane-go rect.iv', { state: 'attached', timeout: 180000 });
    } catch (e) {
      const said = await page.locator('main').textContent();
      throw new Error(`no Go lane drawn; the page says: ${said.slice(0, 300)}`);
    }
    const labels = await page.locator('#timeline .lane-label').allTextContents();
    for (const want of ['hart 0', 'P0', 'G1 runtime.main']) check(labels.includes(want), `no lane ${want} in ${labels.slice(0, 12)}`);
    const nh = await page.locator('#timeline .lane-hart').count();
    const drawn = await page.locator('#timeline .lane-hart').evaluateAll((gs) => gs.filter((g) => g.querySelector('rect.iv')).length);
    check(nh > 1 && drawn === nh, `${drawn} of ${nh} hart lanes drawn`);
    const status = await page.locator('#timeline-status').textContent();
    check(/Go clock fit/.test(status), `status: ${status}`);
    await page.screenshot({ path: screenshotPath('timeline-go.png'), fullPage: true });
    return `${labels.length} lanes; ${status}`;
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), LOG, ...ELFS, CHROMIUM,
    path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_timeline');
  const br = await startBrowser(pw, 'timeline');
  const page = await br.context.newPage();
  const errors = [];
  const asked = [];
  page.on('pageerror', (e) => errors.push(e.message));
  page.on('request', (r) => { if (r.url().includes('/timeline?')) asked.push(r.url()); });
  try {
    const job = await jobFor(srv.url, LOG, ELFS, 'spike full system');
    await R.run('the job page links to the timeline, which draws the hart lane', async () => {
      await page.goto(`${srv.url}/#/jobs/${job.id}`);
      await page.click('#open-timeline', { timeout: 20000 });
      await page.waitForSelector('#timeline rect.iv', { timeout: 60000 });
      const labels = await page.locator('#timeline .lane-label').allTextContents();
      check(labels.includes('hart 0'), `lanes ${labels}`);
      const n = await page.locator('#timeline .lane-hart rect.iv').count();
      check(n > 20, `${n} intervals drawn`);
      return `${n} intervals`;
    });
    // The widest interval: the click must give its flame graph.
    const widest = await page.locator('#timeline .lane-hart rect.iv').evaluateAll((rs) => {
      let best = null;
      for (const r of rs) {
        const s = Number(r.dataset.start); const e = Number(r.dataset.end);
        if (!best || e - s > best.e - best.s) best = { s, e, i: rs.indexOf(r) };
      }
      return best;
    });
    await R.run('hover names the process and the privilege of an interval', async () => {
      const rect = page.locator('#timeline .lane-hart rect.iv').nth(widest.i);
      await rect.hover();
      const text = await page.locator('#timeline-detail').textContent();
      check(/pid \d+\), (user|kernel) \[/.test(text), `detail: ${text}`);
      return text.slice(0, 80);
    });
    await R.run('a click on a hart interval shows the flame graph of exactly that interval', async () => {
      await page.locator('#timeline .lane-hart rect.iv').nth(widest.i).click();
      await page.waitForSelector('#timeline-flame svg g.frame', { timeout: 60000 });
      const shown = Number(await page.locator('#timeline-flame-box').getAttribute('data-value'));
      const doc = await api(srv.url, 'GET',
        `/api/v1/jobs/${job.id}/flamegraph?from=${widest.s}&to=${widest.e}&hart=0`);
      check(shown === widest.e - widest.s, `flame value ${shown}, interval ${widest.e - widest.s}`);
      check(doc.value === shown, `API ${doc.value}, page ${shown}`);
      await sleep(1000); /* d3-flame-graph's transition */
      await page.screenshot({ path: screenshotPath('timeline.png'), fullPage: true });
      return `[${widest.s}, ${widest.e}): ${shown} instructions`;
    });
    await R.run('the clicked interval\'s stacks: exactly oobprof fold --window of it', async () => {
      await page.waitForSelector('#timeline-stacks li', { timeout: 60000 });
      const count = Number(await page.locator('#timeline-stacks').getAttribute('data-count'));
      const rows = await page.locator('#timeline-stacks li').evaluateAll((lis) =>
        lis.map((li) => [li.dataset.stack, Number(li.dataset.weight), li.innerText]));
      // the truth: the CLI replays the trace and cuts the same window
      const r = spawnSync(path.join(BUILD, 'oobprof'), ['fold', '--window', `${widest.s}:${widest.e}`,
        ...ELFS.flatMap((e) => ['--elf', e]), LOG], { encoding: 'utf8', maxBuffer: 1 << 28 });
      check(r.status === 0, `oobprof fold: ${r.stderr}`);
      const fold = r.stdout.trim().split('\n').map((l) => {
        const i = l.lastIndexOf(' ');
        return [l.slice(0, i), Number(l.slice(i + 1))];
      }).filter(([, w]) => w > 0);
      const want = new Map(fold);
      check(count === want.size, `${count} stacks listed, oobprof fold --window has ${want.size}`);
      const sum = fold.reduce((a, [, w]) => a + w, 0);
      check(sum === widest.e - widest.s, `fold sums to ${sum}, the interval is ${widest.e - widest.s}`);
      // the heaviest first, each the fold's (';' in a name is ':' there)
      const heaviest = [...fold].sort((a, b) => b[1] - a[1])[0][1];
      check(rows.length && rows[0][1] === heaviest, `first row ${rows[0] && rows[0][1]}, heaviest ${heaviest}`);
      for (const [stack, w, text] of rows) {
        const k = stack.split(';').map((f) => f.replace(/;/g, ':')).join(';');
        check(want.get(k) === w, `${stack}: ${w} shown, fold ${want.get(k)}`);
        check(text.includes(w.toLocaleString('en-US')), `row text "${text}"`);
      }
      await page.locator('#timeline-stacks').screenshot({ path: screenshotPath('timeline-stacks.png') });
      await page.evaluate(() => window.scrollTo(0, 0)); // the next case wheels over the lanes
      return `${count} stacks, ${rows.length} listed, ${sum} instructions`;
    });
    await R.run('zooming asks the server for the visible window', async () => {
      const before = asked.length;
      const box = await page.locator('#timeline svg').boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + 10);
      for (let i = 0; i < 5; i++) await page.mouse.wheel(0, -400);
      for (let i = 0; i < 50 && asked.length === before; i++) await sleep(100);
      check(asked.length > before, 'no new timeline request after zooming');
      const u = new URL(asked[asked.length - 1]);
      const from = Number(u.searchParams.get('from')); const to = Number(u.searchParams.get('to'));
      check(u.searchParams.has('from') && to > from, `window ${u.search}`);
      await page.waitForSelector('#timeline rect.iv');
      return `window [${from}, ${to})`;
    });
    await R.run('the axis: readable units, distinct ticks, sticky above the lanes', async () => {
      await sleep(800);
      const ticks = await page.locator('#timeline-axis .tick text').allTextContents();
      const si = { '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12 };
      const vals = ticks.map((t) => {
        const m = t.match(/^(\d+(?:\.\d+)?)([kMGT]?)$/);
        check(m, `tick "${t}" is not a number with k/M/G`);
        return Number(m[1]) * si[m[2]];
      });
      const data = await page.locator('#timeline-axis .tick').evaluateAll((gs) => gs.map((g) => d3.select(g).datum()));
      check(ticks.length > 2 && new Set(ticks).size === ticks.length, `ticks ${ticks}`);
      vals.forEach((v, i) => check(Math.abs(v - data[i]) <= Math.abs(data[i]) * 1e-3 + 1e-9,
        `tick "${ticks[i]}" reads ${v}, is ${data[i]}`));
      const unit = await page.locator('#timeline-axis .axis-unit').textContent();
      const doc = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/timeline?min_duration=1000000000000`);
      check(unit === doc.axis, `unit "${unit}", API axis ${doc.axis}`);
      const pos = await page.locator('#timeline-axis').evaluate((e) => getComputedStyle(e).position);
      check(pos === 'sticky', `axis position ${pos}`);
      return `${ticks.join(' ')} ${unit}`;
    });
    await R.run('the visible window opens the job page: flame graph and table of exactly it', async () => {
      const href = await page.locator('#timeline-window').getAttribute('href');
      const q = new URLSearchParams(href.slice(href.indexOf('?') + 1));
      const from = Number(q.get('from')); const to = Number(q.get('to'));
      check(to > from, `link ${href}`);
      await page.click('#timeline-window');
      await page.waitForFunction(() => document.querySelector('#top caption')?.textContent.includes('window'),
        null, { timeout: 60000 });
      await page.waitForSelector('#flame svg g.frame', { timeout: 60000 });
      await sleep(500);
      const doc = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/flamegraph?from=${from}&to=${to}`);
      const root = await page.locator('#flame g.frame[name="all"]').evaluate((g) => d3.select(g).datum().data.value);
      check(root === doc.value && root > 0, `page root ${root}, API ${doc.value}`);
      const top = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/top?from=${from}&to=${to}&limit=10000000`);
      const sum = top.functions.reduce((a, f) => a + f.self_instructions, 0);
      check(sum === doc.value, `window table sums to ${sum}, flame graph ${doc.value}`);
      const info = await page.locator('#page-info').innerText();
      check(info.includes(`of ${top.count.toLocaleString('en-US')}`), `pager ${info}, API ${top.count} rows`);
      await page.screenshot({ path: screenshotPath('timeline-window-job.png') });
      await page.goBack();
      return `[${from}, ${to}): ${root} instructions, ${top.count} functions`;
    });
    await R.run('the legend names every process with the colours its intervals have', async () => {
      await page.waitForSelector('#timeline rect.iv');
      const doc = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/timeline?min_duration=1000000000000`);
      const legend = await page.locator('#timeline-legend li[data-kind="process"]').evaluateAll((ls) =>
        ls.map((l) => ({ pid: Number(l.dataset.pid), user: l.dataset.color, kernel: l.dataset.kernelColor })));
      const want = doc.processes.slice(0, 40).map((p) => p.pid);
      check(JSON.stringify(legend.map((l) => l.pid)) === JSON.stringify(want),
        `legend pids ${legend.map((l) => l.pid)}, API ${want}`);
      const colours = new Set(legend.flatMap((l) => [l.user, l.kernel]));
      const fills = await page.locator('#timeline .lane-hart rect.iv').evaluateAll((rs) => rs.map((r) => r.getAttribute('fill')));
      const stray = fills.filter((f) => !colours.has(f));
      check(doc.processes.length > 40 || stray.length === 0, `${stray.length} of ${fills.length} intervals in no legend colour: ${stray[0]}`);
      return `${legend.length} processes, ${fills.length} intervals in their colours`;
    });
    await R.run('the critical path of a task: a lane of its steps, the hart intervals it ran outlined', async () => {
      await page.waitForSelector('#timeline rect.iv');
      // a task with a pid whose last wait has a waker: its path crosses tasks
      const off = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/offcpu`);
      const woken = off.waits.filter((w) => w.waker && w.pid !== null && w.pid > 0);
      check(woken.length > 0, `${off.waits.length} waits, none woken with a pid`);
      const pid = woken[woken.length - 1].pid;
      const doc = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/path?task=${pid}`);
      await page.fill('#timeline-path-task', String(pid));
      await page.click('#timeline-path-show');
      await page.waitForSelector('#timeline .lane-path rect.iv', { timeout: 60000 });
      const steps = await page.locator('#timeline .lane-path rect.iv').evaluateAll((rs) =>
        rs.map((r) => [Number(r.dataset.start), Number(r.dataset.end)]));
      check(steps.length === doc.steps.length, `${steps.length} steps drawn, API ${doc.steps.length}`);
      steps.forEach(([s], i) => check(s === doc.steps[i].from, `step ${i} drawn from ${s}, API ${doc.steps[i].from}`));
      // outlined: exactly the hart intervals that overlap a running step on their hart
      const runs = doc.steps.filter((st) => st.kind === 'running' && st.hart === 0);
      const ivs = await page.locator('#timeline .lane-hart rect.iv').evaluateAll((rs) =>
        rs.map((r) => [Number(r.dataset.start), Number(r.dataset.end), r.classList.contains('on-path')]));
      const want = ivs.filter(([s, e]) => runs.some((st) => st.from < e && s < st.to)).length;
      const got = ivs.filter((v) => v[2]).length;
      check(got === want && got > 0, `${got} intervals outlined, ${want} overlap the path's runs`);
      const status = await page.locator('#timeline-path-status').textContent();
      check(status.startsWith(`${doc.steps.length} steps`), `status: ${status}`);
      await page.screenshot({ path: screenshotPath('timeline-path.png'), fullPage: true });
      return `pid ${pid}: ${status}`;
    });
    await R.run('shift-drag selects a window: its flame graph, then the job page of exactly it', async () => {
      await page.waitForSelector('#timeline rect.iv');
      await sleep(500);
      const box = await page.locator('#timeline svg').boundingBox();
      // the axis scale, from two ticks: their values and their positions
      const ticks = await page.locator('#timeline-axis .tick').evaluateAll((gs) => gs.map((g) => ({
        v: d3.select(g).datum(), x: g.transform.baseVal[0].matrix.e })));
      check(ticks.length >= 2, 'fewer than 2 ticks');
      const [t0, t1] = [ticks[0], ticks[ticks.length - 1]];
      const axisBox = await page.locator('#timeline-axis svg').boundingBox();
      const inv = (px) => t0.v + (px - axisBox.x - t0.x) * (t1.v - t0.v) / (t1.x - t0.x);
      const xa = box.x + 150 + (box.width - 150) * 0.3; const xb = box.x + 150 + (box.width - 150) * 0.55;
      const y = box.y + 9;
      await page.keyboard.down('Shift');
      await page.mouse.move(xa, y);
      await page.mouse.down();
      await page.mouse.move((xa + xb) / 2, y, { steps: 4 });
      await page.mouse.move(xb, y, { steps: 4 });
      await page.mouse.up();
      await page.keyboard.up('Shift');
      await page.waitForSelector('#timeline-selection-open', { timeout: 20000 });
      const from = Number(await page.locator('#timeline-selection').getAttribute('data-from'));
      const to = Number(await page.locator('#timeline-selection').getAttribute('data-to'));
      const span = t1.v - t0.v;
      check(Math.abs(from - inv(xa)) <= span * 1e-3 + 1 && Math.abs(to - inv(xb)) <= span * 1e-3 + 1,
        `selected [${from}, ${to}), the pixels read [${inv(xa)}, ${inv(xb)})`);
      await page.waitForFunction(() => document.querySelector('#timeline-flame-box')?.dataset.value, null, { timeout: 60000 });
      const shown = Number(await page.locator('#timeline-flame-box').getAttribute('data-value'));
      const doc = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/flamegraph?from=${from}&to=${to}`);
      check(shown === doc.value && shown > 0, `selection flame ${shown}, API ${doc.value}`);
      // one hart, no cycles: the window holds exactly to - from instructions
      const tl = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/timeline?min_duration=1000000000000`);
      check(tl.axis !== 'cycles' && tl.harts.length === 1 && to <= tl.end, `axis ${tl.axis}, ${tl.harts.length} harts`);
      check(doc.value === to - from, `${doc.value} instructions in [${from}, ${to})`);
      await sleep(800);
      await page.screenshot({ path: screenshotPath('timeline-select.png'), fullPage: true });
      await page.click('#timeline-selection-open');
      await page.waitForFunction(() => document.querySelector('#top caption')?.textContent.includes('window'),
        null, { timeout: 60000 });
      await page.waitForSelector('#flame svg g.frame', { timeout: 60000 });
      await sleep(500);
      const root = await page.locator('#flame g.frame[name="all"]').evaluate((g) => d3.select(g).datum().data.value);
      check(root === doc.value, `job page root ${root}, API ${doc.value}`);
      const top = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/top?from=${from}&to=${to}&limit=10000000`);
      const sum = top.functions.reduce((a, f) => a + f.self_instructions, 0);
      check(sum === doc.value, `table sums to ${sum}, flame graph ${doc.value}`);
      await page.goBack();
      return `[${from}, ${to}): ${root} instructions`;
    });
    await R.run('a build answered 202 shows its progress, then the path it built', async () => {
      // wait=0: the server answers the first request 202 at its first read of
      // the stack events; top=4 makes the view one no request built before
      await page.route('**/path?*', (route) => {
        const u = new URL(route.request().url());
        u.searchParams.set('top', '4');
        route.continue({ url: u.toString(), headers: { ...route.request().headers(), prefer: 'respond-async, wait=0' } });
      });
      await page.goto(`${srv.url}/#/jobs/${job.id}/timeline`);
      await page.waitForSelector('#timeline rect.iv');
      const off = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/offcpu`);
      const woken = off.waits.filter((w) => w.waker && w.pid !== null && w.pid > 0);
      const pid = woken[woken.length - 1].pid;
      await page.fill('#timeline-path-task', String(pid));
      await page.click('#timeline-path-show');
      await page.waitForFunction(() => /of stack events\)$/.test(document.querySelector('#timeline-path-status').textContent),
        null, { timeout: 30000 });
      const building = await page.locator('#timeline-path-status').textContent();
      const m = /(\d+\.\d+)% \(/.exec(building);
      check(m && Number(m[1]) > 0 && Number(m[1]) <= 100, `status while building: ${building}`);
      await page.waitForSelector('#timeline .lane-path rect.iv', { timeout: 60000 });
      const doc = await api(srv.url, 'GET', `/api/v1/jobs/${job.id}/path?task=${pid}&top=4`);
      const n = await page.locator('#timeline .lane-path rect.iv').count();
      check(n === doc.steps.length, `${n} steps drawn, API ${doc.steps.length}`);
      await page.unroute('**/path?*');
      return building;
    });
    await goCase(page, srv);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
