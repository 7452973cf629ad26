/**
 * The analytics view: a static page (nothing from the request is echoed into it) whose script reads
 * `tenantId`, `projectId`, `from`, `to`, `bucket` and `groupBy` from the address, fetches
 * `GET /manage/tenants/{tenantId}/projects/{projectId}/analytics/counts` with the browser session cookie and
 * plots the counts with Chart.js (served from the chart.js package, never a CDN).
 */
export const ANALYTICS_VIEW_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Analytics: ingested events</title>
<link rel="stylesheet" href="/analytics/assets/view.css">
<script src="/analytics/assets/chart.umd.min.js" defer></script>
<script src="/analytics/assets/view.js" defer></script>
</head>
<body>
<main id="analytics" data-state="loading">
  <h1>Ingested analytics events</h1>
  <p id="scope"></p>
  <form id="controls">
    <label>Bucket <select id="bucket" name="bucket"><option value="minute">minute</option><option value="hour">hour</option><option value="day">day</option></select></label>
    <label>Group by <select id="groupBy" name="groupBy"><option value="type">type</option><option value="entityType">entityType</option></select></label>
  </form>
  <p id="status" role="status">Loading…</p>
  <div class="chart"><canvas id="chart" role="img" aria-label="Event counts per bucket"></canvas></div>
</main>
</body>
</html>
`;

export const ANALYTICS_VIEW_CSS = `body { font-family: system-ui, sans-serif; margin: 0; background: #fafafa; color: #222; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 1.4rem; margin: 0 0 4px; }
#scope { color: #555; margin: 0 0 12px; }
form { display: flex; gap: 16px; margin-bottom: 8px; }
#status { min-height: 1.2em; }
main[data-state="error"] #status { color: #b00020; }
.chart { position: relative; height: 420px; background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 12px; }
`;

export const ANALYTICS_VIEW_JS = `(function () {
  'use strict';
  var root = document.getElementById('analytics');
  var statusEl = document.getElementById('status');
  var params = new URLSearchParams(window.location.search);
  var tenantId = params.get('tenantId');
  var projectId = params.get('projectId');
  var bucket = ['minute', 'hour', 'day'].indexOf(params.get('bucket')) >= 0 ? params.get('bucket') : 'hour';
  var groupBy = params.get('groupBy') === 'entityType' ? 'entityType' : 'type';
  var palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

  function fail(message) {
    root.setAttribute('data-state', 'error');
    statusEl.textContent = message;
  }

  function reloadWith(name, value) {
    params.set(name, value);
    window.location.search = params.toString();
  }

  document.getElementById('bucket').value = bucket;
  document.getElementById('groupBy').value = groupBy;
  document.getElementById('bucket').addEventListener('change', function (e) { reloadWith('bucket', e.target.value); });
  document.getElementById('groupBy').addEventListener('change', function (e) { reloadWith('groupBy', e.target.value); });

  if (!tenantId || !projectId) {
    fail('Add ?tenantId=…&projectId=… to the address.');
    return;
  }
  document.getElementById('scope').textContent = 'Tenant ' + tenantId + ', project ' + projectId;

  function label(iso) {
    return bucket === 'day' ? iso.slice(0, 10) : iso.slice(5, 16).replace('T', ' ');
  }

  function render(data) {
    var series = groupBy === 'entityType'
      ? data.byEntityType.map(function (s) { return { label: s.entityType, counts: s.counts }; })
      : data.byType.map(function (s) { return { label: s.type, counts: s.counts }; });
    var chart = new window.Chart(document.getElementById('chart'), {
      type: 'bar',
      data: {
        labels: data.buckets,
        datasets: series.map(function (s, i) {
          return { label: s.label, data: s.counts, backgroundColor: palette[i % palette.length] };
        }),
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, ticks: { callback: function (_v, i) { return label(data.buckets[i]); } } },
          y: { stacked: true, beginAtZero: true, ticks: { precision: 0 } },
        },
        plugins: { title: { display: true, text: 'Events per ' + data.bucket + ' by ' + groupBy + ' (UTC), ' + data.from + ' to ' + data.to } },
      },
    });
    statusEl.textContent = data.total + ' event(s)' + (data.truncated ? '; only the most frequent types are shown' : '');
    root.setAttribute('data-total', String(data.total));
    root.setAttribute('data-state', chart ? 'ready' : 'error');
  }

  var query = new URLSearchParams({ bucket: bucket });
  ['from', 'to'].forEach(function (k) { if (params.get(k)) query.set(k, params.get(k)); });
  var url = '/manage/tenants/' + encodeURIComponent(tenantId) + '/projects/' + encodeURIComponent(projectId) + '/analytics/counts?' + query.toString();
  fetch(url, { credentials: 'same-origin', headers: { accept: 'application/json' } })
    .then(function (res) {
      return res.json().then(function (body) { return { res: res, body: body }; });
    })
    .then(function (r) {
      if (!r.res.ok) {
        var hint = r.res.status === 401 ? ' Sign in first (POST /manage/auth/session sets the session cookie).' : '';
        fail(r.res.status + ' ' + (r.body.title || '') + ': ' + (r.body.detail || '') + hint);
        return;
      }
      if (!window.Chart) {
        fail('The chart library did not load.');
        return;
      }
      render(r.body.data);
    })
    .catch(function (err) { fail('Could not load the counts: ' + err.message); });
})();
`;
