// Slipway's dashboard: one page, no framework, no build. It talks to the
// control API with the token kept in this tab's sessionStorage, sent as a
// bearer header (never in a URL). The site view loads every node once and
// then follows the event stream (read with fetch, which can send the
// header; EventSource can't): each event marks its node, and the marked
// nodes are read again together, at most once a second. A node's tile is
// coloured by its lifecycle state and marked by its last task's outcome.
'use strict';

const S = {
  token: sessionStorage.getItem('slipway.token') || '',
  me: null,
  nodes: new Map(), // name -> node summary
  tiles: new Map(), // name -> tile element
  dirty: new Set(),
  stream: null, // the running stream's AbortController
  lastSeq: 0,
  repaint: new Set(), // tiles to draw again (paint)
  painting: 0,
  routeGen: 0, // route()'s calls so far: a render a later call overtook leaves the view alone
};
window.slipway = S; // for the browser test

const $ = (sel, el = document) => el.querySelector(sel);
const roles = { viewer: 1, operator: 2, admin: 3 };
const can = (role) => S.me && roles[S.me.role] >= roles[role];

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') e.textContent = v;
    else if (k === 'style') e.style.cssText = v; // through the CSSOM: the CSP refuses style attributes
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const k of kids.flat()) if (k !== null && k !== undefined) e.append(k);
  return e;
}

// Overtaken stops a view's render that a later route() overtook: an
// action's re-render that ends after the operator moved to another view
// must not replace that view (nor start its stream).
class Overtaken extends Error {}

// put makes kids (nulls left out) the children of view: an element, or
// the slot route() hands a view's render ({ el, gen }).
function put(view, ...kids) {
  if (view.gen !== undefined && view.gen !== S.routeGen) throw new Overtaken();
  (view.el || view).replaceChildren(...kids.filter((k) => k !== null && k !== undefined));
}

// --- the API -------------------------------------------------------------

class Problem extends Error {
  constructor(status, p) {
    super(p.detail || p.title || ('HTTP ' + status));
    this.status = status; this.title = p.title || ('HTTP ' + status); this.detail = p.detail || ''; this.requestId = p.request_id || '';
  }
}

async function api(method, path, body) {
  const headers = { Authorization: 'Bearer ' + S.token };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  if (!r.ok) {
    let p = {};
    try { p = await r.json(); } catch (_) { /* not a problem document */ }
    if (!p.request_id) p.request_id = r.headers.get('X-Request-Id') || '';
    throw new Problem(r.status, p);
  }
  if (r.status === 204) return null;
  return (r.headers.get('Content-Type') || '').includes('json') ? r.json() : r.text();
}

function showError(e) {
  const box = $('#error');
  box.replaceChildren();
  if (e instanceof Problem) {
    box.append(el('strong', { text: e.title + ' (' + e.status + ')' }), ': ' + e.detail);
    if (e.requestId) box.append(' — request ', el('span', { class: 'rid', text: e.requestId }));
  } else {
    box.append(el('strong', { text: 'Error' }), ': ' + (e && e.message ? e.message : String(e)));
  }
  box.hidden = false;
}
function clearError() { $('#error').hidden = true; }

function confirmDialog(text) {
  const d = $('#confirm');
  $('#confirm-text').textContent = text;
  return new Promise((resolve) => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.showModal();
    $('#confirm-ok').focus();
  });
}

// --- signing in and routing -----------------------------------------------

async function signIn(token) {
  S.token = token;
  try {
    S.me = await api('GET', '/api/v1/whoami');
  } catch (e) {
    S.token = ''; S.me = null;
    sessionStorage.removeItem('slipway.token');
    throw e;
  }
  sessionStorage.setItem('slipway.token', token);
}

function signOut() {
  stopStream();
  S.token = ''; S.me = null; S.nodes.clear(); S.tiles.clear();
  sessionStorage.removeItem('slipway.token');
  location.hash = '#/site';
  route();
}

function chrome() {
  const signedIn = !!S.me;
  $('#nav').hidden = !signedIn;
  $('#signout').hidden = !signedIn;
  $('#signin').hidden = signedIn;
  $('#who').textContent = signedIn ? (S.me.name || S.me.id) + ' · ' + S.me.role : '';
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.role) a.hidden = !can(a.dataset.role);
    a.toggleAttribute('aria-current', a.getAttribute('href') === '#/' + currentView()[0]);
    if (a.hasAttribute('aria-current')) a.setAttribute('aria-current', 'page');
  }
}

function currentView() {
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  return parts[0] ? parts : ['site'];
}

async function route() {
  const gen = ++S.routeGen;
  clearError();
  chrome();
  const view = $('#view');
  if (!S.me) { put(view); stopStream(); $('#token').focus(); return; }
  const [name, arg] = currentView();
  if (name !== 'site' && name !== 'images' && !(name === 'tasks' && arg)) stopStream();
  clearTimeout(S.imagesTimer);
  clearTimeout(S.timelineTimer);
  try {
    const render = { site: siteView, node: nodeView, tasks: tasksView, designs: designsView, drift: driftView, images: imagesView, audit: auditView }[name] || siteView;
    await render({ el: view, gen }, arg);
  } catch (e) { if (gen === S.routeGen && !(e instanceof Overtaken)) showError(e); }
}

// --- site view -------------------------------------------------------------

async function loadNodes() {
  const last = await api('GET', '/api/v1/events/last'); // before the nodes: no event is missed after
  const all = [];
  for (let offset = 0; ; offset += 10000) {
    const page = await api('GET', '/api/v1/nodes?limit=10000&offset=' + offset);
    all.push(...page.items);
    if (offset + page.items.length >= page.total || page.items.length === 0) break;
  }
  S.nodes = new Map(all.map((n) => [n.name, n]));
  S.lastSeq = last.seq;
}

// A tile's colour is the node's lifecycle state (where its machine is in
// its life, which only the workflows that own the machine change); its
// mark is the outcome of the last task that drove the node, whatever that
// task was (a verify or power cycle leaves a deployed node deployed).
const lifecycles = ['new', 'preparing', 'ready', 'deploying', 'deployed', 'releasing', 'released', 'failed', 'cancelled', 'deleted'];
const marks = [['running', 'last task running'], ['failed', 'last task failed'], ['cancelled', 'last task cancelled'],
  ['manual-intervention', 'last task needs an operator']];

function markClass(outcome) {
  if (!outcome || outcome === 'succeeded') return '';
  return ' lt-' + (outcome === 'queued' ? 'running' : outcome);
}
function tileClass(n) { return 'tile lc-' + (n.lifecycle || 'unknown') + markClass(n.outcome); }
function lastTask(n) {
  return n.action ? 'last task ' + n.action + ' ' + (n.outcome || 'pending') + ' at stage ' + (n.stage || 'pending') : 'no task yet';
}
function tileLabel(n) {
  return n.name + ': ' + (n.lifecycle || 'unknown') + '; ' + lastTask(n) + (n.reason ? ' — ' + n.reason : '');
}

// legend names each lifecycle colour and each last-task mark in words.
function legend() {
  const item = (attr, v, cls, text) => el('li', { [attr]: v }, el('span', { class: 'swatch ' + cls }), text);
  return el('div', { class: 'legend' },
    el('ul', { 'aria-label': 'Tile colour: lifecycle state' }, ...lifecycles.map((l) => item('data-lifecycle', l, 'lc-' + l, l)),
      item('data-lifecycle', 'unknown', 'lc-unknown', 'unknown')),
    el('ul', { 'aria-label': 'Tile mark: last task' }, ...marks.map(([m, text]) => item('data-mark', m, 'lc-deployed lt-' + m, text))));
}

