// harness.mjs: what the browser tests (tests/browser/*.mjs) share. Starts the
// real oobprofd on 127.0.0.1 with a kernel-chosen port and a data folder of
// its own, drives Debian's Chromium through playwright-core (headless, a
// fresh profile, every request that is not to 127.0.0.1 blocked and
// counted), and prints the runner's "PASS/FAIL/SKIP: <file>: <case>" lines.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

export const SRC = process.env.OOB_SRCDIR || path.resolve(import.meta.dirname, '../../..');
export const BUILD = process.env.OOB_BUILDDIR || SRC;
export const GEN = path.join(BUILD, 'tests/gen');
export const OUT = path.join(BUILD, 'tests/out');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export class Reporter {
  constructor(file) {
    this.file = file;
    this.failed = 0;
    this.passed = 0;
  }

  pass(name, detail) {
    this.passed++;
    console.log(`PASS: ${this.file}: ${name}${detail ? ' (' + detail + ')' : ''}`);
  }

  fail(name, why) {
    this.failed++;
    console.log(`FAIL: ${this.file}: ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 600)}`);
  }

  skip(name, why) {
    console.log(`SKIP: ${this.file}: ${name}: ${why}`);
  }

  // Runs fn; a throw is a FAIL of that case. Returns fn's value or undefined.
  async run(name, fn) {
    try {
      const detail = await fn();
      this.pass(name, typeof detail === 'string' ? detail : undefined);
      return detail;
    } catch (e) {
      this.fail(name, e && e.message ? e.message : e);
      return undefined;
    }
  }
}

export function check(cond, what) {
  if (!cond) throw new Error(what);
}

// What a test needs before it can start; returns a reason to skip, or null.
export function missing(...files) {
  for (const f of files) if (!fs.existsSync(f)) return `${f} is missing`;
  return null;
}

export async function loadPlaywright() {
  const p = path.join(SRC, 'node_modules/playwright-core/index.mjs');
  if (!fs.existsSync(p)) return null;
  return import(pathToFileURL(p).href);
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// ---- the server ----

export async function startServer(name) {
  const dir = path.join(OUT, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const portFile = path.join(dir, 'port');
  const log = fs.openSync(path.join(dir, 'server.log'), 'a');
  const proc = spawn(path.join(BUILD, 'oobprofd'), ['--listen', '127.0.0.1:0', '--port-file', portFile,
    '--data', path.join(dir, 'data'), '--static', path.join(SRC, 'static'), '--log-level', 'info'],
  { stdio: ['ignore', log, log] });
  let exited = null;
  proc.on('exit', (code, sig) => { exited = code ?? sig; });
  for (let i = 0; i < 200 && !exited; i++) {
    if (fs.existsSync(portFile) && fs.readFileSync(portFile, 'utf8').trim()) break;
    await sleep(100);
  }
  if (!fs.existsSync(portFile)) {
    proc.kill('SIGKILL');
    throw new Error('oobprofd did not start: ' + fs.readFileSync(path.join(dir, 'server.log'), 'utf8').slice(-300));
  }
  const url = `http://127.0.0.1:${fs.readFileSync(portFile, 'utf8').trim()}`;
  return {
    url,
    dir,
    // SIGTERM, then the exit status (sanitizer reports make it non-zero).
    async stop() {
      if (exited !== null) return exited;
      proc.kill('SIGTERM');
      for (let i = 0; i < 300 && exited === null; i++) await sleep(100);
      if (exited === null) {
        proc.kill('SIGKILL');
        return 'killed';
      }
      return exited;
    },
  };
}

export async function api(base, method, p, body) {
  const resp = await fetch(base + p, { method, body });
  const text = await resp.text();
  let json = null;
  try { json = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!resp.ok) throw new Error(`${method} ${p}: ${resp.status} ${text.slice(0, 200)}`);
  return json ?? text;
}

// Uploads a trace and its ELF files (one path or a list), starts a job and
// waits for it to finish.
export async function jobFor(base, trace, elfs, name) {
  const t = await api(base, 'POST', `/api/v1/traces?name=${encodeURIComponent(name)}`, fs.readFileSync(trace));
  const ids = [];
  for (const elf of [elfs].flat()) {
    const b = await api(base, 'POST', `/api/v1/binaries?name=${encodeURIComponent(path.basename(elf))}`,
      fs.readFileSync(elf));
    ids.push(b.id);
  }
  const j = await api(base, 'POST', '/api/v1/jobs', JSON.stringify({ trace: t.id, binaries: ids }));
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

// `oobprof top --json` on the same inputs: the numbers the pages must show.
export function cliTop(trace, elfs, metric = 'instructions') {
  const args = ['top', '--json', '--metric', metric];
  for (const e of [elfs].flat()) args.push('--elf', e);
  const r = spawnSync(path.join(BUILD, 'oobprof'), [...args, trace], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (r.status !== 0) throw new Error('oobprof top failed: ' + r.stderr);
  return JSON.parse(r.stdout);
}

// ---- the browser ----

export async function startBrowser(pw, name) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), `oobprof-${name}-`));
  const context = await pw.chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1440, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const blocked = [];
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if ((u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'ws:') && u.hostname !== '127.0.0.1') {
      blocked.push(u.href);
      return route.abort();
    }
    return route.continue();
  });
  return {
    context,
    blocked,
    async close() {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}

export function screenshotPath(name) {
  const dir = path.join(OUT, 'screenshots');
  fs.mkdirSync(dir, { recursive: true });
  return path.join(dir, name);
}

// ---- the end of every browser test ----

// The last case: the page threw nothing and asked nothing of another host.
export async function checkClean(R, br, errors) {
  await R.run('no page errors, no request left 127.0.0.1', async () => {
    check(errors.length === 0, `page errors: ${errors.join('; ')}`);
    check(br.blocked.length === 0, `blocked: ${br.blocked.slice(0, 3).join(', ')}`);
  });
}

// Closes the browser and stops the server; a non-zero exit (a sanitizer
// report) is a FAIL.
export async function shutdown(R, br, srv) {
  await br.close();
  const rc = await srv.stop();
  if (rc !== 0) R.fail('server exit', `oobprofd exited with ${rc} (see ${srv.dir}/server.log)`);
}

// Runs main; a crash of the harness itself is a FAIL; exit status 1 on any.
export function runMain(R, main) {
  main().catch((e) => R.fail('harness', e.stack || e)).finally(() => process.exit(R.failed ? 1 : 0));
}
