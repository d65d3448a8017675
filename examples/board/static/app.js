// The board's front end: plain JavaScript against the routes in board.sql.
// The session is an HttpOnly cookie this script never sees; the browser
// sends it with every request to the API, with the event stream (item
// changes) and with the presence WebSocket (who is looking, who is typing).
'use strict';

const $ = (id) => document.getElementById(id);
const items = new Map();   // id -> item, everything this user may see
let me = null;             // {id, name} once signed in
let events = null;         // the EventSource while signed in
let presence = null;       // the presence WebSocket while signed in
let myConn = null;         // that socket's id, as the server named it
let editing = null;        // the id of the item being edited here, if any
const typing = new Map();  // item id -> {name, timer}: who is typing in it
// How long "… is typing" stays after the last word of it, and how often
// this page says it is typing while the user types.
const TYPING_SHOWN_MS = 4000;
const TYPING_EVERY_MS = 1000;
// Wait before opening the presence socket again after it dropped.
const PRESENCE_RETRY_MS = 3000;

// Calls the API; resolves to {status, data} (data parsed when JSON).
async function api(method, path, body) {
  const init = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(path, init);
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = { error: text.trim() }; }
  return { status: res.status, data };
}

// Shows the login form or the board.
function show(view) {
  $('login-view').hidden = view !== 'login';
  $('board-view').hidden = view !== 'board';
  $('who').hidden = view !== 'board';
}

// Renders every item, newest first.  The card being edited is kept as it
// is (with what was typed in it, and the focus).
function render() {
  const list = $('items');
  const kept = editing !== null ? list.querySelector('li[data-id="' + editing + '"]') : null;
  const focused = kept && kept.contains(document.activeElement) ? document.activeElement : null;
  const sorted = [...items.values()].sort((a, b) => b.id - a.id);
  list.replaceChildren(...sorted.map((item) => (kept && item.id === editing ? kept : itemElement(item))));
  if (focused) focused.focus();
}

// One item's card; the author's own items get edit and delete buttons.
function itemElement(item) {
  const li = document.createElement('li');
  li.className = 'item' + (item.public ? '' : ' private');
  li.dataset.id = item.id;
  const h = document.createElement('h3');
  h.textContent = item.title;
  li.append(h);
  if (item.body) {
    const p = document.createElement('p');
    p.textContent = item.body;
    li.append(p);
  }
  const meta = document.createElement('div');
  meta.className = 'meta';
  const by = document.createElement('span');
  by.textContent = 'by ' + item.author;
  meta.append(by);
  if (item.attachment) {
    const file = document.createElement('a');
    file.className = 'attachment';
    file.href = '/api/items/' + item.id + '/attachment';
    file.textContent = item.attachment.filename + ' (' + item.attachment.size + ' bytes)';
    meta.append(file);
  }
  if (!item.public) {
    const badge = document.createElement('span');
    badge.className = 'badge';
    badge.textContent = 'private';
    meta.append(badge);
  }
  const typist = document.createElement('span');
  typist.className = 'typing';
  typist.textContent = typing.has(item.id) ? typing.get(item.id).name + ' is typing…' : '';
  meta.append(typist);
  if (me && item.owner === me.id && editing === item.id) {
    li.append(meta, editForm(item));
    return li;
  }
  if (me && item.owner === me.id) {
    const edit = document.createElement('button');
    edit.className = 'quiet edit';
    edit.type = 'button';
    edit.textContent = 'Edit';
    edit.onclick = () => editItem(item);
    const del = document.createElement('button');
    del.className = 'quiet delete';
    del.type = 'button';
    del.textContent = 'Delete';
    del.onclick = () => api('DELETE', '/api/items/' + item.id);
    meta.append(edit, del);
  }
  li.append(meta);
  return li;
}

// Opens the item's card for editing its title.
function editItem(item) {
  editing = item.id;
  const old = document.querySelector('li[data-id="' + item.id + '"]');
  if (old) old.replaceWith(itemElement(item));
  const input = document.querySelector('li[data-id="' + item.id + '"] .edit-title');
  if (input) input.focus();
}