async function siteView(view) {
  await loadNodes();
  const filter = el('input', { id: 'filter', type: 'search', placeholder: 'name, rack:r01, lifecycle:deployed, stage:deploy, outcome:failed, tag:gpu, label:k=v, site:s',
    oninput: () => applyFilter(filter.value) });
  const counts = el('ul', { class: 'counts', id: 'counts', 'aria-label': 'Nodes per lifecycle state' });
  const grid = el('div', { id: 'sites', role: 'region', 'aria-label': 'Nodes by site and rack (arrow keys move between nodes)', onkeydown: tileKeys, onclick: tileClick,
    onmouseover: (ev) => { const t = ev.target.closest('.tile'); if (t) t.title = t.getAttribute('aria-label'); } });
  let none = null;
  if (S.nodes.size === 0 && (await api('GET', '/api/v1/designs')).length === 0) none = el('p', { id: 'no-design', class: 'panel', text: noDesignText });
  put(view, el('h1', { text: 'Site' }), none, el('label', { for: 'filter', text: 'Filter nodes' }), filter, counts, legend(), grid);
  renderTiles(grid);
  renderCounts();
  startStream();
}

function renderTiles(grid) {
  S.tiles.clear();
  const bySite = new Map();
  for (const n of S.nodes.values()) {
    const site = n.site || '(no site)'; const rack = n.rack || '(no rack)';
    if (!bySite.has(site)) bySite.set(site, new Map());
    const racks = bySite.get(site);
    if (!racks.has(rack)) racks.set(rack, []);
    racks.get(rack).push(n);
  }
  const frag = document.createDocumentFragment();
  let first = true;
  for (const site of [...bySite.keys()].sort()) {
    const sec = el('section', { class: 'site', 'aria-label': 'Site ' + site }, el('h2', { text: site }));
    const racks = bySite.get(site);
    for (const rack of [...racks.keys()].sort()) {
      const tiles = el('div', { class: 'tiles', role: 'group', 'aria-label': 'Rack ' + rack });
      for (const n of racks.get(rack).sort((a, b) => a.name.localeCompare(b.name))) {
        const t = el('button', { type: 'button', class: tileClass(n), 'data-n': n.name, 'aria-label': tileLabel(n), tabindex: first ? '0' : '-1' });
        first = false;
        S.tiles.set(n.name, t);
        tiles.append(t);
      }
      sec.append(el('div', { class: 'rack' }, el('h3', { text: rack }), tiles));
    }
    frag.append(sec);
  }
  grid.replaceChildren(frag);
  if (S.nodes.size === 0) grid.append(el('p', { text: 'No nodes yet: apply a design and start a task.' }));
}

function renderCounts() {
  const c = new Map();
  for (const n of S.nodes.values()) {
    const k = n.lifecycle || 'unknown';
    c.set(k, (c.get(k) || 0) + 1);
  }
  const rank = (k) => (lifecycles.includes(k) ? lifecycles.indexOf(k) : lifecycles.length);
  const keys = [...c.keys()].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  const ul = $('#counts');
  if (ul) ul.replaceChildren(el('li', { text: 'all ' + S.nodes.size }), ...keys.map((k) => el('li', { text: k + ' ' + c.get(k), 'data-lifecycle': k })));
}

function matches(n, terms) {
  for (const t of terms) {
    const [k, v] = t.includes(':') ? [t.slice(0, t.indexOf(':')), t.slice(t.indexOf(':') + 1)] : ['', t];
    const ok = {
      '': () => n.name.includes(v),
      rack: () => (n.rack || '') === v, site: () => (n.site || '') === v, stage: () => (n.stage || 'pending') === v,
      lifecycle: () => (n.lifecycle || 'unknown') === v,
      outcome: () => (n.outcome || '') === v, tag: () => (n.tags || []).includes(v),
      label: () => { const [lk, lv] = v.split('='); return n.labels && n.labels[lk] !== undefined && (lv === undefined || n.labels[lk] === lv); },
    }[k];
    if (!ok || !ok()) return false;
  }
  return true;
}

function applyFilter(text) {
  const terms = text.trim().split(/\s+/).filter(Boolean);
  for (const [name, t] of S.tiles) t.hidden = terms.length > 0 && !matches(S.nodes.get(name), terms);
}

function tileClick(ev) {
  const t = ev.target.closest('.tile');
  if (t) location.hash = '#/node/' + encodeURIComponent(t.dataset.n);
}

// tileKeys moves the focus between tiles with the arrow keys (one tile is
// in the tab order: the grid is one stop, not 10,000).
function tileKeys(ev) {
  const t = ev.target.closest('.tile');
  if (!t) return;
  const visible = [...S.tiles.values()].filter((x) => !x.hidden);
  const i = visible.indexOf(t);
  const step = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: 10, ArrowUp: -10, Home: -i, End: visible.length - 1 - i }[ev.key];
  if (step === undefined) return;
  ev.preventDefault();
  const next = visible[Math.max(0, Math.min(visible.length - 1, i + step))];
  t.tabIndex = -1; next.tabIndex = 0; next.focus();
}

// --- the event stream --------------------------------------------------------

function stopStream() {
  if (S.stream) S.stream.abort();
  S.stream = null;
}

async function startStream() {
  stopStream();
  const ctl = new AbortController();
  S.stream = ctl;
  while (!ctl.signal.aborted) {
    try {
      const r = await fetch('/api/v1/events/stream?since=' + S.lastSeq, { headers: { Authorization: 'Bearer ' + S.token }, signal: ctl.signal, cache: 'no-store' });
      if (!r.ok) throw new Problem(r.status, await r.json().catch(() => ({})));
      await readEvents(r.body.getReader(), ctl.signal);
    } catch (e) {
      if (ctl.signal.aborted) return;
      if (e instanceof Problem && (e.status === 401 || e.status === 403)) { showError(e); return; }
    }
    await new Promise((ok) => setTimeout(ok, 1000)); // the server ended the stream (its lifetime): go on from the last event
  }
}

async function readEvents(reader, signal) {
  const dec = new TextDecoder();
  let buf = '';
  while (!signal.aborted) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i); buf = buf.slice(i + 2);
      let id = '', data = '';
      for (const line of block.split('\n')) {
        if (line.startsWith('id:')) id = line.slice(3).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
      if (id) S.lastSeq = Number(id);
      if (data) onEvent(JSON.parse(data));
    }
  }
}

// onEvent marks the event's node to be read again: its summary has the
// lifecycle, last task and outcome together (an event's stage alone would
// name a new task's stage beside the last one's outcome).
function onEvent(ev) {
  if (currentView()[0] === 'images') { if (ev.type === 'image.sync') imagesSoon(); return; }
  if (currentView()[0] === 'tasks') { if (ev.task && ev.task === currentView()[1]) timelineSoon(1000); return; }
  if (!ev.node) return;
  S.dirty.add(ev.node);
  if (!S.flushing) S.flushing = setTimeout(flushDirty, 1000);
}

