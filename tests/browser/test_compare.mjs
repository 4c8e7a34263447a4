// test_compare.mjs: the diff view (#/compare) in a real browser against the
// real oobprofd. Job A: a real RISC-V program's trace with its ELF (exact).
// Job S: 3000 stacks drawn from A's folded stacks (`oobprof fold`) by a
// seeded generator here, uploaded as a sampled folded file. Job H: the same
// program cut at half its instructions (options.max_insns), exact.
// Every number the page shows is checked against the API's JSON, and the
// API's numbers against shares this test computes from the folded files
// itself: the stack error, every drawn frame's shares and colour, each
// listed function's self shares, 3 sigma and flag.
// Screenshots: tests/out/screenshots/compare-*.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, GEN, OUT, Reporter, SRC, api, check, checkClean, loadPlaywright, missing, runMain,
  screenshotPath, shutdown, sleep, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_compare');
const PROG = path.join(GEN, 'progs/mutual');
const TRACE = PROG + '.oobt';
const SAMPLES = 3000;
const DIGITS = 3; // static/diff.js SHARE_DIGITS

function oobprof(args) {
  const r = spawnSync(path.join(BUILD, 'oobprof'), args, { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error(`oobprof ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

// folded text -> Map(stack -> weight)
function parseFolded(text) {
  const m = new Map();
  for (const line of text.split('\n')) {
    if (!line) continue;
    const i = line.lastIndexOf(' ');
    const k = line.slice(0, i);
    m.set(k, (m.get(k) || 0) + Number(line.slice(i + 1)));
  }
  return m;
}

// mulberry32: a seeded draw, so the sampled side is the same every run.
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function drawSamples(stacks, n, seed) {
  const keys = [...stacks.keys()];
  const cum = [];
  let sum = 0;
  for (const k of keys) cum.push((sum += stacks.get(k)));
  const r = rng(seed);
  const got = new Map();
  for (let i = 0; i < n; i++) {
    const x = r() * sum;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid] > x) hi = mid;
      else lo = mid + 1;
    }
    got.set(keys[lo], (got.get(keys[lo]) || 0) + 1);
  }
  return got;
}

const total = (m) => [...m.values()].reduce((a, b) => a + b, 0);

// Per path prefix ("a;b"), the share of the side's total under it.
function prefixShares(stacks) {
  const t = total(stacks);
  const m = new Map();
  for (const [k, w] of stacks) {
    const parts = k.split(';');
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join(';');
      m.set(p, (m.get(p) || 0) + w / t);
    }
  }
  return m;
}

// Per function, the self share (stacks whose leaf it is).
function selfShares(stacks) {
  const t = total(stacks);
  const m = new Map();
  for (const [k, w] of stacks) {
    const leaf = k.slice(k.lastIndexOf(';') + 1);
    m.set(leaf, (m.get(leaf) || 0) + w / t);
  }
  return m;
}

const pctText = (share) => (100 * share).toFixed(DIGITS) + '%';
const ppNum = (t) => Number(String(t).replace(/[+ pp]/g, ''));
const near = (a, b, eps = 1e-9) => Math.abs(a - b) <= eps;

async function startJob(base, trace, name, binaries, options) {
  const t = await api(base, 'POST', `/api/v1/traces?name=${encodeURIComponent(name)}`, trace);
  const spec = { trace: t.id, binaries };
  if (options) spec.options = options;
  const j = await api(base, 'POST', '/api/v1/jobs', JSON.stringify(spec));
  for (let i = 0; i < 600; i++) {
    const s = await api(base, 'GET', `/api/v1/jobs/${j.id}`);
    if (s.state !== 'queued' && s.state !== 'running') {
      check(s.state === 'done', `job ${j.id} ended ${s.state}: ${JSON.stringify(s.error)}`);
      return s;
    }
    await sleep(100);
  }
  throw new Error(`job ${j.id} did not finish`);
}

async function waitResult(page) {
  await page.waitForSelector('#compare-flame g.frame', { timeout: 20000 });
  await sleep(200);
}

// The drawn frames: name path, data and fill.
function drawnFrames(page) {
  return page.locator('#compare-flame g.frame').evaluateAll((gs) => gs.map((g) => {
    const d = d3.select(g).datum();
    const names = [];
    for (let n = d; n && n.parent; n = n.parent) names.push(n.data.name);
    const rect = g.querySelector('rect');
    return {
      path: names.reverse().join(';'), value: d.data.value, base: d.data.base_share, other: d.data.other_share,
      change: d.data.change, fill: rect ? getComputedStyle(rect).fill : '',
    };
  }));
}

function rgb(fill) {
  const m = fill.match(/(\d+),\s*(\d+),\s*(\d+)/);
  return m ? m.slice(1, 4).map(Number) : null;
}

async function tableRows(page, id) {
  return page.locator(`#${id} tbody tr[data-name]`).evaluateAll((trs) => trs.map((tr) => ({
    name: tr.dataset.name, within: tr.dataset.within, cells: [...tr.children].map((td) => td.innerText),
  })));
}

