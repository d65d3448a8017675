// The board's front end: plain JavaScript against the routes in board.sql.
// The session is an HttpOnly cookie this script never sees; the browser
// sends it with every request to the API and with the event stream.
'use strict';

const $ = (id) => document.getElementById(id);
const items = new Map();   // id -> item, everything this user may see
let me = null;             // {id, name} once signed in
let events = null;         // the EventSource while signed in

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

// Renders every item, newest first.
function render() {
  const list = $('items');
  list.replaceChildren();
  const sorted = [...items.values()].sort((a, b) => b.id - a.id);
  for (const item of sorted) list.append(itemElement(item));
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

// Asks for a new title and saves it; the change comes back as an event.
async function editItem(item) {
  const title = window.prompt('Title', item.title);
  if (title === null || title.trim() === '') return;
  await api('PUT', '/api/items/' + item.id, { title: title.trim() });
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
}

// Asks who the session belongs to, then shows the board or the login.
async function start() {
  if (events) { events.close(); events = null; }
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
  start();
});