async function flushDirty() {
  const names = [...S.dirty];
  S.dirty.clear();
  try {
    for (let i = 0; i < names.length; i += 200) {
      const q = names.slice(i, i + 200).map((n) => 'name=' + encodeURIComponent(n)).join('&');
      const page = await api('GET', '/api/v1/nodes?limit=10000&' + q);
      for (const n of page.items) { S.nodes.set(n.name, n); paint(n.name); }
    }
    renderCounts();
  } catch (e) { showError(e); }
  S.flushing = S.dirty.size ? setTimeout(flushDirty, 1000) : null;
}

// paint queues a tile to be drawn again; the queue is drawn in animation
// frames, a few milliseconds of it each, so that a burst of thousands of
// events never holds a frame.
function paint(name) {
  S.repaint.add(name);
  if (!S.painting) S.painting = requestAnimationFrame(paintSome);
}

function paintSome(start) {
  for (const name of S.repaint) {
    S.repaint.delete(name);
    const t = S.tiles.get(name); const n = S.nodes.get(name);
    if (!t || !n) continue;
    const c = tileClass(n); const l = tileLabel(n);
    if (t.className !== c) t.className = c;
    if (t.getAttribute('aria-label') !== l) t.setAttribute('aria-label', l);
    if (performance.now() - start > 6) break;
  }
  S.painting = S.repaint.size ? requestAnimationFrame(paintSome) : 0;
}

// --- node view ----------------------------------------------------------------

const taskVerbs = ['retry', 'resume', 'rerun', 'restart-clean', 'cancel'];

async function nodeView(view, name) {
  const d = await api('GET', '/api/v1/nodes/' + encodeURIComponent(name));
  const w = d.workflow || {};
  const inv = await api('GET', '/api/v1/nodes/' + encodeURIComponent(name) + '/inventory').catch(() => null);
  const fabric = await api('GET', '/api/v1/fabric?node=' + encodeURIComponent(name)).catch(() => null);
  const images = await api('GET', '/api/v1/images').catch(() => null);
  const kv = (pairs) => el('dl', { class: 'kv' }, ...pairs.filter(([, v]) => v !== undefined && v !== '').flatMap(([k, v]) => [el('dt', { text: k }), el('dd', { text: String(v) })]));
  const lc = w.lifecycle || 'new';
  const last = w.action ? (w.last_task || '') + ' (' + w.action + ') ' + (w.outcome || 'pending') + ' at stage ' + (w.stage || 'pending') : '';
  put(view,
    el('h1', { text: 'Node ' + name }),
    el('p', { id: 'node-state', class: 'state' }, el('span', { class: 'swatch lc-' + lc + markClass(w.outcome) }), lc + ' · ' + (last ? 'last task ' + last : 'no task yet')),
    el('div', { class: 'panel' }, el('h2', { text: 'Workflow and machine' }), kv([
      ['lifecycle', lc], ['last task', last], ['running task', w.task], ['machine (system id)', w.machine_id],
      ['MAAS state', w.observed], ['power (as MAAS last reported it)', w.observed_power], ['reason', w.reason], ['frozen', w.frozen ? (w.frozen_reason || 'yes') : ''], ['design revision', d.design_revision]])),
    verbsPanel(name, w),
    el('div', { class: 'panel' }, el('h2', { text: 'Events' }), eventsTable(d.events || [])),
    imagePanel(name, d.design, images),
    portsPanel(fabric, name),
    el('div', { class: 'panel' }, el('h2', { text: 'Hardware inventory' }), inv ? el('pre', { tabindex: '0', 'aria-label': 'Inventory', text: JSON.stringify(inv.inventory, null, 2) }) : el('p', { class: 'muted', text: 'Not commissioned yet.' })),
    el('div', { class: 'panel' }, el('h2', { text: 'Design (resolved)' }), el('pre', { tabindex: '0', 'aria-label': 'Resolved design', text: JSON.stringify(d.design || {}, null, 2) })),
    can('admin') ? bootdataPanel(name) : null,
  );
}