// log Γ(x), x > 0 (Lanczos, g = 7: 15 digits).
const LANCZOS = [0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
  -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7];
function lgamma(x) {
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - lgamma(1 - x);
  x -= 1;
  let a = LANCZOS[0];
  const t = x + 7.5;
  for (let i = 1; i < 9; i++) a += LANCZOS[i] / (x + i);
  return 0.5 * Math.log(2 * Math.PI) + (x + 0.5) * Math.log(t) - t + Math.log(a);
}

// P(X >= k) (up) or P(X <= k) for X ~ Binomial(n, p).
function binomTail(n, k, p, up) {
  let sum = 0;
  for (let j = k; j >= 0 && j <= n; j += up ? 1 : -1) {
    const t = Math.exp(lgamma(n + 1) - lgamma(j + 1) - lgamma(n - j + 1) + j * Math.log(p) + (n - j) * Math.log1p(-p));
    sum += t;
    if (t < sum * 1e-17) break;
  }
  return sum;
}

// Whether a sampled share psmp of n samples is what sampling explains at the
// exact share pe: within 3 sigma, or, where few samples make the normal
// tail too thin (n p (1 - p) < 1e4), an exact binomial tail beyond the count
// seen of at least 0.135 % (the rule of profile_diff.c's within_bound).
function withinBound(pe, psmp, n) {
  const sigma = Math.sqrt((pe * (1 - pe)) / n);
  if (Math.abs(psmp - pe) <= 3 * sigma + 1e-12) return true;
  if (pe <= 0 || pe >= 1 || n * pe * (1 - pe) >= 1e4) return false;
  const k = Math.round(psmp * n);
  return binomTail(n, k, pe, k > n * pe) >= 0.00135;
}

// The over and under tables against the API's rows, and those against the
// self shares of the folded files and the binomial bound computed here.
// Returns how many rows are flagged outside 3 sigma.
async function checkTables(page, c, foldA, foldS) {
  const selfA = selfShares(foldA);
  const selfS = selfShares(foldS);
  const n = total(foldS);
  let flagged = 0;
  for (const [id, list] of [['compare-over', c.summary.over], ['compare-under', c.summary.under]]) {
    const rows = await tableRows(page, id);
    check(rows.length === list.length, `${id}: ${rows.length} rows, API ${list.length}`);
    for (let i = 0; i < list.length; i++) {
      const r = rows[i];
      const f = c.functions.find((x) => x.name === list[i].name);
      check(r.name === f.name, `${id} row ${i}: ${r.name}, API ${f.name}`);
      const [, bs, os, ch, bt, ot, sig, flag] = r.cells;
      check(bs === pctText(f.base) && os === pctText(f.other) && bt === pctText(f.base_total) &&
        ot === pctText(f.other_total), `${f.name}: cells ${r.cells.join('|')}, API ${JSON.stringify(f)}`);
      check(near(ppNum(ch), Number((100 * f.delta).toFixed(DIGITS))), `${f.name}: change "${ch}", API ${f.delta}`);
      // independent: self shares from the folded files, the binomial bound
      const pe = selfA.get(f.name) || 0;
      const psmp = selfS.get(f.name) || 0;
      check(near(f.base, pe) && near(f.other, psmp), `${f.name}: API ${f.base}/${f.other}, folded ${pe}/${psmp}`);
      const sigma = Math.sqrt((pe * (1 - pe)) / n);
      check(near(ppNum(sig), Number((300 * sigma).toFixed(DIGITS))), `${f.name}: 3 sigma "${sig}", here ${3 * sigma}`);
      const within = withinBound(pe, psmp, n);
      check(r.within === String(within) && (within ? /within/ : /outside/).test(flag),
        `${f.name}: flag "${flag}" (${r.within}), here |${psmp - pe}| vs ${3 * sigma}, within ${within}`);
      if (!within) flagged++;
    }
  }
  return flagged;
}

