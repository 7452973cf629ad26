/**
 * The webhooks view: a static page (nothing from the request is echoed into it) whose script reads `tenantId`,
 * `projectId` and optionally `destinationId`, `status`, `eventType`, `runEventId` from the address and, with the browser session
 * cookie, calls the management API: the project's destinations with their statistics, one destination's delivery log
 * with its attempts, and the redeliver and recover operations. Every value is put into the page as text, never as HTML.
 */
export const WEBHOOKS_VIEW_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Webhooks: destinations and deliveries</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/webhooks/assets/view.css">
<script src="/webhooks/assets/view.js" defer></script>
</head>
<body>
<main id="webhooks" data-state="loading">
  <h1>Webhook destinations</h1>
  <p id="scope"></p>
  <p id="status" role="status">Loading…</p>
  <table id="destinations">
    <thead><tr><th>Destination</th><th>Target</th><th>State</th><th>Last hour</th><th>Last day</th><th>Last week</th><th>Attempt p50 / p99 (week)</th></tr></thead>
    <tbody></tbody>
  </table>
  <section id="log" hidden>
    <h2 id="log-title"></h2>
    <div class="bar">
      <form id="filters">
        <label>Status <select id="filter-status"><option value="">any</option><option value="pending">pending</option><option value="delivered">delivered</option><option value="failed">failed</option><option value="cancelled">cancelled</option></select></label>
        <label>Event type <select id="filter-type"><option value="">any</option></select></label>
        <label>Run event id <input id="filter-run-event" type="search" maxlength="255" placeholder="any"></label>
      </form>
      <form id="recover">
        <label>Recover failed and cancelled since <input id="recover-since" type="datetime-local" required></label>
        <label>until <input id="recover-until" type="datetime-local"></label>
        <button type="submit" id="recover-button">Recover</button>
      </form>
    </div>
    <p id="log-status" role="status"></p>
    <table id="deliveries">
      <thead><tr><th>Created</th><th>Event type</th><th>Run event</th><th>Status</th><th>Attempts</th><th>Last code</th><th>Last error</th><th>Next attempt</th><th></th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