// portsPanel: the switch ports the design cables to the node, what its
// phase wants of each and what the switch reports (GET /fabric?node=).
function portsPanel(fabric, name) {
  const panel = (...kids) => el('div', { class: 'panel', id: 'ports' }, el('h2', { text: 'Switch ports' }), ...kids);
  if (!fabric) return panel(el('p', { class: 'muted', text: 'The fabric could not be read.' }));
  const unplanned = (fabric.unplanned || []).find((n) => n.node === name);
  if (unplanned) return panel(el('p', { text: unplanned.error }));
  const ports = (fabric.ports || []).filter((p) => p.node === name);
  if (!ports.length) return panel(el('p', { class: 'muted', text: 'The design cables no switch port to this node.' }));
  const node = { phase: ports[0].phase, ports };
  const vlans = (c) => c.mode === 'trunk' ? 'native ' + (c.vlan || '-') + ', tagged ' + ((c.trunk || []).join(',') || '-') : String(c.vlan);
  const state = (p) => p.state === 'differs' ? 'differs: ' + (p.diff || []).join(', ') : p.state;
  return panel(
    el('p', { text: 'Phase ' + node.phase + (fabric.read ? '' : ' · ' + (fabric.read_note || 'not read from the switches')) }),
    el('table', {}, el('thead', {}, el('tr', {}, ...['switch', 'port', 'NIC', 'mode', 'VLANs', 'LAG', 'state', 'LLDP'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...node.ports.map((p) => el('tr', { 'data-port': p.switch + ':' + p.port }, el('td', { text: p.switch }), el('td', { text: p.port }),
        el('td', { text: p.alias }), el('td', { text: p.desired.mode }), el('td', { text: vlans(p.desired) }), el('td', { text: p.desired.lag || '-' }),
        el('td', { text: state(p) }), el('td', { text: p.lldp || '' }))))));
}

function verbsPanel(name, w) {
  if (!can('operator')) return null;
  const task = w.task || w.last_task;
  const call = (label, method, path, body, danger) => el('button', { type: 'button', class: danger ? 'danger' : null, text: label, onclick: async () => {
    if (!(await confirmDialog(label + ' — node ' + name + (path.includes('/tasks/') ? ' (task ' + task + ')' : '') + '?'))) return;
    try { clearError(); await api(method, path, body); await route(); } catch (e) { showError(e); }
  } });
  const n = '/api/v1/nodes/' + encodeURIComponent(name);
  const buttons = [];
  if (task) for (const v of taskVerbs) buttons.push(call(v, 'POST', '/api/v1/tasks/' + encodeURIComponent(task) + '/' + v, undefined, v === 'cancel' || v === 'restart-clean'));
  buttons.push(call('adopt', 'POST', n + '/adopt', {}), call('mark manual intervention', 'POST', n + '/mark-manual-intervention', { reason: 'marked from the dashboard' }),
    call('release manual intervention', 'POST', n + '/release-manual', {}));
  if (can('admin')) buttons.push(call('rebootstrap', 'POST', n + '/rebootstrap', undefined, true));
  return el('div', { class: 'panel' }, el('h2', { text: 'Actions' }), el('div', { class: 'verbs' }, buttons));
}

function bootdataPanel(name) {
  const out = el('pre', { hidden: true, tabindex: '0' });
  const show = (part) => el('button', { type: 'button', text: part, onclick: async () => {
    try { out.textContent = await api('GET', '/api/v1/nodes/' + encodeURIComponent(name) + '/bootdata/' + part); out.hidden = false; } catch (e) { showError(e); }
  } });
  return el('div', { class: 'panel' }, el('h2', { text: 'What the node is served (token redacted)' }),
    el('div', { class: 'verbs' }, show('user-data'), show('meta-data'), show('network-config'), show('self')), out);
}

function eventsTable(evs) {
  if (!evs.length) return el('p', { class: 'muted', text: 'No events.' });
  return el('table', {}, el('thead', {}, el('tr', {}, ...['time', 'stage', 'level', 'kind', 'message'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...evs.slice(-300).reverse().map((e) => el('tr', {}, el('td', { text: new Date(e.time).toLocaleString() }), el('td', { text: e.stage || '' }),
      el('td', { text: e.level }), el('td', { text: e.kind }), el('td', { text: e.message })))));
}

// --- tasks view -----------------------------------------------------------------

const taskActions = ['deploy_nodes', 'redeploy_nodes', 'destroy_nodes', 'prepare_site', 'prepare_nodes', 'verify_nodes'];

async function tasksView(view, id) {
  if (id) { await taskView(view, id); return; }
  const table = el('div', { id: 'tasks' });
  put(view, el('h1', { text: 'Tasks' }), can('operator') ? newTaskForm() : null, table);
  await refreshTasks(table);
}

// refreshTasks draws the recent tasks, and again every 3 s while one runs
// and the tasks view is shown (the form above keeps what is typed).
async function refreshTasks(table) {
  clearTimeout(S.tasksTimer);
  const page = await api('GET', '/api/v1/tasks?limit=20');
  const rows = [];
  for (const t of page.items) rows.push(await taskRow(t));
  table.replaceChildren(el('table', {}, el('thead', {}, el('tr', {}, ...['task', 'action', 'status', 'nodes', 'progress by stage', 'requested by', ''].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, rows)));
  if (page.items.some((t) => t.status === 'running' || t.status === 'queued')) {
    S.tasksTimer = setTimeout(() => { if (currentView()[0] === 'tasks' && table.isConnected) refreshTasks(table).catch(showError); }, 3000);
  }
}

async function taskRow(t) {
  let bar = el('span', { class: 'muted', text: '—' });
  if (t.status === 'running' || t.status === 'queued') {
    const d = await api('GET', '/api/v1/tasks/' + encodeURIComponent(t.id));
    bar = stageBar(d.results || []);
  }
  const verbs = can('operator') ? el('div', { class: 'verbs' }, ...taskVerbs.map((v) => el('button', { type: 'button', text: v, onclick: async () => {
    if (!(await confirmDialog(v + ' task ' + t.id + '?'))) return;
    try { clearError(); await api('POST', '/api/v1/tasks/' + encodeURIComponent(t.id) + '/' + v); await route(); } catch (e) { showError(e); }
  } }))) : null;
  return el('tr', {}, el('td', {}, el('a', { href: '#/tasks/' + encodeURIComponent(t.id), text: t.id, 'aria-label': 'Task ' + t.id + ': where its time goes' })), el('td', { text: t.action }), el('td', { text: t.status }), el('td', { text: String((t.nodes || []).length) }),
    el('td', {}, bar), el('td', { text: t.requester || '' }), el('td', {}, verbs));
}

function stageBar(results) {
  const c = new Map();
  for (const r of results) { const k = r.outcome === 'failed' ? 'failed' : r.stage; c.set(k, (c.get(k) || 0) + 1); }
  const total = results.length || 1;
  const colors = { deployed: '--s-done', failed: '--s-failed', bootstrap: '--s-bootstrap', deploy: '--s-deploy', configure: '--s-config', commission: '--s-commission' };
  const parts = [...c.entries()].map(([k, v]) => el('span', { title: k + ' ' + v, style: 'width:' + (100 * v / total) + '%;background:var(' + (colors[k] || '--s-early') + ')' }));
  return el('div', { class: 'bar', role: 'img', 'aria-label': [...c.entries()].map(([k, v]) => k + ' ' + v).join(', ') }, parts);
}


// --- task view: where a rollout's time goes --------------------------------------

// The task view plots the task's nodes per stage over time and each
// stage's p50/p95 duration, split into the wait on the provisioner or
// hardware and Slipway's own time (GET /tasks/{id}/timeline, computed
// from the engine's events). It is drawn again within a second of each
// event of the task on the stream, and every 5 s while the task runs (at
// most timelineMaxPolls times in a row: an hour).
const timelineMaxPolls = 720;

async function taskView(view, id) {
  const d = await api('GET', '/api/v1/tasks/' + encodeURIComponent(id));
  const box = el('div', { id: 'timeline' });
  put(view, el('h1', { text: 'Task ' + id }),
    el('p', { id: 'task-summary', text: d.action + ' · ' + d.status + ' · ' + (d.nodes || []).length + ' nodes' + (d.requester ? ' · requested by ' + d.requester : '') }),
    el('p', {}, el('a', { href: '#/tasks', text: 'All tasks' })), box);
  S.timelinePolls = 0;
  const last = await api('GET', '/api/v1/events/last'); // before the timeline: no event is missed after
  await refreshTimeline(box, id);
  S.lastSeq = last.seq;
  startStream();
}

// timelineSoon draws the timeline again within ms (events come in bursts).
function timelineSoon(ms) {
  if (S.timelineSoon) return;
  S.timelineSoon = setTimeout(async () => {
    S.timelineSoon = null;
    const [name, id] = currentView();
    const box = $('#timeline');
    if (box && name === 'tasks' && id) await refreshTimeline(box, id).catch(showError);
  }, ms);
}

async function refreshTimeline(box, id) {
  clearTimeout(S.timelineTimer);
  const tl = await api('GET', '/api/v1/tasks/' + encodeURIComponent(id) + '/timeline');
  S.timeline = tl;
  const sum = $('#task-summary');
  if (sum) sum.textContent = sum.textContent.replace(/ · [a-z_]+ · /, ' · ' + tl.status + ' · ');
  box.replaceChildren(timelinePanel(tl), stageTimesPanel(tl));
  if (!tl.complete) { timelineSoon(200); return; } // the server stopped at its bound: the rest follows
  if (tl.status !== 'running' && tl.status !== 'queued') return;
  if (++S.timelinePolls > timelineMaxPolls) {
    box.append(el('p', { class: 'muted', text: 'Still running: reload the page to follow it (the view stops asking after an hour).' }));
    return;
  }
  S.timelineTimer = setTimeout(() => { if (box.isConnected) refreshTimeline(box, id).catch(showError); }, 5000);
}

// Series colours: the stages in order, then the outcomes short of the goal.
const outcomeColors = { queued: '#8a939e', failed: '#c62828', cancelled: '#c25e00', 'manual-intervention': '#7a5200' };
// No green but the goal's; neighbours differ in hue.
const stageColors = ['#5b8fd1', '#0f8a8a', '#5a4fcf', '#b0409a', '#2e5f8a', '#9c4f2e', '#8a3fc7', '#6b5e00', '#c2185b', '#59636e', '#2f6fd6'];
function seriesColor(tl, i) {
  const name = tl.series[i];
  if (outcomeColors[name]) return outcomeColors[name];
  const goal = ['deployed', 'ready', 'verified', 'released', 'powered', 'baselined', 'deleted', 'tested'];
  if (goal.includes(name)) return '#145a22';
  return stageColors[(i - 1 + stageColors.length) % stageColors.length];
}

const svgNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs = {}, ...kids) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
  }
  for (const k of kids.flat()) if (k) e.append(k);
  return e;
}

const secs = (s) => (s >= 120 ? (s / 60).toFixed(1) + ' min' : s >= 10 ? s.toFixed(0) + ' s' : s.toFixed(s >= 1 ? 1 : 3) + ' s');

// stackedChart draws the points as stacked areas, one per series with
// nodes in it at some point; x is seconds since the task started.
function stackedChart(tl) {
  const W = 720; const H = 260; const L = 48; const R = 8; const T = 8; const B = 32;
  const pts = tl.points; const last = pts[pts.length - 1];
  const xMax = Math.max(last.at_s, 0.001); const yMax = Math.max(tl.nodes, 1);
  const x = (s) => L + (W - L - R) * s / xMax; const y = (n) => T + (H - T - B) * (1 - n / yMax);
  const shown = tl.series.map((_, i) => i).filter((i) => pts.some((p) => p.counts[i] > 0));
  const base = pts.map(() => 0);
  const areas = shown.map((i) => {
    const lo = base.slice();
    pts.forEach((p, k) => { base[k] += p.counts[i]; });
    const top = pts.map((p, k) => x(p.at_s).toFixed(1) + ',' + y(base[k]).toFixed(1));
    const bottom = pts.map((p, k) => x(p.at_s).toFixed(1) + ',' + y(lo[k]).toFixed(1)).reverse();
    return svg('polygon', { points: top.concat(bottom).join(' '), fill: seriesColor(tl, i), 'data-series': tl.series[i] });
  });
  const axes = [svg('line', { x1: L, y1: y(0), x2: W - R, y2: y(0), class: 'axis' }), svg('line', { x1: L, y1: T, x2: L, y2: y(0), class: 'axis' }),
    svg('text', { x: L - 6, y: y(yMax) + 4, 'text-anchor': 'end', text: String(yMax) }), svg('text', { x: L - 6, y: y(0), 'text-anchor': 'end', text: '0' }),
    svg('text', { x: L, y: H - 10, text: '0' }), svg('text', { x: W - R, y: H - 10, 'text-anchor': 'end', text: secs(last.at_s) }),
    svg('text', { x: (L + W) / 2, y: H - 10, 'text-anchor': 'middle', text: 'time since the task started' })];
  const fig = svg('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img', 'aria-labelledby': 'timeline-h timeline-desc' }, ...areas, ...axes);
  const legendList = el('ul', { class: 'chart-legend', 'aria-label': 'Series' }, ...shown.map((i) => el('li', {},
    el('span', { class: 'swatch', style: 'background-color:' + seriesColor(tl, i) }), tl.series[i] + ' ' + last.counts[i])));
  return [fig, legendList];
}

// timelinePanel: the chart, in words, and as a table (its text
// alternative: about a dozen evenly spaced points and the last).
function timelinePanel(tl) {
  const pts = tl.points; const last = pts[pts.length - 1];
  const now = tl.series.map((s, i) => [s, last.counts[i]]).filter(([, n]) => n > 0).map(([s, n]) => s + ' ' + n).join(', ');
  const step = Math.max(1, Math.floor(pts.length / 12));
  const rows = pts.filter((_, k) => k % step === 0 && k !== pts.length - 1).concat([last]);
  const table = el('table', { id: 'timeline-table' }, el('caption', { text: 'Nodes per stage over time' }),
    el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'time since start' }), ...tl.series.map((s) => el('th', { scope: 'col', text: s })))),
    el('tbody', {}, ...rows.map((p) => el('tr', { 'data-last': p === last ? 'true' : null }, el('th', { scope: 'row', text: secs(p.at_s) }),
      ...p.counts.map((c, i) => el('td', { 'data-series': tl.series[i], text: String(c) }))))));
  return el('section', { class: 'panel', 'aria-labelledby': 'timeline-h' },
    el('h2', { id: 'timeline-h', text: 'Nodes per stage over time' }),
    el('p', { id: 'timeline-desc', text: 'The task\'s ' + tl.nodes + ' nodes by stage, ' + secs(last.at_s) + ' since it started' + (tl.status === 'running' ? ' (running)' : ' (' + tl.status + ')') + ': ' + (now || 'none yet') + '.' }),
    pts.length > 1 ? stackedChart(tl) : null,
    tl.complete ? null : el('p', { class: 'muted', text: 'Still reading the event log…' }),
    tl.truncated ? el('p', { class: 'muted', text: 'The task has more nodes than the plot follows (100,000): the rest are not counted.' }) : null,
    el('details', {}, el('summary', { text: 'The plot as a table' }), table));
}

