// app.js: the viewer's entry point. Two pages, chosen by the URL's hash:
//   #/            the dashboard (traces, binaries, jobs, the upload form)
//   #/jobs/<id>   one job: flame graph, top functions, exports
//   #/jobs/<id>/timeline   what ran when, per hart and Go P/M/goroutine
//   #/compare?base=&other=  two jobs compared: a differential flame graph
// Each page's render function fills <main> and returns a cleanup function
// (timers, listeners) called when the page is left.
import { getJSON, getToken, setToken } from './api.js';
import { renderDashboard } from './dashboard.js';
import { renderCompare } from './diff.js';
import { renderJob } from './job.js';
import { renderTimeline } from './timeline.js';

let leave = null;

function route() {
  if (leave) leave();
  leave = null;
  const main = document.getElementById('main');
  main.replaceChildren();
  const m = location.hash.match(/^#\/jobs\/(\d+)(\/timeline)?/);
  if (/^#\/compare(\?|$)/.test(location.hash)) leave = renderCompare(main);
  else if (m && m[2]) leave = renderTimeline(main, Number(m[1]));
  else leave = m ? renderJob(main, Number(m[1])) : renderDashboard(main);
}

async function showHealth() {
  const h = document.getElementById('health');
  try {
    const j = await getJSON('/api/v1/health');
    h.textContent = `oobprofd ${j.version}: ${j.running} running, ${j.queue} queued`;
  } catch (e) {
    h.textContent = 'server unreachable: ' + e.message;
  }
}

function setupToken() {
  const input = document.getElementById('token');
  input.value = getToken();
  input.addEventListener('change', () => {
    setToken(input.value.trim());
    route();
  });
}

setupToken();
window.addEventListener('hashchange', route);
route();
showHealth();