// The form that edits an item's title in its card: typing in it tells the
// others, saving sends the change (it comes back as an event).
function editForm(item) {
  const form = document.createElement('form');
  form.className = 'edit-form';
  const input = document.createElement('input');
  input.className = 'edit-title';
  input.value = item.title;
  input.maxLength = 200;
  input.required = true;
  let said = 0;
  input.addEventListener('input', () => {
    if (Date.now() - said < TYPING_EVERY_MS) return;
    said = Date.now();
    sendPresence({ type: 'typing', item: item.id });
  });
  const save = document.createElement('button');
  save.type = 'submit';
  save.className = 'save';
  save.textContent = 'Save';
  const cancel = document.createElement('button');
  cancel.type = 'button';
  cancel.className = 'quiet cancel';
  cancel.textContent = 'Cancel';
  cancel.onclick = () => { editing = null; render(); };
  form.append(input, save, cancel);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const title = input.value.trim();
    if (title === '') return;
    editing = null;
    await api('PUT', '/api/items/' + item.id, { title });
    render();
  });
  return form;
}

// Sends a message on the presence socket if it is open.
function sendPresence(msg) {
  if (presence && presence.readyState === WebSocket.OPEN) presence.send(JSON.stringify(msg));
}

// Shows who is looking at the board now.
function showPresence(names) {
  $('presence').textContent = names.length ? 'looking now: ' + names.join(', ') : '';
}

// Shows (or, after a while without news, hides) "… is typing" on an item.
function showTyping(id, name) {
  const was = typing.get(id);
  if (was) clearTimeout(was.timer);
  const timer = setTimeout(() => { typing.delete(id); paintTyping(id); }, TYPING_SHOWN_MS);
  typing.set(id, { name, timer });
  paintTyping(id);
}

// Writes an item's typing line from the map, without rendering the board.
function paintTyping(id) {
  const span = document.querySelector('li[data-id="' + id + '"] .typing');
  if (span) span.textContent = typing.has(id) ? typing.get(id).name + ' is typing…' : '';
}

// One message on the presence socket: the list (on opening and as the
// answer to "who"), someone joined or left (ask for the list again: the
// answer's snapshot is taken after their change committed), someone typing.
function presenceMessage(msg) {
  if (msg.type === 'presence') {
    if (msg.you !== undefined) myConn = msg.you;
    showPresence(msg.names);
  } else if (msg.type === 'joined' || msg.type === 'left') {
    sendPresence({ type: 'who' });
  } else if (msg.type === 'typing' && msg.conn !== myConn) {
    showTyping(msg.item, msg.name);
  }
}

// Opens the presence WebSocket (the session cookie goes with it); opens it
// again a little after it drops, and back to the start when the server
// closed it for the session (1008: the token expired).
function openPresence() {
  if (presence) presence.close();
  const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/api/presence');
  presence = ws;
  // What changed between the open handler's snapshot and its LISTEN.
  ws.onopen = () => sendPresence({ type: 'who' });
  ws.onmessage = (e) => presenceMessage(JSON.parse(e.data));
  ws.onclose = (e) => {
    if (presence !== ws) return;
    presence = null;
    showPresence([]);
    if (e.code === 1008) start();
    else setTimeout(() => { if (me && !presence) openPresence(); }, PRESENCE_RETRY_MS);
  };
}

// Closes the presence socket, for good.
function closePresence() {
  if (!presence) return;
  const ws = presence;
  presence = null;
  ws.close();
  showPresence([]);
}

// Applies one change from the event stream: an item added or changed, or gone.
function applyChange(kind, data) {
  if (kind === 'delete') items.delete(data.id);
  else items.set(data.id, data);
  render();
}