// verdict says where most of the stages' median time went.
function verdict(tl) {
  let hw = 0; let own = 0;
  for (const s of tl.stages) { hw += s.done * s.provisioner.p50_s; own += s.done * s.slipway.p50_s; }
  if (hw + own === 0) return 'No stage has ended yet.';
  const share = Math.round(100 * hw / (hw + own));
  return (share >= 50 ? 'Mostly waiting on the provisioner (MAAS) or the hardware: ' : 'Mostly Slipway\'s own time (limits, configure calls, store writes): ') +
    share + '% of the stages\' median time was the wait on them, ' + (100 - share) + '% Slipway\'s.';
}

function stageTimesPanel(tl) {
  const pair = (p) => secs(p.p50_s) + ' / ' + secs(p.p95_s);
  const bar = (s) => {
    const t = s.total.p50_s || 1; const hw = Math.min(100, 100 * s.provisioner.p50_s / t);
    return el('div', { class: 'bar split', role: 'img', 'aria-label': Math.round(hw) + '% waiting on the provisioner or hardware' },
      el('span', { class: 'hw', style: 'width:' + hw + '%' }), el('span', { class: 'own', style: 'width:' + (100 - hw) + '%' }));
  };
  const head = ['stage', 'nodes done', 'total p50 / p95', 'provisioner or hardware p50 / p95', 'Slipway p50 / p95', 'median split'];
  return el('section', { class: 'panel', 'aria-labelledby': 'stage-times-h' },
    el('h2', { id: 'stage-times-h', text: 'Where the time goes' }),
    el('p', { id: 'timeline-verdict', text: verdict(tl) }),
    el('p', { class: 'legend' }, el('span', { class: 'swatch hw' }), 'waiting on the provisioner (MAAS) or hardware: a machine\'s phase, a BMC\'s power action or firmware update ',
      el('span', { class: 'swatch own' }), 'Slipway\'s own: limits, configure calls, store writes'),
    tl.stages.length === 0 ? el('p', { class: 'muted', text: 'No stage has ended yet.' }) :
      el('table', { id: 'stage-times' }, el('caption', { text: 'Stage durations over the nodes that left each stage' }),
        el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, ...tl.stages.map((s) => el('tr', { 'data-stage': s.stage }, el('th', { scope: 'row', text: s.stage }), el('td', { text: String(s.done) }),
          el('td', { text: pair(s.total) }), el('td', { class: 'hw-p', 'data-p50': String(s.provisioner.p50_s), text: pair(s.provisioner) }),
          el('td', { text: pair(s.slipway) }), el('td', {}, bar(s)))))));
}

