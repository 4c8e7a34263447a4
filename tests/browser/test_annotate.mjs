// test_annotate.mjs: the job page's annotate view in a real browser against
// the real oobprofd: from the functions table, a function opens its source
// lines with exact counts and the line's text, then its instructions with
// objdump's text; every number and text checked against GET .../annotate
// (whose numbers test_cli_annotate.sh and test_server_annotate.sh check
// against QEMU's own counts). A job run without per-pc counts says how to
// get them. Screenshots: tests/out/screenshots/annotate-*.png.
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
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