</main>
</body>
</html>
`;

export const WEBHOOKS_VIEW_CSS = `body { font-family: system-ui, sans-serif; margin: 0; background: #fafafa; color: #222; }
main { max-width: 1200px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.4rem; margin: 0 0 4px; }
h2 { font-size: 1.15rem; margin: 24px 0 8px; }
#scope { color: #555; margin: 0 0 12px; }
#status, #log-status { min-height: 1.2em; }
main[data-state="error"] #status { color: #b00020; }
table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid #ddd; font-size: 0.9rem; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid #eee; vertical-align: top; }
th { background: #f3f3f3; font-weight: 600; }
#destinations tbody tr { cursor: pointer; }
#destinations tbody tr[aria-selected="true"] { background: #e8f0fe; }
.bar { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-end; margin-bottom: 8px; }
form { display: flex; gap: 12px; align-items: center; flex-wrap: wrap; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 0.8rem; background: #eee; }
.badge.delivered { background: #d7f5dd; color: #13652a; }
.badge.failed { background: #fde0e0; color: #9b1c1c; }
.badge.pending { background: #fff3cd; color: #7a5b00; }
.badge.cancelled { background: #e5e5e5; color: #444; }
.badge.disabled { background: #fde0e0; color: #9b1c1c; }
.badge.enabled { background: #d7f5dd; color: #13652a; }
.muted { color: #777; }
.error { color: #9b1c1c; }
table.attempts { margin: 4px 0 8px; font-size: 0.85rem; }
details summary { cursor: pointer; color: #1a56db; }
`;

export const WEBHOOKS_VIEW_JS = `(function () {
  'use strict';
  var root = document.getElementById('webhooks');
  var statusEl = document.getElementById('status');
  var logStatusEl = document.getElementById('log-status');
  var params = new URLSearchParams(window.location.search);
  var tenantId = params.get('tenantId');
  var projectId = params.get('projectId');
  var selected = params.get('destinationId');
  var filterStatus = params.get('status') || '';
  var filterType = params.get('eventType') || '';
  var filterRunEvent = params.get('runEventId') || '';
  var destinations = [];
  var pollTimer = null;

  function fail(message) {
    root.setAttribute('data-state', 'error');
    statusEl.textContent = message;
  }
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function badge(text, cls) {
    return el('span', text, 'badge ' + cls);
  }
  function when(iso) {
    return iso ? iso.replace('T', ' ').slice(0, 19) : '';
  }
  function base() {
    return '/manage/tenants/' + encodeURIComponent(tenantId) + '/projects/' + encodeURIComponent(projectId) + '/webhook-destinations';
  }
  function problemText(res, body) {
    var hint = res.status === 401 ? ' Sign in first (POST /manage/auth/session sets the session cookie).' : '';
    return res.status + ' ' + ((body && body.title) || '') + ': ' + ((body && body.detail) || '') + hint;
  }
  function api(method, path, body) {
    var init = { method: method, credentials: 'same-origin', headers: { accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var parsed = null;
        try { parsed = text ? JSON.parse(text) : null; } catch (e) { parsed = null; }
        if (!res.ok) throw new Error(problemText(res, parsed));
        return parsed;
      });
    });
  }
  function keepParams() {
    var p = new URLSearchParams({ tenantId: tenantId, projectId: projectId });
    if (selected) p.set('destinationId', selected);
    if (filterStatus) p.set('status', filterStatus);
    if (filterType) p.set('eventType', filterType);
    if (filterRunEvent) p.set('runEventId', filterRunEvent);
    window.history.replaceState(null, '', window.location.pathname + '?' + p.toString());
  }

  function windowCell(w) {
    var td = el('td');
    var c = w.counts;
    td.appendChild(el('span', c.delivered + ' delivered, ' + c.failed + ' failed, ' + c.pending + ' pending, ' + c.cancelled + ' cancelled'));
    td.appendChild(el('br'));
    td.appendChild(el('span', w.successRate === null ? 'no finished deliveries' : Math.round(w.successRate * 1000) / 10 + ' % success', 'muted'));
    return td;
  }

  function renderDestinations(statsById) {
    var tbody = document.querySelector('#destinations tbody');
    tbody.textContent = '';
    destinations.forEach(function (d) {
      var tr = el('tr');
      tr.setAttribute('data-destination-id', d.id);
      tr.setAttribute('aria-selected', String(d.id === selected));
      tr.appendChild(el('td', d.name));
      tr.appendChild(el('td', d.url || ('chat channel ' + d.chatappChannelId)));
      var state = el('td');
      state.appendChild(badge(d.enabled ? 'enabled' : 'disabled', d.enabled ? 'enabled' : 'disabled'));
      if (d.disabledReason) state.appendChild(el('div', d.disabledReason, 'muted'));
      tr.appendChild(state);
      var s = statsById[d.id];
      if (s) {
        tr.appendChild(windowCell(s.lastHour));
        tr.appendChild(windowCell(s.lastDay));
        tr.appendChild(windowCell(s.lastWeek));
        var p = s.lastWeek.attemptDurationMs;
        tr.appendChild(el('td', p.p50 === null ? 'no attempts' : p.p50 + ' ms / ' + p.p99 + ' ms'));
      } else {
        tr.appendChild(el('td', 'statistics unavailable', 'muted'));
        tr.appendChild(el('td'));
        tr.appendChild(el('td'));
        tr.appendChild(el('td'));
      }
      tr.addEventListener('click', function () { select(d.id); });
      tbody.appendChild(tr);
    });
  }

  function loadDestinations() {
    return api('GET', base() + '?limit=100').then(function (body) {
      destinations = body.data;
      return Promise.all(destinations.map(function (d) {
        return api('GET', base() + '/' + encodeURIComponent(d.id) + '/stats').then(function (r) { return r.data; }, function () { return null; });
      }));
    }).then(function (stats) {
      var byId = {};
      stats.forEach(function (s) { if (s) byId[s.destinationId] = s; });
      renderDestinations(byId);
      statusEl.textContent = destinations.length + ' destination(s)' + (destinations.length ? '; choose one to see its deliveries' : '');
    });
  }

  function attemptsTable(attempts) {
    var t = el('table', null, 'attempts');
    var head = el('tr');
    ['#', 'At', 'Code', 'Result', 'Duration', 'Error', ''].forEach(function (h) { head.appendChild(el('th', h)); });
    t.appendChild(head);
    attempts.forEach(function (a) {
      var tr = el('tr');
      tr.className = 'attempt';
      tr.setAttribute('data-attempt', String(a.attempt));
      tr.setAttribute('data-manual', String(a.manual === true));
      tr.appendChild(el('td', a.attempt));
      tr.appendChild(el('td', when(a.at)));
      tr.appendChild(el('td', a.statusCode === null ? '–' : a.statusCode));
      tr.appendChild(el('td', a.ok ? 'ok' : 'failed', a.ok ? '' : 'error'));
      tr.appendChild(el('td', a.durationMs + ' ms'));
      tr.appendChild(el('td', a.error || ''));
      tr.appendChild(el('td', a.manual ? 'manual' : '', 'muted'));
      t.appendChild(tr);
    });
    return t;
  }

  function deliveryRow(d) {
    var tr = el('tr');
    tr.className = 'delivery';
    tr.setAttribute('data-delivery-id', d.id);
    tr.setAttribute('data-status', d.status);
    tr.appendChild(el('td', when(d.createdAt)));
    tr.appendChild(el('td', d.eventType));
    tr.appendChild(el('td', d.runEventId || '', 'muted'));
    var st = el('td');
    st.appendChild(badge(d.status, d.status));
    tr.appendChild(st);
    var att = el('td');
    if (d.attempts.length) {
      var details = el('details');
      details.appendChild(el('summary', d.attemptCount + ' attempt(s)'));
      details.appendChild(attemptsTable(d.attempts));
      att.appendChild(details);
    } else {
      att.textContent = '0';
    }
    tr.appendChild(att);
    tr.appendChild(el('td', d.lastStatusCode === null ? '–' : d.lastStatusCode));
    tr.appendChild(el('td', d.lastError || '', 'error'));
    tr.appendChild(el('td', when(d.nextAttemptAt)));
    var actions = el('td');
    var button = el('button', 'Redeliver', 'redeliver');
    button.type = 'button';
    button.disabled = d.status === 'pending';
    button.title = d.status === 'pending' ? 'An attempt is already scheduled' : 'Send it again with the same webhook-id';
    button.addEventListener('click', function () { redeliver(d.id, button); });
    actions.appendChild(button);
    tr.appendChild(actions);
    return tr;
  }

  // Loads of the log can overlap (a filter change, the poll, a redeliver): only the last one started is shown, so an
  // answer read before a redelivery can never replace a newer one (and stop the polling while one is pending).
  var logSeq = 0;
  function loadLog() {
    if (!selected) return Promise.resolve();
    var q = new URLSearchParams({ limit: '50' });
    if (filterStatus) q.set('status', filterStatus);
    if (filterType) q.set('eventType', filterType);
    if (filterRunEvent) q.set('runEventId', filterRunEvent);
    var mine = ++logSeq;
    return api('GET', base() + '/' + encodeURIComponent(selected) + '/deliveries?' + q.toString()).then(function (body) {
      if (mine !== logSeq) return;
      var tbody = document.querySelector('#deliveries tbody');
      tbody.textContent = '';
      body.data.forEach(function (d) { tbody.appendChild(deliveryRow(d)); });
      var pending = body.data.some(function (d) { return d.status === 'pending'; });
      logStatusEl.textContent = body.pagination.total + ' deliveries' + (pending ? '; refreshing while some are pending' : '');
      root.setAttribute('data-state', 'ready');
      if (pollTimer) clearTimeout(pollTimer);
      pollTimer = pending ? setTimeout(function () { refresh(); }, 1000) : null;
    }).catch(function (err) {
      if (mine !== logSeq) return;
      logStatusEl.textContent = err.message;
      root.setAttribute('data-state', 'error');
    });
  }

  function refresh() {
    return loadDestinations().then(loadLog).catch(function (err) { fail(err.message); });
  }

  function fillTypes(d) {
    var sel = document.getElementById('filter-type');
    sel.textContent = '';
    var types = [''].concat(d.eventTypes, ['test']);
    if (filterType && types.indexOf(filterType) < 0) types.push(filterType);
    types.forEach(function (t) {
      var o = el('option', t || 'any');
      o.value = t;
      sel.appendChild(o);
    });
    sel.value = filterType;
  }

  function select(id) {
    var d = destinations.filter(function (x) { return x.id === id; })[0];
    if (!d) return;
    selected = id;
    keepParams();
    document.querySelectorAll('#destinations tbody tr').forEach(function (tr) {
      tr.setAttribute('aria-selected', String(tr.getAttribute('data-destination-id') === id));
    });
    document.getElementById('log').hidden = false;
    document.getElementById('log-title').textContent = 'Deliveries to ' + d.name;
    fillTypes(d);
    root.setAttribute('data-state', 'loading');
    loadLog();
  }

  function redeliver(id, button) {
    button.disabled = true;
    api('POST', base() + '/' + encodeURIComponent(selected) + '/deliveries/' + encodeURIComponent(id) + '/redeliver')
      .then(function () { logStatusEl.textContent = 'Delivery ' + id + ' queued again'; return loadLog(); })
      .catch(function (err) { logStatusEl.textContent = err.message; button.disabled = false; });
  }

  document.getElementById('filter-status').value = filterStatus;
  document.getElementById('filter-status').addEventListener('change', function (e) { filterStatus = e.target.value; keepParams(); loadLog(); });
  document.getElementById('filter-type').addEventListener('change', function (e) { filterType = e.target.value; keepParams(); loadLog(); });
  document.getElementById('filter-run-event').value = filterRunEvent;
  document.getElementById('filter-run-event').addEventListener('change', function (e) { filterRunEvent = e.target.value.trim(); keepParams(); loadLog(); });
  document.getElementById('recover').addEventListener('submit', function (e) {
    e.preventDefault();
    var since = document.getElementById('recover-since').value;
    var until = document.getElementById('recover-until').value;
    if (!since) return;
    var body = { since: new Date(since).toISOString() };
    if (until) body.until = new Date(until).toISOString();
    api('POST', base() + '/' + encodeURIComponent(selected) + '/recover', body)
      .then(function (r) {
        logStatusEl.textContent = r.data.scheduled + ' deliveries queued again' + (r.data.more ? ' (more remain: recover again)' : '');
        return loadLog();
      })
      .catch(function (err) { logStatusEl.textContent = err.message; });
  });

  if (!tenantId || !projectId) {
    fail('Add ?tenantId=…&projectId=… to the address.');
    return;
  }
  document.getElementById('scope').textContent = 'Tenant ' + tenantId + ', project ' + projectId;
  loadDestinations().then(function () {
    if (selected) select(selected);
    else root.setAttribute('data-state', 'ready');
  }).catch(function (err) { fail(err.message); });
})();
`;