function newTaskForm() {
  const action = el('select', { id: 'task-action' }, ...taskActions.map((a) => el('option', { value: a, text: a })));
  const names = el('input', { id: 'task-names', placeholder: 'node names, comma-separated (empty: every node)' });
  const racks = el('input', { id: 'task-racks', placeholder: 'racks, comma-separated' });
  const tags = el('input', { id: 'task-tags', placeholder: 'tags, comma-separated' });
  const labels = el('input', { id: 'task-labels', placeholder: 'key=value, comma-separated' });
  const submit = el('button', { type: 'button', text: 'Start', onclick: async () => {
    const list = (s) => s.value.split(',').map((x) => x.trim()).filter(Boolean);
    const set = {};
    if (list(names).length) set.names = list(names);
    if (list(racks).length) set.racks = list(racks);
    if (list(tags).length) set.tags = list(tags);
    if (list(labels).length) set.labels = Object.fromEntries(list(labels).map((kv) => [kv.split('=')[0], kv.split('=').slice(1).join('=')]));
    const body = { action: action.value };
    if (Object.keys(set).length) body.node_filter = { type: 'union', sets: [set] };
    if (!(await confirmDialog('Start ' + action.value + (Object.keys(set).length ? ' on ' + JSON.stringify(set) : ' on every node') + '?'))) return;
    try { clearError(); await api('POST', '/api/v1/tasks', body); await route(); } catch (e) { showError(e); }
  } });
  return el('div', { class: 'panel' }, el('h2', { text: 'Start a task' }), el('div', { class: 'row' },
    el('div', {}, el('label', { for: 'task-action', text: 'Action' }), action), el('div', {}, el('label', { for: 'task-names', text: 'Nodes' }), names),
    el('div', {}, el('label', { for: 'task-racks', text: 'Racks' }), racks), el('div', {}, el('label', { for: 'task-tags', text: 'Tags' }), tags),
    el('div', {}, el('label', { for: 'task-labels', text: 'Labels' }), labels), submit));
}

// --- images view ------------------------------------------------------------------

// The images view lists the current design's Image documents in each Site
// whose nodes deploy them (GET /images): what the provisioner is given,
// where its sync stands, why a failed one failed, the nodes deploying it.
// It is drawn again on each image.sync event of the stream, and every 2 s
// while a sync is pending or running (at most imagesMaxPolls times in a
// row: an hour; then a note says to reload).
const imagesMaxPolls = 1800;

async function imagesView(view) {
  const box = el('div', { id: 'images' });
  const all = can('operator') ? el('div', { class: 'verbs' }, syncButton('Sync all images', {}, 'sync-all')) : null;
  put(view, el('h1', { text: 'Images' }),
    el('p', { text: 'The images the current design names, in each Site whose nodes deploy them. A custom image is checked against its SHA-256 here, ' +
      'then uploaded to the Site\'s provisioner, which checks it again; a standard image is imported from the provisioner\'s boot source.' }), all, box);
  S.imagePolls = 0;
  const last = await api('GET', '/api/v1/events/last'); // before the images: no event is missed after
  await refreshImages(box);
  S.lastSeq = last.seq;
  startStream();
}

// syncButton starts a sync_images task (body: {site, image} or {} for
// every image in every Site) after the operator confirms.
function syncButton(label, body, id) {
  const what = body.image ? 'image ' + body.image + ' into Site ' + body.site : 'every image of the design into every Site that deploys it';
  return el('button', { type: 'button', id, text: label, 'aria-label': body.image ? label + ' ' + body.image + ' in ' + body.site : null, onclick: async () => {
    if (!(await confirmDialog('Sync ' + what + '?'))) return;
    try {
      clearError();
      await api('POST', '/api/v1/images/sync', body);
      S.imagePolls = 0;
      const box = $('#images');
      if (box) await refreshImages(box);
    } catch (e) { showError(e); }
  } });
}

// imagesSoon draws the images again within half a second (events come in
// bursts).
function imagesSoon() {
  if (S.imagesSoon) return;
  S.imagesSoon = setTimeout(async () => {
    S.imagesSoon = null;
    const box = $('#images');
    if (box && currentView()[0] === 'images') await refreshImages(box).catch(showError);
  }, 500);
}

async function refreshImages(box) {
  clearTimeout(S.imagesTimer);
  const page = await api('GET', '/api/v1/images');
  const rows = page.images || [];
  const active = rows.some((r) => r.state === 'syncing' || r.state === 'pending');
  box.replaceChildren(...imageSites(rows));
  if (!active) return;
  if (++S.imagePolls > imagesMaxPolls) {
    box.append(el('p', { class: 'muted', text: 'Still syncing: reload the page to follow it (the view stops asking after an hour).' }));
    return;
  }
  S.imagesTimer = setTimeout(() => { if (currentView()[0] === 'images' && box.isConnected) refreshImages(box).catch(showError); }, 2000);
}

// imageSites groups the rows by Site, one table each.
function imageSites(rows) {
  if (!rows.length) return [el('p', { class: 'panel', id: 'no-images', text: 'The current design names no Image document: its nodes deploy the provisioner\'s standard images.' })];
  const bySite = new Map();
  for (const r of rows) {
    if (!bySite.has(r.site)) bySite.set(r.site, []);
    bySite.get(r.site).push(r);
  }
  const head = ['image', 'provisioner name', 'architecture', 'kind', 'SHA-256', 'size', 'state', 'nodes deploying it'];
  if (can('operator')) head.push('');
  return [...bySite.keys()].sort().map((site) => el('section', { class: 'site', 'data-site': site, 'aria-labelledby': 'images-' + site },
    el('h2', { id: 'images-' + site, text: 'Site ' + site }),
    el('table', { class: 'images' }, el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...bySite.get(site).map(imageRow)))));
}

// bytes says a size in the largest binary unit that keeps it >= 1.
function bytes(n) {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0; let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(v < 10 ? 1 : 0) : String(v)) + ' ' + units[i];
}

function imageRow(r) {
  const sha = r.sha256 ? el('code', { title: r.sha256, 'aria-label': 'SHA-256 ' + r.sha256, text: r.sha256.slice(0, 12) + '…' }) : el('span', { class: 'muted', text: '—' });
  const size = r.size ? el('span', { title: r.size + ' bytes', text: bytes(r.size) }) : el('span', { class: 'muted', text: '—' });
  const tr = el('tr', { 'data-image': r.image, 'data-state': r.state, class: 'img-' + r.state },
    el('th', { scope: 'row', text: r.image }), el('td', { text: r.provisioner_name }), el('td', { text: r.architecture }),
    el('td', { text: r.custom ? 'custom' : 'standard' }), el('td', {}, sha), el('td', {}, size),
    el('td', { class: 'img-state' }, imageState(r)), el('td', {}, nodeLinks(r.nodes || [])));
  if (can('operator')) tr.append(el('td', {}, syncButton('Sync', { site: r.site, image: r.image })));
  return tr;
}

// imageState: the state in words, a bar while it syncs, the reason of a
// failed sync, and what an interrupted upload found already there.
function imageState(r) {
  const kids = [el('span', { class: 'state-word', text: r.state })];
  if (r.state === 'syncing' || r.state === 'pending') {
    const pct = Math.max(0, Math.min(100, r.progress || 0));
    kids.push(' ', el('progress', { max: '100', value: String(pct), 'aria-label': r.image + ' in ' + r.site + ': ' + pct.toFixed(0) + '% uploaded' }),
      el('span', { class: 'pct', text: ' ' + pct.toFixed(0) + '%' }));
  }
  if (r.resumed) kids.push(el('div', { class: 'muted', text: 'resumed from ' + bytes(r.resumed) + ' already held' }));
  if (r.error) kids.push(el('div', { class: 'img-error', text: r.error }));
  if (r.updated) kids.push(el('div', { class: 'muted', text: when(r.updated) + (r.task ? ' · task ' + r.task : '') }));
  return kids;
}

