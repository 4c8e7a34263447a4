// api.js: the few calls the viewer makes to oobprofd's JSON API
// (api/openapi.yaml). Every function returns a promise; failures reject with
// an ApiError carrying the HTTP status and the server's message.

const TOKEN_KEY = 'oobprof-token';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function getToken() {
  return localStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(t) {
  if (t) localStorage.setItem(TOKEN_KEY, t);
  else localStorage.removeItem(TOKEN_KEY);
}

function authHeaders() {
  const t = getToken();
  return t ? { Authorization: 'Bearer ' + t } : {};
}

async function errorOf(resp) {
  let msg = resp.statusText;
  try {
    const body = await resp.json();
    if (body && body.error) msg = body.error.message;
  } catch (_) { /* not JSON */ }
  return new ApiError(resp.status, msg || ('HTTP ' + resp.status));
}

export async function getJSON(path) {
  const resp = await fetch(path, { headers: authHeaders() });
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

// Something the server may build for seconds (timeline, windows, off-CPU,
// critical path, exports): asked with "Prefer: respond-async", so a long
// build is answered 202 with its progress ({done, total, unit, elapsed}),
// handed to onProgress, and asked again after Retry-After until the answer
// comes. Resolves to that answer's Response (ok or not).
export async function fetchBuilt(path, onProgress = () => {}) {
  for (;;) {
    const resp = await fetch(path, { headers: { ...authHeaders(), Prefer: 'respond-async, wait=1' } });
    if (resp.status !== 202) return resp;
    onProgress(await resp.json());
    const after = Number(resp.headers.get('Retry-After')) || 1;
    await new Promise((resolve) => setTimeout(resolve, Math.min(after, 10) * 1000));
  }
}

// A JSON view asked as fetchBuilt does.
export async function getView(path, onProgress = () => {}) {
  const resp = await fetchBuilt(path, onProgress);
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

export async function postJSON(path, body) {
  const resp = await fetch(path, {
    method: 'POST',
    headers: { ...authHeaders(), 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

export async function remove(path) {
  const resp = await fetch(path, { method: 'DELETE', headers: authHeaders() });
  if (!resp.ok) throw await errorOf(resp);
  return resp.json();
}

// Uploads a File as the raw body (what the upload routes take). XHR rather
// than fetch: it reports upload progress. onProgress(fraction) is optional.
export function upload(path, file, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', path);
    const t = getToken();
    if (t) xhr.setRequestHeader('Authorization', 'Bearer ' + t);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => {
      if (onProgress && e.lengthComputable) onProgress(e.loaded / e.total);
    };
    xhr.onload = () => {
      const body = xhr.response;
      if (xhr.status >= 200 && xhr.status < 300) resolve(body);
      else reject(new ApiError(xhr.status, body && body.error ? body.error.message : xhr.statusText));
    };
    xhr.onerror = () => reject(new ApiError(0, 'network error while uploading ' + file.name));
    xhr.send(file);
  });
}

// Names the server accepts (api_name_check): letters, digits, spaces and
// . _ - + @ , : =, not starting with a dot or a space, at most 127 bytes.
export function safeName(name) {
  let s = name.replace(/[^A-Za-z0-9 ._+@,:=-]/g, '_').replace(/^[. ]+/, '');
  return (s || 'upload').slice(0, 120);
}

export function exportURL(jobId, format, params = {}) {
  const q = new URLSearchParams(params).toString();
  return `/api/v1/jobs/${jobId}/export/${format}` + (q ? '?' + q : '');
}

// The bundled speedscope (static/speedscope/, from the npm package) opening
// our export from the same origin: no network needed.
export function speedscopeURL(jobId, title, params = {}) {
  const abs = new URL(exportURL(jobId, 'speedscope', params), location.href).href;
  return '/speedscope/index.html#profileURL=' + encodeURIComponent(abs) +
    (title ? '&title=' + encodeURIComponent(title) : '');
}
