// The console: a key typed once, then the pages by the URL's hash.
import { api, key, setKey, ApiError } from './api.js';
import { playground } from './playground.js';
import { runs } from './runs.js';
import { sessions } from './sessions.js';
import { terminal } from './terminal.js';
import { fleet } from './fleet.js';

const pages = { playground, runs, sessions, terminal, fleet };
let leave = null; // the open page's clean-up (streams, timers)

function $(id) { return document.getElementById(id); }

async function showServer() {
  try {
    const h = await (await fetch('/v1/health')).json();
    $('server').textContent = `serve ${h.version} · tier ${h.tier}`;
  } catch (_) { /* shown when it answers */ }
}

async function route() {
  if (leave) { leave(); leave = null; }
  const page = $('page');
  if (!key()) {
    $('login').hidden = false;
    page.hidden = true;
    $('nav').hidden = true;
    $('logout').hidden = true;
    $('key').focus();
    return;
  }
  $('login').hidden = true;
  $('nav').hidden = false;
  $('logout').hidden = false;
  page.hidden = false;
  const [name, ...rest] = (location.hash.slice(1) || 'playground').split('/');
  for (const a of document.querySelectorAll('nav a')) {
    if (a.getAttribute('href') === `#${name}`) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  page.replaceChildren();
  const show = pages[name] || playground;
  leave = (await show(page, rest.map(decodeURIComponent))) || null;
}

async function login(ev) {
  ev.preventDefault();
  const typed = $('key').value.trim();
  $('login-error').textContent = '';
  setKey(typed);
  try {
    await api('GET', '/v1/runs?limit=1');
  } catch (e) {
    setKey(null);
    $('login-error').textContent = e instanceof ApiError && e.status === 401
      ? 'That key was refused: serve does not know it.'
      : `Cannot log in: ${e.message}`;
    return;
  }
  $('key').value = '';
  route();
}

$('login').addEventListener('submit', login);
$('logout').addEventListener('click', () => { setKey(null); location.hash = ''; route(); });
window.addEventListener('hashchange', route);
showServer();
// The page is usable from here: the bench reads this mark.
route().then(() => performance.mark('agentjail-ready'));
