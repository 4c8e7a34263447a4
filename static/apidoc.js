// apidoc.js: the API reference page (api.html). Reads the server's own
// /api/v1/openapi.yaml (yaml.js) and lists every path and method with its
// summary, description and parameters ($ref's resolved), so that what is
// shown is what the server documents, never a copy that drifts.
import { getToken } from './api.js';
import { el, message } from './util.js';
import { parseYAML } from './yaml.js';

const METHODS = ['get', 'post', 'put', 'delete', 'patch', 'head'];

function resolve(doc, o) {
  if (!o || typeof o !== 'object' || !o.$ref) return o;
  let n = doc;
  for (const k of o.$ref.replace(/^#\//, '').split('/')) n = n && n[k];
  return n || { name: o.$ref, description: 'unresolved reference' };
}

function schemaText(s) {
  if (!s) return '';
  const parts = [s.type || (s.$ref ? s.$ref.split('/').pop() : '')];
  if (s.enum) parts.push('one of ' + s.enum.join(', '));
  if (s.default !== undefined) parts.push('default ' + s.default);
  if (s.minimum !== undefined) parts.push('≥ ' + s.minimum);
  if (s.maximum !== undefined) parts.push('≤ ' + s.maximum);
  return parts.filter(Boolean).join('; ');
}

function operation(doc, path, method, op, shared) {
  const params = [...(shared || []), ...(op.parameters || [])].map((p) => resolve(doc, p));
  const id = `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, '-');
  const responses = Object.entries(op.responses || {}).map(([code, r]) => {
    const rr = resolve(doc, r);
    return el('li', {}, el('code', {}, code), ' ', (rr && rr.description) || '');
  });
  return el('section', { class: 'card api-op', id, 'data-method': method.toUpperCase(), 'data-path': path },
    el('h3', {}, el('span', { class: `method method-${method}` }, method.toUpperCase()), ' ', el('code', {}, path)),
    el('p', { class: 'api-summary' }, op.summary || ''),
    op.description ? el('p', { class: 'api-description' }, op.description) : null,
    params.length ? el('table', { class: 'data api-params' },
      el('thead', {}, el('tr', {}, ['parameter', 'in', 'schema', 'description'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', {}, params.map((p) => el('tr', { 'data-param': p.name },
        el('td', {}, el('code', {}, p.name), p.required ? ' (required)' : ''), el('td', {}, p.in || ''),
        el('td', {}, schemaText(p.schema)), el('td', {}, p.description || ''))))) : null,
    responses.length ? el('ul', { class: 'api-responses' }, responses) : null);
}

async function main() {
  const status = document.getElementById('api-status');
  const box = document.getElementById('api-doc');
  let doc;
  try {
    const t = getToken();
    const resp = await fetch('/api/v1/openapi.yaml', { headers: t ? { Authorization: 'Bearer ' + t } : {} });
    if (!resp.ok) throw new Error(`GET /api/v1/openapi.yaml: HTTP ${resp.status}`);
    doc = parseYAML(await resp.text());
  } catch (e) {
    status.replaceWith(message(e.message));
    return;
  }
  const ops = [];
  const toc = [];
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const m of METHODS) {
      if (!item[m]) continue;
      const sec = operation(doc, path, m, item[m], item.parameters);
      ops.push(sec);
      toc.push(el('li', {}, el('a', { href: '#' + sec.id }, `${m.toUpperCase()} ${path}`), ' ', el('span', { class: 'muted' }, item[m].summary || '')));
    }
  }
  const info = doc.info || {};
  status.textContent = `${info.title || 'API'} ${info.version || ''}: ${ops.length} operations.`;
  box.append(info.description ? el('p', { class: 'api-description' }, info.description) : '',
    el('nav', { class: 'card', 'aria-label': 'operations' }, el('h2', {}, 'Operations'), el('ul', { id: 'api-toc' }, toc)),
    ...ops);
}

main();
