// test_slices.mjs: the stack over time under the timeline's lanes
// (static/slices.js) in a real browser against the real oobprofd. On a
// program under qemu-riscv64 (tests/gen/progs/mutual, one hart): "stacks per
// hart" draws exactly the API's slices of the visible window at one pixel
// (GET /slices, checked against the Perfetto export by
// test_server_slices.sh): every rectangle's start, end, depth and frame; a
// hover names the slice's frame and its extent as the API has them; a zoom
// asks for the new window and draws its slices. On the Spike full-system run
// (Linux, /init, /prog): "stacks per process" draws one track per (process,
// hart) with the API's names and slices. Screenshots:
// tests/out/screenshots/timeline-slices.png, timeline-slices-process.png.
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, SRC, api, check, checkClean, jobFor, loadPlaywright, missing,
  runMain, screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const SHARED = process.env.OOB_SHARED || path.join(SRC, '../shared');
const R = new Reporter('test_slices');
const PROG = path.join(GEN, 'progs/mutual');
const LOG = path.join(GEN, 'readers/spike.log');
const ELFS = [path.join(GEN, 'vmlinux'), path.join(SHARED, 'fixtures/spike/init'),
  path.join(SHARED, 'fixtures/spike/prog')];
const MAX_ROWS = 48; // slices.js draws this many depths

const key = (s) => `${s[0]}:${s[1]}:${s[2]}:${s[3]}`;

// The API's document for what the page shows (its box says which window).
async function apiFor(page, base, id) {
  const d = await page.locator('#timeline-slices').evaluate((b) => ({ ...b.dataset }));
  check(d.from !== undefined, 'the slices box has no window');
  const doc = await api(base, 'GET', `/api/v1/jobs/${id}/slices?from=${d.from}&to=${d.to}&min_duration=${d.min}&by=${d.by}`);
  const want = doc.tracks.flatMap((t) => t.slices.filter((s) => s[2] < MAX_ROWS)
    .map((s) => key([s[0], s[1], s[2], doc.frames[s[3]].name])));
  return { d, doc, want };
}

async function drawn(page) {
  return page.locator('#timeline-slices rect.slice').evaluateAll((rs) => rs.map((r) =>
    `${r.dataset.start}:${r.dataset.end}:${r.dataset.depth}:${r.dataset.name}`));
}

function same(got, want, what) {
  const g = [...got].sort(); const w = [...want].sort();
  const bad = g.length !== w.length || g.some((v, i) => v !== w[i]);
  check(!bad, `${what}: ${g.length} drawn, the API has ${w.length}; first drawn not in it: ${g.find((v) => !w.includes(v))}`);
}

async function waitSlices(page, by) {
  await page.selectOption('#timeline-slices-by', by);
  await page.waitForFunction((b) => document.querySelector('#timeline-slices')?.dataset.by === b &&
    document.querySelector('#timeline-slices rect.slice'), by, { timeout: 60000 });
}

async function hartCases(page, srv) {
  const job = await jobFor(srv.url, `${PROG}.oobt`, PROG, 'mutual');
  await page.goto(`${srv.url}/#/jobs/${job.id}/timeline`);
  await page.waitForSelector('#timeline rect.iv', { timeout: 60000 });
  await R.run('stacks per hart: every slice of the visible window, as the API has it', async () => {
    await waitSlices(page, 'hart');
    const { d, doc, want } = await apiFor(page, srv.url, job.id);
    same(await drawn(page), want, 'whole run');
    check(doc.slices > 100 && doc.hidden > 0, `${doc.slices} slices, ${doc.hidden} hidden: a pixel hides none?`);
    const status = await page.locator('#timeline-slices-status').textContent();
    check(status.includes(`${doc.hidden.toLocaleString('en-US')} narrower than a pixel`), `status: ${status}`);
    await page.screenshot({ path: screenshotPath('timeline-slices.png'), fullPage: true });
    return `[${d.from}, ${d.to}) at ${d.min}: ${want.length} slices drawn, ${doc.hidden} hidden`;
  });
  await R.run('hover names a slice\'s frame and extent as the API has them', async () => {
    const { doc } = await apiFor(page, srv.url, job.id);
    // the widest slice at depth 2 (under the process and _start)
    const t = doc.tracks[0];
    const s = t.slices.filter((v) => v[2] === 2).sort((a, b) => (b[1] - b[0]) - (a[1] - a[0]))[0];
    check(s, 'no slice at depth 2');
    const name = doc.frames[s[3]].name;
    await page.locator(`#timeline-slices rect.slice[data-start="${s[0]}"][data-depth="2"]`).hover();
    const text = await page.locator('#timeline-detail').textContent();
    const ext = `[${s[0].toLocaleString('en-US')}, ${s[1].toLocaleString('en-US')}) ${doc.axis}: ${(s[1] - s[0]).toLocaleString('en-US')}`;
    check(text === `hart ${t.hart}: ${name} (${doc.frames[s[3]].kind}, depth 2) ${ext}`, `detail: ${text}; API: ${name} ${ext}`);
    return text;
  });
  await R.run('a zoom asks for the new window and draws its slices', async () => {
    const before = await page.locator('#timeline-slices').evaluate((b) => ({ ...b.dataset }));
    const box = await page.locator('#timeline svg').boundingBox();
    await page.mouse.move(box.x + box.width * 0.5, box.y + 8);
    for (let i = 0; i < 6; i++) await page.mouse.wheel(0, -300);
    await page.waitForFunction((f) => {
      const b = document.querySelector('#timeline-slices');
      return b.dataset.from && b.dataset.from !== f;
    }, before.from, { timeout: 30000 });
    await sleep(300);
    const { d, want } = await apiFor(page, srv.url, job.id);
    check(Number(d.to) - Number(d.from) < Number(before.to) - Number(before.from), `window ${d.from}..${d.to} not narrower`);
    same(await drawn(page), want, 'zoomed');
    return `[${d.from}, ${d.to}) at ${d.min}: ${want.length} slices`;
  });
}

async function processCases(page, srv) {
  const job = await jobFor(srv.url, LOG, ELFS, 'spike full system');
  await page.goto(`${srv.url}/#/jobs/${job.id}/timeline`);
  await page.waitForSelector('#timeline rect.iv', { timeout: 60000 });
  await R.run('stacks per process: a track per (process, hart), names and slices as the API', async () => {
    await waitSlices(page, 'process');
    const { doc, want } = await apiFor(page, srv.url, job.id);
    same(await drawn(page), want, 'by process');
    const labels = await page.locator('#timeline-slices .lane-label').allTextContents();
    const names = doc.tracks.map((t) => (t.process === null ? `no process · hart ${t.hart}`
      : `${t.comm}${t.pid >= 0 ? ` ${t.pid}` : ''} · hart ${t.hart}`));
    check(labels.length === names.length && labels.every((l, i) => l.startsWith(names[i])), `labels ${labels} vs ${names}`);
    check(names.some((n) => n.startsWith('prog')) && names.some((n) => n.startsWith('init')), `tracks ${names}`);
    await page.screenshot({ path: screenshotPath('timeline-slices-process.png'), fullPage: true });
    return `${names.length} tracks: ${names.slice(0, 6).join(', ')}`;
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), PROG, `${PROG}.oobt`, LOG, ...ELFS, CHROMIUM,
    path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_slices');
  const br = await startBrowser(pw, 'slices');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await hartCases(page, srv);
    await processCases(page, srv);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