// nodeLinks links the first 50 nodes to their views and counts the rest.
function nodeLinks(nodes) {
  if (!nodes.length) return el('span', { class: 'muted', text: 'none' });
  const shown = nodes.slice(0, 50).map((n) => el('a', { href: '#/node/' + encodeURIComponent(n), text: n }));
  const list = el('ul', { class: 'img-nodes' }, ...shown.map((a) => el('li', {}, a)));
  if (nodes.length > 50) list.append(el('li', { class: 'muted', text: '… and ' + (nodes.length - 50) + ' more' }));
  return list;
}

// imagePanel: the image the node deploys (its design's platform.image)
// and, for an Image document, where its sync stands in the node's Site.
function imagePanel(name, design, images) {
  const panel = (...kids) => el('div', { class: 'panel', id: 'node-image' }, el('h2', { text: 'Image' }), ...kids);
  const asked = ((design || {}).spec || {}).platform ? design.spec.platform.image : '';
  if (!asked) return panel(el('p', { class: 'muted', text: 'The design names no image: the provisioner deploys its default.' }));
  const r = ((images || {}).images || []).find((x) => (x.nodes || []).includes(name));
  if (!r) return panel(el('p', { text: asked + ': a standard image that names no Image document; the provisioner imports it from its boot source.' }));
  return panel(el('dl', { class: 'kv' },
    el('dt', { text: 'image' }), el('dd', {}, el('a', { href: '#/images', text: r.image })),
    el('dt', { text: 'provisioner name' }), el('dd', { text: r.provisioner_name + ' (' + (r.custom ? 'custom' : 'standard') + ', ' + r.architecture + ')' }),
    r.sha256 ? el('dt', { text: 'SHA-256' }) : null, r.sha256 ? el('dd', {}, el('code', { text: r.sha256 })) : null,
    el('dt', { text: 'in Site ' + r.site }), el('dd', { class: 'img-state' }, imageState(r))));
}

// --- designs, drift, audit --------------------------------------------------------

// noDesignText says what to do on a server that has no design yet.
const noDesignText = 'No design yet: this server has none applied. Apply one (orchestrator apply --server URL ROOT..., or POST /api/v1/designs), ' +
  'or let the server follow a git repository (docs/gitops.md).';

// provenance says where a revision came from: its git commit (author,
// message), "none" for an upload that said nothing of it, or its roots.
function provenance(h) {
  if (h.provenance === 'none') return 'none (an upload that named no origin)';
  if (!h.git_commit) return 'roots';
  return 'git ' + h.git_commit.slice(0, 12) + (h.git_dirty ? '+dirty' : '') + (h.git_author ? ' · ' + h.git_author : '') + (h.git_message ? ' · ' + h.git_message : '');
}

const planOrder = ['release', 'redeploy', 'new', 'configure', 'none'];

// planCounts says a plan's counts in order, "1 release, 2 new".
function planCounts(counts, skipNone) {
  const parts = planOrder.filter((a) => (counts || {})[a] > 0 && !(skipNone && a === 'none')).map((a) => counts[a] + ' ' + a);
  return parts.length ? parts.join(', ') : 'no nodes';
}

function planCell(p) {
  if (!p) return 'none stored';
  if (!p.changed) return 'no change';
  return (p.destructive ? p.destructive + ' destructive · ' : '') + planCounts(p.counts, true);
}

const changeMark = { create: '+', update: '~', delete: '-' };
function changeList(changes) {
  if (!changes || !changes.length) return null;
  return el('ul', { class: 'changes' }, ...changes.map((c) => el('li', { text: (changeMark[c.op] || c.op) + ' ' + c.part + ' ' + c.object + (c.detail ? ': ' + c.detail : '') })));
}