// Opens the event stream from the change after `after`; the browser
// reconnects by itself with Last-Event-ID, and the route catches up.
function listen(after) {
  if (events) events.close();
  events = new EventSource('/api/events?after=' + encodeURIComponent(after));
  events.addEventListener('upsert', (e) => applyChange('upsert', JSON.parse(e.data)));
  events.addEventListener('delete', (e) => applyChange('delete', JSON.parse(e.data)));
  events.onopen = () => $('live').classList.remove('off');
  events.onerror = () => {
    $('live').classList.add('off');
    // A stream ended for good (the session expired): back to the login.
    if (events.readyState === EventSource.CLOSED) start();
  };
}

// Loads the board for the signed-in user and goes live.
async function loadBoard() {
  const { status, data } = await api('GET', '/api/items');
  if (status !== 200) return start();
  items.clear();
  for (const item of data.items) items.set(item.id, item);
  $('me').textContent = me.name;
  show('board');
  render();
  listen(data.last_change);
  openPresence();
}

// Asks who the session belongs to, then shows the board or the login.
async function start() {
  if (events) { events.close(); events = null; }
  closePresence();
  editing = null;
  const { status, data } = await api('GET', '/api/me');
  if (status === 200 && data && data.id !== null) {
    me = data;
    return loadBoard();
  }
  me = null;
  items.clear();
  show('login');
}

// Sign-up and log-in share the form; the answer sets the session cookie.
async function signIn(path) {
  const form = $('login-form');
  if (!form.reportValidity()) return;
  $('login-error').textContent = '';
  const { status, data } = await api('POST', path, {
    name: $('login-name').value.trim(),
    password: $('login-password').value,
  });
  if (status === 200 || status === 201) {
    $('login-password').value = '';
    return start();
  }
  $('login-error').textContent = (data && data.error) || ('Failed (' + status + ')');
}

// Uploads a file to an item as multipart/form-data, showing its progress
// (fetch reports none for uploads); resolves to the response's status.
function attach(id, file) {
  const bar = $('add-progress');
  const form = new FormData();
  form.append('file', file);
  bar.value = 0;
  bar.hidden = false;
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/api/items/' + id + '/attachment');
    xhr.upload.onprogress = (e) => { if (e.lengthComputable) bar.value = e.loaded / e.total; };
    xhr.onload = () => { bar.value = 1; resolve(xhr.status); };
    xhr.onerror = () => resolve(0);
    xhr.send(form);
  });
}

// Downloads the user's items as CSV, streamed by the server.
async function exportCsv() {
  const res = await fetch('/api/export', { headers: { Accept: 'text/csv' }, credentials: 'same-origin' });
  if (!res.ok) return;
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = 'board-items.csv';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

document.addEventListener('DOMContentLoaded', () => {
  $('login-form').addEventListener('submit', (e) => { e.preventDefault(); signIn('/api/login'); });
  $('signup-button').addEventListener('click', () => signIn('/api/signup'));
  $('logout').addEventListener('click', async () => { await api('POST', '/api/logout'); start(); });
  $('export').addEventListener('click', exportCsv);
  $('add-form').addEventListener('submit', async (e) => {
    e.preventDefault();
    $('add-error').textContent = '';
    const { status, data } = await api('POST', '/api/items', {
      title: $('add-title').value.trim(),
      body: $('add-body').value,
      public: !$('add-private').checked,
    });
    const file = $('add-file').files[0];
    if (status === 201 && file) {
      const sent = await attach(data.id, file);
      if (sent !== 201) $('add-error').textContent = 'The file was not attached (' + sent + ')';
    }
    if (status === 201) {
      e.target.reset();
    } else {
      $('add-error').textContent = (data && data.error) || ('Failed (' + status + ')');
    }
  });
  // A page left for another (kept in the back-forward cache) is no longer
  // looking: its socket closes, and opens again if the page comes back.
  window.addEventListener('pagehide', closePresence);
  window.addEventListener('pageshow', (e) => { if (e.persisted && me && !presence) openPresence(); });
  start();
});
