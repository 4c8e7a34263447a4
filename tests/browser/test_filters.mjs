// test_filters.mjs: view filters that had no test, in a real browser
// against the real oobprofd, each number against the API.
// - The two-hart Linux boot (tests/gen/linux/smp2, its first 40 M records,
//   options.max_insns): the table follows the hart filter: with hart 1
//   chosen, its rows (function, calls, self and total instructions) and its
//   row count are GET /top?hart=1's, which differ from all harts'.
// - Process and hart survive a reload: a process picked in the process tree
//   and hart 1 go into the URL; a reload of it shows the same selection and
//   the table of GET /top?hart=1&pid=P.
// - The Go-state legend (a Go program under QEMU with its Go trace): every
//   Go state the timeline document has is in the legend, and every Go lane
//   interval is drawn in its state's legend colour, one rectangle per
//   interval of the document the page drew.
// Screenshots: tests/out/screenshots/filters-hart.png, filters-reload.png,
// timeline-go-legend.png.
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, SRC, api, check, checkClean, loadPlaywright, missing,
  runMain, screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_filters');
const L = path.join(GEN, 'linux/smp2');
const G = path.join(GEN, 'go');
const N = 40000000;

async function upload(base, p, kind) {
  return api(base, 'POST', `/api/v1/${kind}?name=${path.basename(p)}`, fs.readFileSync(p));
}

async function waitJob(base, id) {
  for (let i = 0; i < 3000; i++) {
    const s = await api(base, 'GET', `/api/v1/jobs/${id}`);
    if (s.state !== 'queued' && s.state !== 'running') {
      check(s.state === 'done', `job ${id} ended ${s.state}: ${JSON.stringify(s.error)}`);
      return s;
    }
    await sleep(100);
  }
  throw new Error(`job ${id} did not finish`);
}

const n = (t) => Number(String(t).replace(/,/g, ''));

// The table as shown: [name, calls, self, total] per row, and "of N" rows.
async function tableOf(page) {
  await page.waitForSelector('#top tbody tr', { timeout: 60000 });
  const rows = await page.locator('#top tbody tr').evaluateAll((trs) => trs.map((tr) => {
    const td = [...tr.children].map((c) => c.innerText);
    return [tr.dataset.name, td[2], td[3], td[4]];
  }));
  const pager = await page.locator('#table-pager').innerText();
  const m = pager.match(/of ([\d,]+)/);
  return { rows: rows.map(([a, b, c, d]) => [a, n(b), n(c), n(d)]), count: m ? n(m[1]) : -1, pager };
}

// Every row shown is one of the API's (a name may have several rows: one
// per binary or source file), and the count is the API's.
function sameTable(t, top, what) {
  const left = new Map();
  for (const f of top.functions) {
    const k = JSON.stringify([f.name, f.calls, f.self_instructions, f.total_instructions]);
    left.set(k, (left.get(k) || 0) + 1);
  }
  check(t.count === top.functions.length, `${what}: ${t.count} rows, the API has ${top.functions.length} (${t.pager})`);
  check(t.rows.length > 5, `${what}: ${t.rows.length} rows shown`);
  for (const r of t.rows) {
    const k = JSON.stringify(r);
    check(left.get(k) > 0, `${what}: row ${k} is none of the API's`);
    left.set(k, left.get(k) - 1);
  }
}

async function waitTable(page, sel) {
  // the table redraws when its request answers: wait for rows again
  await page.waitForFunction((s) => !s || document.querySelector('#top tbody tr'), sel, { timeout: 60000 });
  await sleep(500);
}