async function sampledCases(page, srv, a, s, foldA, foldS) {
  const api1 = await api(srv.url, 'GET', `/api/v1/compare?base=${a.id}&other=${s.id}&metric=instructions&top=10`);

  await R.run('summary: the API\'s numbers; the stack error = the folded files\' own', async () => {
    await page.goto(`${srv.url}/#/compare?base=${a.id}&other=${s.id}`);
    await waitResult(page);
    const fe = await page.locator('#compare-function-error').innerText();
    const se = await page.locator('#compare-stack-error').innerText();
    check(fe === pctText(api1.summary.function_error), `function error "${fe}", API ${api1.summary.function_error}`);
    check(se === pctText(api1.summary.stack_error), `stack error "${se}", API ${api1.summary.stack_error}`);
    const pa = new Map([...foldA].map(([k, w]) => [k, w / total(foldA)]));
    const ps = new Map([...foldS].map(([k, w]) => [k, w / total(foldS)]));
    let tv = 0;
    for (const k of new Set([...pa.keys(), ...ps.keys()])) tv += Math.abs((pa.get(k) || 0) - (ps.get(k) || 0));
    tv /= 2;
    check(near(api1.summary.stack_error, tv), `API stack error ${api1.summary.stack_error}, folded files ${tv}`);
    const other = await page.locator('#compare-other-side').innerText();
    check(other.includes(`${SAMPLES.toLocaleString('en-US')} samples`), `other side "${other}"`);
    const base = await page.locator('#compare-base-side').innerText();
    check(base.includes('exact') && base.includes(total(foldA).toLocaleString('en-US')), `base side "${base}"`);
    const bound = await page.locator('#compare-bound').innerText();
    check(bound.includes(`${api1.summary.outside_bound} of ${api1.summary.functions}`), `bound "${bound}"`);
    return `stack error ${se} (here ${(100 * tv).toFixed(DIGITS)}%), function error ${fe}`;
  });

  await R.run('over/under tables: the API\'s lists, shares and 3-sigma flags, recomputed', async () => {
    const flagged = await checkTables(page, api1, foldA, foldS);
    await page.locator('#compare-functions').screenshot({ path: screenshotPath('compare-functions.png') });
    return `${api1.summary.over.length} + ${api1.summary.under.length} functions, ${flagged} outside 3 sigma`;
  });

  await R.run('differential flame graph: every drawn frame\'s shares and colour, recomputed', async () => {
    const pa = prefixShares(foldA);
    const ps = prefixShares(foldS);
    const frames = await drawnFrames(page);
    check(frames.length > 10, `${frames.length} frames drawn`);
    let red = 0;
    let blue = 0;
    for (const f of frames) {
      if (!f.path) continue; // the root: both shares 1
      const b = pa.get(f.path) || 0;
      const o = ps.get(f.path) || 0;
      check(near(f.base, b) && near(f.other, o), `${f.path}: drawn ${f.base}/${f.other}, folded ${b}/${o}`);
      check(near(f.value, o * SAMPLES, 1e-6), `${f.path}: sized ${f.value}, other's samples ${o * SAMPLES}`);
      const [rr, gg, bb] = rgb(f.fill) || [];
      const change = o - b;
      if (change > 1e-12) {
        check(rr === 245 && bb < 245, `${f.path}: grew ${change}, fill ${f.fill}`);
        red++;
      } else if (change < -1e-12) {
        check(bb === 245 && rr < 245, `${f.path}: shrank ${change}, fill ${f.fill}`);
        blue++;
      } else {
        check(rr === 245 && gg === 245 && bb === 245, `${f.path}: unchanged, fill ${f.fill}`);
      }
    }
    check(red && blue, `${red} red, ${blue} blue frames`);
    // the tooltip of the most changed frame
    const most = frames.filter((f) => f.path).sort((x, y) => Math.abs(y.change) - Math.abs(x.change))[0];
    await page.locator(`#compare-flame g.frame`).evaluateAll((gs, p) => {
      const g = gs.find((x) => {
        const names = [];
        for (let n = d3.select(x).datum(); n && n.parent; n = n.parent) names.push(n.data.name);
        return names.reverse().join(';') === p;
      });
      g.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 300, clientY: 300 }));
    }, most.path);
    await sleep(100);
    const tipText = await page.locator('.screen-tip').innerText();
    check(tipText.includes(pctText(most.base)) && tipText.includes(pctText(most.other)),
      `tooltip "${tipText}", frame ${most.base}/${most.other}`);
    const vanished = await page.locator('#compare-vanished').count();
    await page.screenshot({ path: screenshotPath('compare-sampled.png'), fullPage: true });
    return `${frames.length} frames: ${red} grew, ${blue} shrank; ${vanished ? 'vanished contexts noted' : 'none vanished'}`;
  });

  await R.run('frames of the base: sized by the base, vanished contexts drawn; the URL keeps it', async () => {
    await page.selectOption('#compare-by', 'base');
    await page.waitForFunction(() => location.hash.includes('by=base'));
    await waitResult(page);
    const frames = await drawnFrames(page);
    const pa = prefixShares(foldA);
    const root = frames.find((f) => !f.path);
    check(near(root.value, total(foldA), 1e-6), `root ${root.value}, base total ${total(foldA)}`);
    const gone = frames.filter((f) => f.path && f.other === 0);
    for (const f of frames.filter((x) => x.path)) {
      check(near(f.value, pa.get(f.path) * total(foldA), 1e-6), `${f.path}: sized ${f.value}`);
    }
    check(gone.length > 0, 'no drawn frame of the base is absent from the sample');
    await page.selectOption('#compare-top', '5');
    await page.waitForFunction(() => document.querySelectorAll('#compare-over tbody tr[data-name]').length === 5);
    const url = page.url();
    check(url.includes(`base=${a.id}`) && url.includes(`other=${s.id}`) && url.includes('top=5'), `URL ${url}`);
    await page.reload();
    await waitResult(page);
    check(await page.locator('#compare-by').inputValue() === 'base', 'by not kept on reload');
    const n = await page.locator('#compare-over tbody tr[data-name]').count();
    check(n === 5, `${n} rows after reload`);
    return `${frames.length} frames, ${gone.length} never sampled`;
  });
}