// planSection shows a plan: counts, the destructive actions first, each
// node that changes (action, machine, state, reasons, changes), then the
// sites.
function planSection(p) {
  const nodes = (p.nodes || []).filter((n) => n.action !== 'none');
  const sites = (p.sites || []).filter((s) => (s.changes || []).length || (s.records || []).length);
  return el('section', { id: 'plan', class: 'panel', 'aria-labelledby': 'plan-h' },
    el('h2', { id: 'plan-h', text: 'Plan of revision ' + p.to.slice(0, 12) + (p.from ? ' (from ' + p.from.slice(0, 12) + ')' : ' (the first design)') }),
    el('p', { class: 'plan-counts', text: planCounts(p.counts) + (p.changed ? '' : ': no change') }),
    p.observed ? null : el('p', { text: 'The provisioner was not read: this plan comes from the stored designs and the engine\'s records.' }),
    ...(p.notes || []).map((n) => el('p', { class: 'note', text: 'Note: ' + n })),
    (p.destructive || []).length ? el('div', { class: 'destructive' }, el('h3', { text: 'Destructive actions (' + p.destructive.length + ')' }),
      el('ul', {}, ...p.destructive.map((d) => el('li', { text: d })))) : null,
    nodes.length ? el('table', { class: 'plan-nodes' }, el('caption', { text: 'Nodes that change, destructive first' }),
      el('thead', {}, el('tr', {}, ...['action', 'node', 'machine', 'state', 'why', 'changes'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...nodes.map((n) => el('tr', { class: 'act-' + n.action }, el('td', { text: n.action }), el('th', { scope: 'row', text: n.node }),
        el('td', { text: n.machine || '' }), el('td', { text: n.state || '' }),
        el('td', {}, el('ul', { class: 'reasons' }, ...(n.reasons || []).map((r) => el('li', { text: r })), n.erase ? el('li', { text: 'erase: ' + n.erase }) : null)),
        el('td', {}, changeList(n.changes)))))) : null,
    p.nodes_omitted ? el('p', { text: '… and ' + p.nodes_omitted + ' more nodes (the stored plan keeps the first ' + (p.nodes || []).length + '; the counts count them all).' }) : null,
    ...sites.map((s) => el('div', { class: 'plan-site' }, el('h3', { text: 'Site ' + s.site }), changeList(s.changes),
      (s.records || []).length ? el('ul', {}, ...s.records.map((r) => el('li', { text: 'record: ' + r }))) : null)));
}

const short = (id) => (id || '').slice(0, 12);
const when = (t) => (t ? new Date(t).toLocaleString() : '');

// gitApprove applies the held commit, naming it, after the operator
// confirms its destructive actions.
function gitApprove(held) {
  return el('button', { type: 'button', id: 'git-approve', text: 'Approve ' + short(held.commit), onclick: async () => {
    if (!(await confirmDialog('Apply commit ' + short(held.commit) + ' and what it holds for approval (' + held.destructive.length + ')?'))) return;
    try { clearError(); await api('POST', '/api/v1/git/approve', { commit: held.commit }); await route(); } catch (e) { showError(e); }
  } });
}

function gitEvents(evs) {
  if (!evs || !evs.length) return null;
  return el('table', { class: 'git-events' }, el('caption', { text: 'Recent rounds, newest first' }),
    el('thead', {}, el('tr', {}, ...['time', 'trigger', 'commit', 'outcome', 'revision', 'reason'].map((h) => el('th', { scope: 'col', text: h })))),
    el('tbody', {}, ...evs.slice(-10).reverse().map((e) => el('tr', { class: 'git-' + e.outcome }, el('td', { text: when(e.time) }), el('td', { text: e.trigger }),
      el('td', { text: short(e.commit) }), el('td', { text: e.outcome }), el('td', { text: short(e.revision) }), el('td', { text: e.reason || '' })))));
}

// gitSection shows the git source (GET /git/status): what it follows,
// the last fetch, the commit applied, the one held for approval (an
// operator approves it here), the last refused or invalid, recent rounds.
function gitSection(g) {
  const f = g.last_fetch;
  const a = g.applied;
  const h = g.held;
  const r = g.rejected;
  return el('section', { id: 'git', class: 'panel', 'aria-labelledby': 'git-h' },
    el('h2', { id: 'git-h', text: 'Git source' }),
    el('p', { text: 'Follows ' + g.remote + ', branch ' + g.branch + (g.path ? ', path ' + g.path : '') }),
    el('p', { id: 'git-fetch', text: f ? 'Last fetch ' + when(f.time) + ': ' + (f.error ? 'failed: ' + f.error : 'head ' + short(f.commit)) : 'Not fetched yet.' }),
    a ? el('p', { id: 'git-applied', text: 'Applied ' + short(a.commit) + ' (' + a.result + ', revision ' + short(a.revision) + ') · ' + a.author + ' · ' + a.message }) : null,
    h ? el('div', { id: 'git-held', class: 'destructive' }, el('h3', { text: 'Held for approval: ' + short(h.commit) + ' · ' + h.author + ' · ' + h.message }),
      el('ul', {}, ...h.destructive.map((d) => el('li', { text: d }))),
      h.admin_approves ? el('p', { text: 'It changes credential bindings: an admin approves it.' }) : null,
      can(h.admin_approves ? 'admin' : 'operator') ? gitApprove(h) : null) : null,
    r ? el('div', { id: 'git-rejected' }, el('h3', { text: 'Last ' + r.outcome + ': ' + short(r.commit) }), el('p', { text: r.reason }),
      (r.findings || []).length ? el('ul', {}, ...r.findings.map((x) => el('li', { text: x }))) : null) : null,
    gitEvents(g.events));
}

// gitPanel fills box with the git source's status; a server that follows
// no remote (404) shows none.
function gitPanel(box) {
  api('GET', '/api/v1/git/status').then((g) => put(box, gitSection(g))).catch((e) => { if (e.status !== 404) showError(e); });
  return box;
}

async function designsView(view, arg) {
  const hist = await api('GET', '/api/v1/designs');
  const gitBox = el('div', { id: 'git-box' });
  if (hist.length === 0) { put(view, el('h1', { text: 'Designs' }), el('p', { id: 'no-design', class: 'panel', text: noDesignText }), gitPanel(gitBox)); return; }
  const opts = () => hist.slice().reverse().map((h) => el('option', { value: h.id, text: h.id.slice(0, 12) + ' · ' + new Date(h.applied || h.created).toLocaleString() }));
  const a = el('select', { id: 'rev-a' }, opts()); const b = el('select', { id: 'rev-b' }, opts());
  if (b.options.length > 1) b.selectedIndex = 1;
  const out = el('pre', { hidden: true, tabindex: '0' });
  const diff = el('button', { type: 'button', text: 'Diff', onclick: async () => {
    try { out.textContent = JSON.stringify(await api('GET', '/api/v1/designs/' + a.value + '/diff?against=' + b.value), null, 2); out.hidden = false; } catch (e) { showError(e); }
  } });
  // The plan shown: the revision in the address (#/designs/ID), else the newest with one.
  const shown = arg || (hist.slice().reverse().find((h) => h.plan) || {}).id;
  const planBox = el('div', { id: 'plan-box' });
  const showPlan = async (id) => {
    try { put(planBox, planSection(await api('GET', '/api/v1/designs/' + encodeURIComponent(id) + '/plan'))); } catch (e) {
      if (e.status === 404) put(planBox, el('p', { class: 'panel', text: 'No plan is stored with revision ' + id.slice(0, 12) + ' (it was applied before plans were kept).' }));
      else showError(e);
    }
  };
  const planLink = (h) => h.plan ? el('a', { href: '#/designs/' + h.id, text: planCell(h.plan), 'aria-label': 'Plan of ' + h.id.slice(0, 12) + ': ' + planCell(h.plan) }) : planCell(h.plan);
  put(view, el('h1', { text: 'Designs' }),
    el('table', {}, el('caption', { text: 'Applies, newest first' }),
      el('thead', {}, el('tr', {}, ...['revision', 'applied', 'provenance', 'roots', 'plan'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...hist.slice().reverse().map((h) => el('tr', {}, el('td', { text: h.id.slice(0, 12) }), el('td', { text: new Date(h.applied || h.created).toLocaleString() }),
        el('td', { text: provenance(h) }), el('td', { text: (h.roots || []).join(', ') }), el('td', { class: h.plan && h.plan.destructive ? 'destructive-cell' : null }, planLink(h)))))),
    gitPanel(gitBox),
    planBox,
    el('div', { class: 'panel' }, el('h2', { text: 'Compare two revisions' }), el('div', { class: 'row' },
      el('div', {}, el('label', { for: 'rev-a', text: 'Revision' }), a), el('div', {}, el('label', { for: 'rev-b', text: 'against' }), b), diff), out));
  if (shown) await showPlan(shown);
}

async function driftView(view) {
  const page = await api('GET', '/api/v1/reconciliation/drift?limit=1000').catch((e) => { if (e.status === 501) return { items: [] }; throw e; });
  const resolve = (d, res) => el('button', { type: 'button', text: res, onclick: async () => {
    if (!(await confirmDialog(res + ' the ' + d.kind + ' drift of ' + d.node + '?'))) return;
    try { clearError(); await api('POST', '/api/v1/reconciliation/drift/' + encodeURIComponent(d.node) + '/resolve', { kind: d.kind, resolution: res }); await route(); } catch (e) { showError(e); }
  } });
  put(view, el('h1', { text: 'Drift' }), page.items.length === 0 ? el('p', { text: 'No open drift.' }) :
    el('table', {}, el('thead', {}, el('tr', {}, ...['node', 'kind', 'expected', 'observed', 'first seen', ''].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...page.items.map((d) => el('tr', {}, el('td', { text: d.node }), el('td', { text: d.kind }), el('td', { text: d.expected || '' }),
        el('td', { text: d.observed || '' }), el('td', { text: new Date(d.first_seen).toLocaleString() }),
        el('td', {}, can('operator') ? el('div', { class: 'verbs' }, ...['accept', 'repair', 'release'].map((r) => resolve(d, r))) : null))))));
}

async function auditView(view) {
  const page = await api('GET', '/api/v1/audit?limit=200');
  const items = (page.items || []).slice().reverse();
  put(view, el('h1', { text: 'Audit' }),
    el('table', {}, el('thead', {}, el('tr', {}, ...['time', 'who', 'call', 'status', 'request'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, ...items.map((r) => el('tr', {}, el('td', { text: new Date(r.time).toLocaleString() }), el('td', { text: (r.who && (r.who.name || r.who.id)) || '' }),
        el('td', { text: (r.method || '') + ' ' + (r.path || '') }), el('td', { text: String(r.status || '') }), el('td', { text: r.request_id || '' }))))));
}

// --- start ---------------------------------------------------------------------------

document.addEventListener('DOMContentLoaded', async () => {
  $('#signin').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const tok = $('#token');
    try { clearError(); await signIn(tok.value.trim()); tok.value = ''; await route(); } catch (e) { showError(e); }
  });
  $('#signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', route);
  if (S.token) { try { await signIn(S.token); } catch (e) { showError(e); } }
  await route();
});
