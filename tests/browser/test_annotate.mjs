// test_annotate.mjs: the job page's annotate view in a real browser against
// the real oobprofd: from the functions table, a function opens its source
// lines with exact counts and the line's text, then its instructions with
// objdump's text; every number and text checked against GET .../annotate
// (whose numbers test_cli_annotate.sh and test_server_annotate.sh check
// against QEMU's own counts). The same card opens from a flame-graph frame
// (its action bar after a click, key A on a focused frame), and the URL
// keeps it (function and view): a reload shows it again with the same
// numbers. A job run without per-pc counts says how to get them.
// Screenshots: tests/out/screenshots/annotate-*.png.
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, Reporter, SRC, api, check, checkClean, loadPlaywright, missing, runMain,
  screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_annotate');
const TRACE = path.join(GEN, 'progs/inline.oobt');
const ELF = path.join(GEN, 'progs/inline');
const FN = 'hash_block';

async function job(base, pcs) {
  const t = await api(base, 'POST', '/api/v1/traces?name=inline', fs.readFileSync(TRACE));
  const b = await api(base, 'POST', '/api/v1/binaries?name=inline', fs.readFileSync(ELF));
  const j = await api(base, 'POST', '/api/v1/jobs', JSON.stringify({ trace: t.id, binaries: [b.id], options: { pcs } }));
  for (let i = 0; i < 600; i++) {
    const s = await api(base, 'GET', `/api/v1/jobs/${j.id}`);
    if (s.state !== 'queued' && s.state !== 'running') {
      check(s.state === 'done', `job ${j.id} ended ${s.state}`);
      return s;
    }
    await sleep(100);
  }
  throw new Error(`job ${j.id} did not finish`);
}

const n = (t) => Number(String(t).replace(/[,%]/g, ''));

async function openAnnotate(page, base, id) {
  await page.goto(`${base}/#/jobs/${id}`);
  await page.waitForSelector('#top tbody tr', { timeout: 30000 });
  await page.fill('#table-search', FN);
  await page.click(`#top tbody tr[data-name="${FN}"] button.annotate-open`);
}

// The rows of the open card's table, as the page shows them.
async function tableRows(page, view) {
  const sel = `#annotate-${view} tbody tr`;
  await page.waitForSelector(sel, { timeout: 20000 });
  return page.locator(sel).evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.innerText)));
}

// The page's rows against the API's: instructions, calls, then the line
// (source) or the address (disasm).
function sameRows(rows, f, view) {
  const want = view === 'source' ? f.lines : f.insns;
  check(rows.length === want.length && rows.length > 3, `${rows.length} rows, the API has ${want.length}`);
  want.forEach((w, k) => {
    const r = rows[k];
    const key = view === 'source' ? `${w.file.split('/').pop()}:${w.line}` : w.addr;
    check(n(r[0]) === w.instructions && n(r[2]) === w.calls && r[3] === key,
      `${view} row ${k}: ${JSON.stringify(r)}, API ${JSON.stringify(w)}`);
  });
}

// The flame graph's frame of FN (the heaviest, if several): a selector.
async function frameOf(page) {
  await page.waitForSelector('#flame g.frame', { timeout: 30000 });
  const frameId = await page.evaluate((fn) => {
    const gs = [...document.querySelectorAll('#flame g.frame')]
      .map((g) => [g, d3.select(g).datum()]).filter(([, d]) => d.data.name === fn);
    gs.sort((a, b) => b[1].value - a[1].value);
    return gs.length ? gs[0][0].getAttribute('data-id') : null;
  }, FN);
  check(frameId !== null, `no frame of ${FN} in the flame graph`);
  return `#flame g.frame[data-id="${frameId}"]`;
}