// A biased sampler: the stacks under the function with the largest self
// share are never sampled. The flags must say so.
async function biasedCases(page, srv, a, foldA, b, foldB, dropped) {
  await R.run('a biased sample: functions outside 3 sigma flagged, as recomputed', async () => {
    await page.goto(`${srv.url}/#/compare?base=${a.id}&other=${b.id}`);
    await waitResult(page);
    const c = await api(srv.url, 'GET', `/api/v1/compare?base=${a.id}&other=${b.id}&metric=instructions&top=10`);
    const flagged = await checkTables(page, c, foldA, foldB);
    check(flagged > 0, 'no function flagged outside 3 sigma');
    const row = await page.locator(`#compare-under tr[data-name="${dropped}"]`).getAttribute('data-within');
    check(row === 'false', `${dropped} (never sampled): data-within ${row}`);
    await page.locator('#compare-functions').screenshot({ path: screenshotPath('compare-biased.png') });
    return `${flagged} functions outside 3 sigma, ${dropped} among them`;
  });
}

async function exactCases(page, srv, a, h, foldA, foldH) {
  await R.run('two exact jobs: no sampling bound, the shares of each run', async () => {
    await page.goto(`${srv.url}/#/jobs/${a.id}`);
    await page.click('#open-compare');
    await page.waitForSelector(`#compare-other option[value="${h.id}"]`, { state: 'attached' });
    await page.selectOption('#compare-other', String(h.id));
    await waitResult(page);
    const c = await api(srv.url, 'GET', `/api/v1/compare?base=${a.id}&other=${h.id}&metric=instructions&top=10`);
    const bound = await page.locator('#compare-bound').innerText();
    check(/none/.test(bound) && c.summary.bound === null, `bound "${bound}", API ${c.summary.bound}`);
    const head = await page.locator('#compare-over thead th').allInnerTexts();
    check(head.length === 6, `columns ${head.join('|')}`);
    const selfA = selfShares(foldA);
    const selfH = selfShares(foldH);
    const rows = await tableRows(page, 'compare-over');
    check(rows.length === c.summary.over.length, `${rows.length} rows, API ${c.summary.over.length}`);
    for (const r of rows) {
      const want = (selfH.get(r.name) || 0) - (selfA.get(r.name) || 0);
      check(near(ppNum(r.cells[3]), Number((100 * want).toFixed(DIGITS))), `${r.name}: "${r.cells[3]}", folded ${want}`);
      check(r.cells[1] === pctText(selfA.get(r.name) || 0) && r.cells[2] === pctText(selfH.get(r.name) || 0),
        `${r.name}: ${r.cells.join('|')}`);
    }
    check(page.url().includes(`other=${h.id}`), `URL ${page.url()}`);
    await page.screenshot({ path: screenshotPath('compare-exact.png'), fullPage: true });
    return `${rows.length} functions grew; stack error ${pctText(c.summary.stack_error)}`;
  });

  await R.run('a job that is not there: the API\'s error, no graph', async () => {
    await page.goto(`${srv.url}/#/compare?base=${a.id}&other=999999`);
    await page.waitForSelector('#compare-note .msg.error');
    const t = await page.locator('#compare-note').innerText();
    check(await page.locator('#compare-flame').count() === 0, 'a graph was drawn');
    return t.slice(0, 80);
  });
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), path.join(BUILD, 'oobprof'), TRACE, PROG, CHROMIUM,
    path.join(SRC, 'static/vendor/d3-flamegraph.umd.min.js'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_compare');
  const br = await startBrowser(pw, 'compare');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    const foldA = parseFolded(oobprof(['fold', '--elf', PROG, TRACE]));
    const foldS = drawSamples(foldA, SAMPLES, 17);
    const sampled = [...foldS].map(([k, w]) => `${k} ${w}\n`).join('');
    fs.writeFileSync(path.join(OUT, 'browser_compare/sampled.folded'), sampled);
    const bin = await api(srv.url, 'POST', '/api/v1/binaries?name=mutual', fs.readFileSync(PROG));
    const a = await startJob(srv.url, fs.readFileSync(TRACE), 'mutual.oobt', [bin.id]);
    const s = await startJob(srv.url, sampled, 'sampled.folded', []);
    const half = Math.floor(total(foldA) / 2);
    const h = await startJob(srv.url, fs.readFileSync(TRACE), 'mutual-half.oobt', [bin.id], { max_insns: half });
    const foldH = parseFolded(oobprof(['fold', '--max-insns', String(half), '--elf', PROG, TRACE]));
    await sampledCases(page, srv, a, s, foldA, foldS);
    const selfA = selfShares(foldA);
    const dropped = [...selfA].sort((x, y) => y[1] - x[1])[0][0];
    const foldB = drawSamples(new Map([...foldA].filter(([k]) => !k.endsWith(';' + dropped))), SAMPLES, 18);
    const b = await startJob(srv.url, [...foldB].map(([k, w]) => `${k} ${w}\n`).join(''), 'biased.folded', []);
    await biasedCases(page, srv, a, foldA, b, foldB, dropped);
    await exactCases(page, srv, a, h, foldA, foldH);
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
