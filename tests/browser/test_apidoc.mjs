// test_apidoc.mjs: the API reference page and the favicon in a real browser
// against the real oobprofd. The header links to /api.html, which renders
// the server's /api/v1/openapi.yaml with static/yaml.js; what it lists is
// checked against two other readers: the operations against the routes the
// server registers (oobprofd --print-routes), each summary and parameter
// list against PyYAML's reading of api/openapi.yaml (when PyYAML is
// installed). /favicon.ico answers with static/favicon.svg.
// Screenshot: tests/out/screenshots/api.png.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  BUILD, CHROMIUM, Reporter, SRC, check, checkClean, loadPlaywright, missing, runMain, screenshotPath,
  shutdown, startBrowser, startServer,
} from './lib/harness.mjs';

const R = new Reporter('test_apidoc');

// PyYAML's reading: {"METHOD path": [summary, [parameter names]]}, or null.
function pyyamlOps() {
  const r = spawnSync('python3', ['-c', `
import json, sys
try:
    import yaml
except ImportError:
    print("null"); sys.exit(0)
d = yaml.safe_load(open(sys.argv[1]))
def res(p):
    if "$ref" in p:
        n = d
        for k in p["$ref"][2:].split("/"): n = n[k]
        return n
    return p
out = {}
for path, item in d["paths"].items():
    for m, op in item.items():
        if m in ("get", "post", "put", "delete", "patch", "head"):
            out[m.upper() + " " + path] = [op.get("summary", ""), [res(p)["name"] for p in op.get("parameters", [])]]
print(json.dumps(out))`, path.join(SRC, 'api/openapi.yaml')], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error('python3: ' + r.stderr);
  return JSON.parse(r.stdout);
}

async function main() {
  const why = missing(path.join(BUILD, 'oobprofd'), CHROMIUM, path.join(SRC, 'static/api.html'));
  const pw = await loadPlaywright();
  if (why || !pw) {
    R.skip('all', why || 'playwright-core is not installed (npm ci)');
    return;
  }
  const srv = await startServer('browser_apidoc');
  const br = await startBrowser(pw, 'apidoc');
  const page = await br.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  try {
    await R.run('the header links to the API page, which lists exactly the served routes', async () => {
      await page.goto(`${srv.url}/#/`);
      await page.click('#api-link');
      await page.waitForSelector('.api-op', { timeout: 20000 });
      const shown = await page.locator('.api-op').evaluateAll((ss) => ss.map((s) => `${s.dataset.method} ${s.dataset.path}`));
      const r = spawnSync(path.join(BUILD, 'oobprofd'), ['--print-routes'], { encoding: 'utf8' });
      const served = r.stdout.split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/).join(' '));
      const a = [...new Set(shown)].sort(); const b = [...new Set(served)].sort();
      check(shown.length === a.length, `${shown.length - a.length} operations listed twice`);
      check(JSON.stringify(a) === JSON.stringify(b),
        `page only: ${a.filter((x) => !b.includes(x))}; server only: ${b.filter((x) => !a.includes(x))}`);
      const status = await page.locator('#api-status').textContent();
      check(status.includes(`${b.length} operations`), `status "${status}"`);
      await page.screenshot({ path: screenshotPath('api.png') });
      return `${a.length} operations`;
    });
    await R.run('each summary and parameter list is what PyYAML reads in api/openapi.yaml', async () => {
      const want = pyyamlOps();
      if (!want) return 'PyYAML not installed: compared nothing';
      const got = await page.locator('.api-op').evaluateAll((ss) => Object.fromEntries(ss.map((s) => [
        `${s.dataset.method} ${s.dataset.path}`,
        [s.querySelector('.api-summary').textContent, [...s.querySelectorAll('tr[data-param]')].map((t) => t.dataset.param)]])));
      const keys = Object.keys(want);
      check(keys.length === Object.keys(got).length, `${keys.length} operations in PyYAML, ${Object.keys(got).length} shown`);
      let params = 0;
      for (const k of keys) {
        check(JSON.stringify(got[k]) === JSON.stringify(want[k]), `${k}: shown ${JSON.stringify(got[k])}, PyYAML ${JSON.stringify(want[k])}`);
        params += want[k][1].length;
      }
      return `${keys.length} summaries, ${params} parameters`;
    });
    await R.run('/favicon.ico answers with the SVG icon the pages link', async () => {
      const resp = await fetch(`${srv.url}/favicon.ico`);
      const body = Buffer.from(await resp.arrayBuffer());
      check(resp.status === 200 && resp.headers.get('content-type') === 'image/svg+xml', `${resp.status} ${resp.headers.get('content-type')}`);
      check(body.equals(fs.readFileSync(path.join(SRC, 'static/favicon.svg'))), 'body is not static/favicon.svg');
      for (const p of ['/', '/api.html']) {
        await page.goto(srv.url + p);
        const href = await page.locator('link[rel="icon"]').getAttribute('href');
        const r = await fetch(new URL(href, srv.url + p));
        check(r.status === 200, `${p}: icon ${href} -> ${r.status}`);
      }
      return `${body.length} bytes`;
    });
    await checkClean(R, br, errors);
  } finally {
    await shutdown(R, br, srv);
  }
}

runMain(R, main);