async function flameCases(page, base, withPcs) {
  const api1 = async (view) => (await api(base, 'GET',
    `/api/v1/jobs/${withPcs.id}/annotate?fn=${FN}&view=${view}`)).functions[0];
  await R.run('from a flame-graph frame: its action bar opens the card, numbers as the API', async () => {
    await page.goto(`${base}/#/jobs/${withPcs.id}`);
    await page.click(await frameOf(page));
    await page.waitForSelector('#frame-annotate:not([disabled])');
    const picked = await page.locator('#frame-name').innerText();
    check(picked === FN, `the bar names ${picked}`);
    await page.click('#frame-annotate');
    const f = await api1('source');
    sameRows(await tableRows(page, 'source'), f, 'source');
    const url = new URL(page.url().replace('#/', ''));
    check(url.searchParams.get('ann') === FN, `URL ${page.url()} does not name the card's function`);
    return `${f.lines.length} lines, URL ${page.url().split('#')[1]}`;
  });
  await R.run('keyboard: key A on a focused frame opens it; the view goes into the URL', async () => {
    await page.click('#annotate-close');
    check(await page.locator('#annotate').isHidden(), 'the card did not close');
    check(!page.url().includes('ann='), `closed, the URL still has it: ${page.url()}`);
    await page.focus(await frameOf(page));
    await page.keyboard.press('a');
    await tableRows(page, 'source');
    await page.click('#annotate-disasm-tab');
    const f = await api1('disasm');
    sameRows(await tableRows(page, 'disasm'), f, 'disasm');
    check(page.url().includes('aview=disasm') && page.url().includes(`ann=${FN}`), `URL: ${page.url()}`);
    return `${f.insns.length} instructions`;
  });
  await R.run('a reload of the URL shows the same card: view, function and numbers', async () => {
    const url = page.url();
    await page.goto('about:blank');
    await page.goto(url);
    const f = await api1('disasm');
    sameRows(await tableRows(page, 'disasm'), f, 'disasm');
    const pressed = await page.locator('#annotate-disasm-tab').getAttribute('aria-pressed');
    check(pressed === 'true', `disasm tab aria-pressed ${pressed}`);
    const total = await page.locator('#annotate .annotate-total').innerText();
    check(total.startsWith(FN) && total.includes(`${f.instructions.toLocaleString('en-US')} instructions`), `total: ${total}`);
    await sleep(600); // the zoom's transition (250 ms) ends, the labels are drawn
    await page.locator('.flame-card').screenshot({ path: screenshotPath('annotate-from-flame.png') });
    await page.locator('#annotate').screenshot({ path: screenshotPath('annotate-reloaded.png') });
    return `${url.split('#')[1]}: ${f.insns.length} instructions, ${f.instructions} in all`;
  });
}

async function cases(page, base, withPcs, without) {
  await R.run('source lines: every line\'s instructions, calls and text as the API', async () => {
    const doc = await api(base, 'GET', `/api/v1/jobs/${withPcs.id}/annotate?fn=${FN}&view=source`);
    await openAnnotate(page, base, withPcs.id);
    await page.waitForSelector('#annotate-source tbody tr', { timeout: 20000 });
    const rows = await page.locator('#annotate-source tbody tr').evaluateAll((trs) => trs.map(
      (tr) => [...tr.children].map((td) => td.innerText)));
    const f = doc.functions[0];
    check(rows.length === f.lines.length && rows.length > 3, `${rows.length} rows, the API has ${f.lines.length}`);
    f.lines.forEach((l, k) => {
      const r = rows[k];
      const where = `${l.file.split('/').pop()}:${l.line}`;
      check(n(r[0]) === l.instructions && n(r[2]) === l.calls && r[3] === where && r[4] === (l.text || '').trim(),
        `row ${k}: ${JSON.stringify(r)}, API ${JSON.stringify(l)}`);
    });
    const total = await page.locator('#annotate .annotate-total').innerText();
    check(total.includes(`${f.instructions.toLocaleString('en-US')} instructions`), `total: ${total}`);
    await page.locator('#annotate').screenshot({ path: screenshotPath('annotate-source.png') });
    return `${rows.length} lines, ${f.instructions} instructions`;
  });
  await R.run('instructions: every pc\'s counts and objdump text as the API', async () => {
    const doc = await api(base, 'GET', `/api/v1/jobs/${withPcs.id}/annotate?fn=${FN}&view=disasm`);
    await page.click('#annotate-disasm-tab');
    await page.waitForSelector('#annotate-disasm tbody tr', { timeout: 20000 });
    const rows = await page.locator('#annotate-disasm tbody tr').evaluateAll((trs) => trs.map(
      (tr) => [tr.dataset.pc, ...[...tr.children].map((td) => td.innerText)]));
    const f = doc.functions[0];
    check(rows.length === f.insns.length && f.insns.every((i) => i.asm), `${rows.length} rows, the API has ${f.insns.length}`);
    f.insns.forEach((i, k) => {
      const r = rows[k];
      check(r[0] === i.pc && n(r[1]) === i.instructions && n(r[3]) === i.calls && r[4] === i.addr &&
        r[5].replace(/\s+/g, ' ') === i.asm.replace(/\s+/g, ' '), `row ${k}: ${JSON.stringify(r)}, API ${JSON.stringify(i)}`);
    });
    const inl = rows.filter((r) => r[6].includes('inlined:')).length;
    check(inl > 0, 'no row says it is inlined code');
    await page.locator('#annotate').screenshot({ path: screenshotPath('annotate-disasm.png') });
    return `${rows.length} instructions, ${inl} inlined`;
  });
  await R.run('a job without per-pc counts says how to get them', async () => {
    await openAnnotate(page, base, without.id);
    await page.waitForSelector('#annotate .msg', { timeout: 20000 });
    const msg = await page.locator('#annotate .msg').innerText();
    check(msg.includes('options.pcs'), `message: ${msg}`);
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), TRACE, ELF, CHROMIUM,
    path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_annotate');
  const br = await startBrowser(pw, 'annotate');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    const withPcs = await job(srv.url, true);
    const without = await job(srv.url, false);
    await cases(page, srv.url, withPcs, without);
    await flameCases(page, srv.url, withPcs);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