async function linuxCases(page, srv) {
  const why = missing(path.join(L, 'boot.oobt'), path.join(L, 'vmlinux'));
  if (why) {
    R.skip('hart filter and reload', why);
    return;
  }
  const t = await upload(srv.url, path.join(L, 'boot.oobt'), 'traces');
  const b = await upload(srv.url, path.join(L, 'vmlinux'), 'binaries');
  const j = await api(srv.url, 'POST', '/api/v1/jobs', JSON.stringify({ trace: t.id, binaries: [b.id], options: { max_insns: N } }));
  await waitJob(srv.url, j.id);
  await R.run('the table follows the hart filter: rows and count of GET /top?hart=1', async () => {
    await page.goto(`${srv.url}/#/jobs/${j.id}`);
    await tableOf(page);
    const all = await api(srv.url, 'GET', `/api/v1/jobs/${j.id}/top?metric=instructions&priv=all&limit=10000000`);
    await page.selectOption('#hart', '1');
    await page.waitForFunction(() => location.hash.includes('hart=1'));
    await waitTable(page);
    const top = await api(srv.url, 'GET', `/api/v1/jobs/${j.id}/top?metric=instructions&priv=all&hart=1&limit=10000000`);
    const shown = await tableOf(page);
    sameTable(shown, top, 'hart 1');
    const sum = (d) => d.functions.reduce((s, f) => s + f.self_instructions, 0);
    check(sum(top) < sum(all) && sum(top) > 0, `hart 1 self sum ${sum(top)}, all ${sum(all)}`);
    await page.locator('#top').screenshot({ path: screenshotPath('filters-hart.png') });
    return `${shown.count} rows on hart 1 (${sum(top)} instructions of ${sum(all)})`;
  });
  await R.run('process and hart survive a reload of the URL: the same table', async () => {
    const procs = await api(srv.url, 'GET', `/api/v1/jobs/${j.id}/processes`);
    const list = procs.processes || procs;
    // a process that ran on hart 1 (its table there is not empty)
    let pick = null;
    for (const p of list) {
      if (p.pid < 0) continue;
      const top = await api(srv.url, 'GET', `/api/v1/jobs/${j.id}/top?metric=instructions&priv=all&hart=1&pid=${p.pid}&limit=10000000`);
      if (top.functions.length > 5) { pick = { p, top }; break; }
    }
    check(pick, 'no process with rows on hart 1');
    const row = page.locator(`#processes li[data-pid="${pick.p.pid}"] > .proc-row .proc-pick`).first();
    await row.click();
    await page.waitForFunction((pid) => location.hash.includes(`pid=${pid}`), pick.p.pid, { timeout: 20000 });
    const url = page.url();
    check(url.includes('hart=1'), `URL lost the hart: ${url}`);
    await page.goto('about:blank');
    await page.goto(url);
    await tableOf(page);
    await waitTable(page);
    check(await page.locator('#hart').inputValue() === '1', 'hart not 1 after the reload');
    const chip = await page.locator('#proc-chip').innerText();
    check(chip.includes(`${pick.p.pid}`), `process chip: ${chip}`);
    sameTable(await tableOf(page), pick.top, `pid ${pick.p.pid} on hart 1 after the reload`);
    await page.locator('#top').screenshot({ path: screenshotPath('filters-reload.png') });
    return `${url.split('#')[1]}: ${pick.top.functions.length} rows (${pick.p.comm})`;
  });
}

async function goCase(page, srv) {
  const files = ['demo.oobt', 'demo.trace', 'gotrace-demo'].map((f) => path.join(G, f));
  const why = missing(...files);
  if (why) {
    R.skip('Go legend', why);
    return;
  }
  const t = await upload(srv.url, files[0], 'traces');
  const g = await upload(srv.url, files[1], 'traces');
  const b = await upload(srv.url, files[2], 'binaries');
  const j = await api(srv.url, 'POST', '/api/v1/jobs', JSON.stringify({ trace: t.id, binaries: [b.id], go_trace: g.id }));
  await waitJob(srv.url, j.id);
  await R.run('the Go-state legend: every state of the document, its colour on every interval', async () => {
    const docs = [];
    const onResp = async (r) => {
      if (r.url().includes(`/jobs/${j.id}/timeline?`) && r.ok()) docs.push({ url: r.url(), doc: await r.json() });
    };
    page.on('response', onResp);
    await page.goto(`${srv.url}/#/jobs/${j.id}/timeline`);
    await page.waitForSelector('#timeline .lane-go rect.iv', { state: 'attached', timeout: 180000 });
    await sleep(500);
    page.off('response', onResp);
    const doc = docs[docs.length - 1].doc;
    const legend = Object.fromEntries(await page.locator('#timeline-legend li[data-kind="go"]').evaluateAll((lis) =>
      lis.map((li) => [li.innerText.replace(/^Go: /, '').trim(), li.dataset.color])));
    const drawn = await page.locator('#timeline .lane-go rect.iv').evaluateAll((rs) =>
      rs.map((r) => [d3.select(r).datum().state, r.getAttribute('fill')]));
    const go = doc.go;
    const ivs = [...(go.gc || []), ...(go.procs || []).flatMap((p) => p.intervals),
      ...(go.threads || []).flatMap((m) => m.intervals), ...(go.goroutines || []).flatMap((x) => x.intervals)];
    const want = {};
    for (const iv of ivs) want[iv[2]] = (want[iv[2]] || 0) + 1;
    const got = {};
    for (const [state, fill] of drawn) {
      check(legend[state], `state ${state} drawn but not in the legend (${Object.keys(legend)})`);
      check(fill === legend[state], `a ${state} interval drawn ${fill}, the legend says ${legend[state]}`);
      got[state] = (got[state] || 0) + 1;
    }
    check(JSON.stringify(Object.entries(got).sort()) === JSON.stringify(Object.entries(want).sort()),
      `intervals per state drawn ${JSON.stringify(got)}, document ${JSON.stringify(want)}`);
    await page.locator('#timeline-legend').screenshot({ path: screenshotPath('timeline-go-legend.png') });
    return Object.entries(want).map(([s, k]) => `${s} ${k}`).join(', ');
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), CHROMIUM, path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_filters');
  const br = await startBrowser(pw, 'filters');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await linuxCases(page, srv);
    await goCase(page, srv);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
