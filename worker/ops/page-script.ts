/**
 * The status page's script (inlined by page.ts): reads /_shardgate/status every 10 s, signing the
 * read with SigV4 (Web Crypto) when a key was given in the page's form (issue 21: the secret is
 * not kept; only today's derived signing key, in memory), and renders the backends
 * table, the cards, three SVG line charts, the scrub bars and the storage bars. Plain ES2017, no
 * library. Data is only ever inserted as text (textContent), never as HTML. After each render the
 * body carries data-rendered (a count) and data-signed, for tests and for people reading the DOM.
 * The SigV4 steps are the gate's own (auth/sigv4.ts `sigv4Steps`, a self-contained function whose
 * source is embedded here): one signer, not a copy. The rest is written without backticks or
 * template placeholders: it is one template string in TypeScript.
 */
import { sigv4Steps } from '../auth/sigv4.ts';

// A bundler that keeps function names (wrangler's esbuild does) wraps functions in `__name(...)`
// calls that refer to a helper of the bundle: the page has its own, which does nothing.
const SIGNER = `  var __name = function (fn) { return fn; };
  var sigv4 = (${String(sigv4Steps)})();
`;

export const PAGE_SCRIPT =
  `
(function () {
  'use strict';
${SIGNER}` +
  String.raw`
  var $ = function (id) { return document.getElementById(id); };
  var SVG = 'http://www.w3.org/2000/svg';
  var renders = 0;
  var lastDoc = null;

  function el(tag, props, kids) {
    var e = document.createElement(tag);
    for (var k in (props || {})) {
      if (k === 'text') e.textContent = props[k];
      else if (k === 'cls') e.className = props[k];
      else e.setAttribute(k, props[k]);
    }
    (kids || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    return e;
  }
  function bytes(n) {
    if (n === null || n === undefined) return '-';
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'], i = 0;
    while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i === 0 ? String(Math.round(n)) : n.toFixed(1)) + ' ' + u[i];
  }
  function ago(t, now) {
    if (t === null || t === undefined) return 'never';
    var s = Math.max(0, Math.round((now - t) / 1000));
    if (s < 120) return s + ' s ago';
    if (s < 7200) return Math.round(s / 60) + ' min ago';
    return Math.round(s / 3600) + ' h ago';
  }
  function pct(r) { return r === null || r === undefined ? '-' : (r * 100).toFixed(r > 0 && r < 0.1 ? 1 : 0) + '%'; }
  function ms(v) { return v === null || v === undefined ? '-' : (v < 10 ? v.toFixed(1) : String(Math.round(v))) + ' ms'; }
  function clock(t) { return new Date(t).toTimeString().slice(0, 5); }
  function duration(s) {
    if (s < 120) return s + ' s';
    if (s < 7200) return Math.round(s / 60) + ' min';
    if (s < 172800) return Math.round(s / 3600) + ' h';
    return Math.round(s / 86400) + ' days';
  }

  // ---- SigV4 in the browser with the gate's own steps (sigv4, above), for GET requests with an
  // empty body.
  // The secret is never kept: sign-in derives the SigV4 signing key of today (valid for one UTC
  // day, one region, S3 only) and keeps that in this page's memory, nowhere else (no storage an
  // object served from this origin could read). A new day, a reload or "sign out" forgets it.
  var session = null;
  function signIn(akid, secret, region) {
    var day = new Date().toISOString().slice(0, 10).replace(/-/g, '');
    return sigv4.deriveSigningKey(secret, day, region, 's3').then(sigv4.importSigningKey)
      .then(function (k) { session = { akid: akid, region: region, day: day, key: k }; });
  }
  function signedHeaders(path, query, creds) {
    var amzDate = new Date().toISOString().replace(/[:-]|\.\d{3}/g, '');
    var day = amzDate.slice(0, 8);
    if (day !== creds.day) { session = null; return Promise.reject(new Error('the sign-in of ' + creds.day + ' has expired: sign in again')); }
    var signed = ['host', 'x-amz-content-sha256', 'x-amz-date'];
    var values = { host: location.host, 'x-amz-content-sha256': sigv4.EMPTY_SHA256, 'x-amz-date': amzDate };
    var qs = sigv4.canonicalQuery(Object.keys(query).map(function (k) { return [k, query[k]]; }));
    var canonical = sigv4.canonicalRequest('GET', path, qs, sigv4.canonicalHeaders(signed, function (n) { return values[n]; }), signed.join(';'), sigv4.EMPTY_SHA256);
    var scope = sigv4.credentialScope(day, creds.region, 's3');
    return sigv4.stringToSign(amzDate, scope, canonical)
      .then(function (toSign) { return sigv4.signature(creds.key, toSign); })
      .then(function (sig) {
        return { 'x-amz-date': amzDate, 'x-amz-content-sha256': sigv4.EMPTY_SHA256,
          authorization: sigv4.ALGORITHM + ' Credential=' + creds.akid + '/' + scope + ', SignedHeaders=' + signed.join(';') + ', Signature=' + sig };
      });
  }
  function creds() { return session; }

  function load() {
    var query = { hours: $('hours').value };
    var key = creds();
    var path = '/_shardgate/status';
    var url = path + '?hours=' + encodeURIComponent(query.hours);
    var headers = key ? signedHeaders(path, query, key) : Promise.resolve({});
    return headers.then(function (h) { return fetch(url, { headers: h, cache: 'no-store' }); })
      .then(function (res) {
        return res.json().then(function (body) {
          if (!res.ok) throw new Error((body.code || res.status) + ': ' + (body.message || ''));
          return body;
        });
      })
      .then(function (doc) { $('error').textContent = ''; lastDoc = doc; render(doc); })
      .catch(function (err) {
        $('error').textContent = 'could not read the status: ' + err.message;
        document.body.dataset.error = err.message;
      });
  }

  function render(doc) {
    var now = doc.now;
    var h = $('health');
    h.className = 'pill ' + doc.health;
    h.textContent = doc.health;
    var policies = Object.keys(doc.policies).map(function (n) { var p = doc.policies[n]; return n + ' ' + (p.codec === 'replica' ? (p.k + p.m) + ' copies' : p.k + '+' + p.m); });
    $('build').textContent = 'v' + doc.version + ' \u00b7 up ' + duration(doc.isolate.uptimeSeconds) + ' (this isolate)';
    $('about').textContent = 'coder ' + doc.coder.kernel + ' \u00b7 ' + policies.join(', ') + ' \u00b7 ' + (doc.signed ? 'signed' : 'public view: sign in for buckets and errors');
    $('updated').textContent = 'updated ' + new Date(now).toLocaleTimeString();
    $('signin').textContent = creds() ? 'sign out' : 'sign in';
    renderBackends(doc, now);
    renderCards(doc);
    renderCharts(doc);
    renderScrub(doc, now);
    renderUsage(doc);
    renderStorage(doc);
    renderRedundancy(doc);
    renders++;
    document.body.dataset.signed = String(doc.signed);
    document.body.dataset.rendered = String(renders);
  }

  function renderBackends(doc, now) {
    var tbody = $('backends').tBodies[0];
    tbody.textContent = '';
    doc.backends.forEach(function (b) {
      var lastError = b.lastErrorAt === null ? '' : (b.lastError || b.lastErrorKind || 'error') + ' (' + ago(b.lastErrorAt, now) + ')';
      var tr = el('tr', { 'data-backend': b.id, 'data-state': b.state }, [
        el('td', {}, [el('span', { cls: 'light ' + b.state, title: b.state }), el('span', { text: b.id })]),
        el('td', { text: b.domain }),
        el('td', { cls: 'state', text: b.state + (b.maintenance ? ' (maintenance)' : '') + (b.probe ? (b.probe.ok ? '' : ' (probe failed)') : '') }),
        el('td', { cls: 'num', text: ms(b.recent.latencyMs.p50) }),
        el('td', { cls: 'num', text: ms(b.recent.latencyMs.p99) }),
        el('td', { cls: 'num', text: pct(b.recent.errorRate) }),
        el('td', { cls: 'num', text: String(b.recent.requests) }),
        el('td', { text: ago(b.lastOkAt, now) }),
        el('td', { cls: 'err', text: lastError }),
        el('td', { cls: 'num', text: bytes(b.storedBytes) }),
        el('td', { cls: 'num', text: String(b.storedShards) }),
      ]);
      tbody.appendChild(tr);
    });
    var down = doc.backends.filter(function (b) { return b.state === 'down' && !b.maintenance; }).length;
    var checks = doc.checks || [];
    var noWrites = checks.filter(function (c) { return c.name.indexOf('writes:') === 0 && c.state === 'critical'; });
    $('backends-note').textContent = !down ? 'Latency: time to the first byte of reads over the last 5 minutes (any call when there were no reads).'
      : noWrites.length ? down + ' backend(s) down: reads decode around them where they can; writes of ' + noWrites.map(function (c) { return c.name.slice(7); }).join(', ') + ' are refused (too few backends for the write quorum).'
      : down + ' backend(s) down: reads decode around them; new writes miss their shards and are repaired when they return.';
    var list = $('checks');
    list.textContent = '';
    checks.filter(function (c) { return c.state !== 'ok'; }).forEach(function (c) {
      list.appendChild(el('li', { cls: 'check ' + c.state, 'data-check': c.name, 'data-state': c.state }, [
        el('strong', { text: c.state + ' \u00b7 ' + c.name + ': ' }), el('span', { text: c.detail }),
        c.action ? el('div', { cls: 'action', text: 'what to do: ' + c.action }) : null,
      ]));
    });
  }

  function card(k, v, alert, name) {
    return el('div', { cls: 'card' + (alert ? ' alert' : ''), 'data-card': name }, [el('div', { cls: 'v', text: v }), el('div', { cls: 'k', text: k })]);
  }
  function renderCards(doc) {
    var d = doc.data, u = doc.upkeep, c = $('cards');
    c.textContent = '';
    [
      card('objects in ' + d.buckets + ' bucket(s)', String(d.objects), false, 'objects'),
      card('data stored', bytes(d.bytes), false, 'bytes'),
      card('on the backends', bytes(d.storedBytes), false, 'stored'),
      card('overhead (' + d.replicationOverhead + ' replicas: ' + d.replicationOverhead.toFixed(2) + 'x)', d.overhead === null ? '-' : d.overhead.toFixed(2) + 'x', false, 'overhead'),
      card('degraded objects', String(d.degradedObjects), d.degradedObjects > 0, 'degraded'),
      card('units at exactly k shards, ' + bytes((d.redundancy && d.redundancy.atRiskBytes) || 0) + ' (below k: ' + ((d.redundancy && d.redundancy.lost) || 0) + ', ' + bytes((d.redundancy && d.redundancy.lostBytes) || 0) + ')', String((d.redundancy && d.redundancy.atRisk) || 0), !!(d.redundancy && (d.redundancy.atRisk || d.redundancy.lost)), 'redundancy'),
      card('repair backlog (units; ' + d.missingShards + ' shards' + (d.repairStuck ? ', ' + d.repairStuck + ' stuck' : '') + (u.rates && d.degradedUnits > 0 ? '; ' + u.rates.repairUnitsPerMinute + '/min, ' + (u.rates.repairSecondsLeft === null ? 'no progress in 5 min' : '~' + Math.ceil(u.rates.repairSecondsLeft / 60) + ' min left') : '') + ')', String(d.degradedUnits), d.degradedUnits > 0, 'backlog'),
      card('repairs done / failed', u.repairsDone + ' / ' + u.repairsFailed, false, 'repairs'),
      card('collector backlog (due of ' + d.garbage.queued + ')', String(d.garbage.due), false, 'garbage'),
      card('orphaned reservations', String(d.reservations.expired), d.reservations.expired > 0, 'orphans'),
      card('uploads in progress', String(d.uploads), false, 'uploads'),
      // The lifecycle job, once it has run in a bucket: what its last complete passes removed.
      d.lifecycle && d.lifecycle.buckets ? card('lifecycle: expired / noncurrent / markers / uploads (last passes' + (d.lifecycle.lastPasses.failed ? ', ' + d.lifecycle.lastPasses.failed + ' failed' : '') + ', run ' + ago(d.lifecycle.lastRunAt, Date.now()) + ')',
        d.lifecycle.lastPasses.expired + ' / ' + d.lifecycle.lastPasses.noncurrentDeleted + ' / ' + d.lifecycle.lastPasses.markersRemoved + ' / ' + d.lifecycle.lastPasses.uploadsAborted, d.lifecycle.lastPasses.failed > 0, 'lifecycle') : null,
      // The re-stripe, while some bucket's versions are not all as its policy says.
      d.restripe && (d.restripe.buckets || d.restripe.leftUnits) ? card('re-stripe: units left in ' + d.restripe.buckets + ' bucket(s), ' + bytes(d.restripe.leftBytes) + (d.restripe.bytesPerSecond === null ? '' : '; ' + bytes(d.restripe.bytesPerSecond) + '/s') + (d.restripe.secondsRemaining === null ? '' : ', ~' + Math.ceil(d.restripe.secondsRemaining / 60) + ' min left') + ')',
        String(d.restripe.leftUnits), false, 'restripe') : null,
      // Adopted buckets (issue 41): how far their moves from their sources are, and what they cost.
      d.adopt ? card('adoption: moves complete of ' + d.adopt.buckets + ' bucket(s) with a source (' + d.adopt.adoptedObjects + ' objects, ' + bytes(d.adopt.adoptedBytes) + ' adopted; egress ' + bytes(d.adopt.egressBytes) + (d.adopt.egressCost === null ? '' : ' $' + d.adopt.egressCost.toFixed(2)) + (d.adopt.bytesPerSecond === null ? '' : '; ' + bytes(d.adopt.bytesPerSecond) + '/s') + (d.adopt.secondsRemaining ? ', ~' + Math.ceil(d.adopt.secondsRemaining / 60) + ' min left' : '') + ')',
        d.adopt.complete + ' / ' + d.adopt.buckets, false, 'adopt') : null,
      card('S3 requests (5xx)', doc.s3.requests + ' (' + doc.s3.errors + ')', false, 's3'),
    ].concat(classCards(d.classes || {}), eventCards(doc.buckets || [])).forEach(function (x) { if (x) c.appendChild(x); });
  }
  /** Event notifications (signed view), once some bucket queued an event: summed over buckets and destinations. */
  function eventCards(buckets) {
    var t = { backlog: 0, delivered: 0, retried: 0, dead: 0, dropped: 0, oldest: null }, any = false;
    buckets.forEach(function (b) {
      (b.events || []).forEach(function (e) {
        any = true;
        t.backlog += e.backlog; t.delivered += e.delivered; t.retried += e.retried; t.dead += e.deadLettered; t.dropped += e.dropped;
        if (e.oldestUndeliveredMs !== null && (t.oldest === null || e.oldestUndeliveredMs > t.oldest)) t.oldest = e.oldestUndeliveredMs;
      });
    });
    if (!any) return [];
    return [card('events waiting (delivered ' + t.delivered + ', retried ' + t.retried + ', dead ' + t.dead + ', dropped ' + t.dropped + (t.oldest === null ? '' : '; oldest ' + Math.round(t.oldest / 1000) + ' s') + ')',
      String(t.backlog), t.dead > 0 || t.dropped > 0, 'events')];
  }
  /** Bytes per storage class, once some version is of a class other than STANDARD. */
  function classCards(classes) {
    var names = Object.keys(classes).sort();
    if (!names.length || (names.length === 1 && names[0] === 'STANDARD')) return [];
    return names.map(function (n) {
      var x = classes[n];
      return card('class ' + n + ': ' + x.objects + ' version(s), ' + bytes(x.storedBytes) + ' on the backends', bytes(x.bytes), false, 'class-' + n);
    });
  }

  /** One line chart: series of [t, v] points over [from, to]. */
  function chart(id, from, to, series, fmt) {
    var s = $(id), W = 600, H = 180, L = 56, R = 8, T = 10, B = 20;
    s.textContent = '';
    s.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    s.setAttribute('preserveAspectRatio', 'none');
    var max = 0;
    series.forEach(function (x) { x.points.forEach(function (p) { if (p[1] > max) max = p[1]; }); });
    if (max <= 0) max = 1;
    var X = function (t) { return L + (W - L - R) * (to > from ? (t - from) / (to - from) : 1); };
    var Y = function (v) { return T + (H - T - B) * (1 - v / max); };
    s.appendChild(svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#c9ced6' }));
    s.appendChild(svg('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#c9ced6' }));
    s.appendChild(svg('line', { x1: L, y1: T, x2: W - R, y2: T, stroke: '#eef0f3' }));
    var label = function (x, y, text, anchor) { var t = svg('text', { x: x, y: y, 'text-anchor': anchor }); t.textContent = text; s.appendChild(t); };
    label(L - 4, T + 8, fmt(max), 'end');
    label(L - 4, H - B, fmt(0), 'end');
    label(L, H - 6, clock(from), 'start');
    label(W - R, H - 6, clock(to) + ' (now)', 'end');
    series.forEach(function (x) {
      var pts = x.points.map(function (p) { return X(p[0]).toFixed(1) + ',' + Y(p[1]).toFixed(1); });
      if (pts.length === 1) pts.push((W - R) + ',' + Y(x.points[0][1]).toFixed(1));
      s.appendChild(svg('polyline', { points: pts.join(' '), fill: 'none', stroke: x.color, 'stroke-width': 2, 'data-series': x.name, 'data-last': String(x.points.length ? x.points[x.points.length - 1][1] : '') }));
    });
  }

  /** Per-minute values from the chart's start to now, zero for minutes without traffic. */
  function minutes(doc, from, f) {
    var byAt = {};
    doc.series.minutes.forEach(function (m) { byAt[m.at] = m; });
    var out = [], step = doc.series.stepMs, start = Math.floor(from / step) * step;
    for (var t = start; t <= doc.now; t += step) out.push([t + step / 2, byAt[t] ? f(byAt[t]) : 0]);
    return out;
  }

  /**
   * Where the charts start: the chosen window's start, or the oldest data present when it is
   * younger (a gateway started minutes ago, or a record that began recently), so a fresh incident
   * spreads over the chart instead of being squashed into its right edge. At least MIN_SPAN_MS.
   */
  var MIN_SPAN_MS = 10 * 60000;
  function chartStart(doc) {
    var oldest = doc.now;
    doc.series.samples.forEach(function (p) { if (p.at < oldest) oldest = p.at; });
    doc.series.minutes.forEach(function (m) { if (m.at < oldest) oldest = m.at; });
    return Math.max(doc.series.from, Math.min(oldest, doc.now - MIN_SPAN_MS));
  }

  function renderCharts(doc) {
    var from = chartStart(doc), to = doc.now;
    var samples = doc.series.samples;
    document.body.dataset.chartFrom = String(from);
    chart('chart-degraded', from, to, [
      { name: 'degraded-objects', color: '#c62828', points: samples.map(function (p) { return [p.at, p.degradedObjects]; }) },
      { name: 'repair-backlog', color: '#c98a00', points: samples.map(function (p) { return [p.at, p.degradedUnits]; }) },
    ], function (v) { return String(Math.round(v)); });
    chart('chart-throughput', from, to, [
      { name: 's3-in', color: '#2f6fd6', points: minutes(doc, from, function (m) { return m.s3BytesIn; }) },
      { name: 's3-out', color: '#d65f2f', points: minutes(doc, from, function (m) { return m.s3BytesOut; }) },
    ], bytes);
    chart('chart-repairs', from, to, [
      { name: 'repairs-done', color: '#1a8f3c', points: minutes(doc, from, function (m) { return m.repairsDone; }) },
      { name: 'repairs-failed', color: '#c62828', points: minutes(doc, from, function (m) { return m.repairsFailed; }) },
      { name: 'backend-errors', color: '#c98a00', points: minutes(doc, from, function (m) { return m.backendErrors; }) },
    ], function (v) { return String(Math.round(v)); });
  }

  function barRow(label, ratio, what, attrs, cls) {
    var fill = el('span');
    fill.style.width = Math.max(0, Math.min(100, ratio * 100)).toFixed(1) + '%';
    return el('div', Object.assign({ cls: 'barrow' }, attrs || {}), [el('div', { cls: 'label', text: label, title: label }), el('div', { cls: 'bar' + (cls ? ' ' + cls : '') }, [fill]), el('div', { cls: 'what', text: what })]);
  }

  function renderScrub(doc, now) {
    var box = $('scrub');
    box.textContent = '';
    if (doc.buckets) {
      doc.buckets.forEach(function (b) {
        var cov = b.scrubCoverage === null ? 0 : b.scrubCoverage;
        var what = b.scrub.checked + ' / ' + b.scrub.units + ' units \u00b7 last pass ' + ago(b.scrub.lastPassCompletedAt, now);
        box.appendChild(barRow(b.bucket, cov, what, { 'data-bucket': b.bucket, 'data-coverage': String(cov) }));
      });
      if (!doc.buckets.length) box.appendChild(el('p', { cls: 'note', text: 'no buckets yet' }));
    } else {
      var s = doc.data.scrub;
      box.appendChild(barRow('all buckets', s.coverage || 0, s.checked + ' / ' + s.units + ' units', { 'data-bucket': '*' }));
    }
    var sc = doc.data.scrub;
    $('scrub-note').textContent = 'Mode ' + sc.mode + '. A bar counts the units checked whole in the current pass (between passes: the last one) of all units stored; units written since are unchecked. Oldest unchecked: ' + (sc.oldestUnchecked ? (sc.oldestUnchecked.key === undefined ? '' : sc.oldestUnchecked.bucket + '/' + sc.oldestUnchecked.key + ' ') + 'since ' + ago(sc.oldestUnchecked.since, now) : '-') + '; last complete pass (oldest of all buckets): ' + ago(sc.oldestPassCompletedAt, now) + '.';
  }

  /** Each bucket's usage, and its quota as a bar when it has one (catalog/quota.ts); signed views only. */
  function renderUsage(doc) {
    var box = $('usage');
    box.textContent = '';
    if (!doc.buckets) { box.appendChild(el('p', { cls: 'note', text: 'sign in to see the buckets' })); return; }
    if (!doc.buckets.length) { box.appendChild(el('p', { cls: 'note', text: 'no buckets yet' })); return; }
    doc.buckets.forEach(function (b) {
      var q = b.quota, used = q ? q.usedBytes : b.bytes + (b.multipartBytes || 0);
      var limit = q && q.bytes !== null ? q.bytes : null;
      var what = bytes(used) + (limit === null ? '' : ' of ' + bytes(limit)) +
        (q && q.objects !== null ? ' \u00b7 ' + q.usedObjects + ' of ' + q.objects + ' objects' : ' \u00b7 ' + b.objects + ' objects') +
        (b.versions === undefined ? '' : ' \u00b7 ' + b.versions + ' versions, ' + b.deleteMarkers + ' markers') +
        (b.monthlyStorageCost === undefined || b.monthlyStorageCost === null ? '' : ' \u00b7 ~$' + b.monthlyStorageCost.toFixed(2) + '/month') +
        (b.clientTraffic ? ' \u00b7 ' + b.clientTraffic.requests + ' requests, ' + bytes(b.clientTraffic.bytesOut) + ' egress' : '');
      var ratio = limit === null ? 0 : limit === 0 ? 1 : used / limit;
      box.appendChild(barRow(b.bucket, ratio, what, { 'data-usage': b.bucket, 'data-quota-ratio': limit === null ? '' : ratio.toFixed(3) }, ratio >= 1 ? 'full' : ''));
    });
  }

  function renderStorage(doc) {
    var box = $('storage'), max = 0;
    box.textContent = '';
    doc.backends.forEach(function (b) { if (b.storedBytes > max) max = b.storedBytes; });
    doc.backends.forEach(function (b) {
      box.appendChild(barRow(b.id, max ? b.storedBytes / max : 0, bytes(b.storedBytes) + ' \u00b7 ' + b.storedShards + ' shards', { 'data-storage': b.id }));
    });
    var o = $('overhead'), d = doc.data;
    o.textContent = '';
    var rep = d.replicationOverhead;
    o.appendChild(barRow('this gateway', d.overhead === null ? 0 : d.overhead / rep, d.overhead === null ? 'nothing stored' : d.overhead.toFixed(2) + 'x \u00b7 ' + bytes(d.storedBytes), { 'data-overhead': d.overhead === null ? '' : d.overhead.toFixed(3) }));
    o.appendChild(barRow(rep + ' replicas', 1, rep.toFixed(2) + 'x \u00b7 ' + bytes((d.bytes - d.inlineBytes) * rep), {}, 'rep'));
  }

  /**
   * Every unit and its bytes per policy (k+m) by shards left, from whole down to below k: the
   * gateway's, then each bucket's when signed (catalog/redundancy.ts). A rung at exactly k with
   * units is a warning (one more loss loses them), below k with units is data lost.
   */
  function renderRedundancy(doc) {
    var tbody = $('redundancy').querySelector('tbody');
    tbody.textContent = '';
    var scopes = [['all buckets', '*', (doc.data.redundancy && doc.data.redundancy.byPolicy) || {}]];
    (doc.buckets || []).forEach(function (b) { scopes.push([b.bucket, b.bucket, (b.redundancy && b.redundancy.byPolicy) || {}]); });
    scopes.forEach(function (scope) {
      Object.keys(scope[2]).sort().forEach(function (name) {
        var p = scope[2][name];
        var rungs = p.byShardsLeft.map(function (r) { return { left: String(r.shardsLeft), label: r.shardsLeft + (r.shardsLeft === p.k + p.m ? ' (whole)' : r.shardsLeft === p.k ? ' (exactly k)' : ''), units: r.units, bytes: r.bytes }; });
        rungs.push({ left: 'below_k', label: 'below k (lost)', units: p.belowK.units, bytes: p.belowK.bytes });
        rungs.forEach(function (r) {
          var state = !r.units ? '' : r.left === 'below_k' ? 'critical' : Number(r.left) === p.k && p.m > 0 ? 'warning' : '';
          tbody.appendChild(el('tr', { 'data-scope': scope[1], 'data-policy': name, 'data-left': r.left, 'data-units': String(r.units), 'data-bytes': String(r.bytes), cls: state }, [
            el('td', { text: scope[0] }), el('td', { text: name }), el('td', { text: r.label }),
            el('td', { cls: 'num', text: String(r.units) }), el('td', { cls: 'num', text: bytes(r.bytes) }),
          ]));
        });
      });
    });
    if (!tbody.children.length) tbody.appendChild(el('tr', {}, [el('td', { text: 'no units stored yet', colspan: '5' })]));
  }

  $('hours').addEventListener('change', load);
  $('signin').addEventListener('click', function () {
    if (creds()) { session = null; load(); return; }
    $('signin-dialog').showModal();
  });
  $('signin-dialog').addEventListener('close', function () {
    if ($('signin-dialog').returnValue !== 'ok') return;
    var secret = $('secret').value;
    $('secret').value = '';
    signIn($('akid').value.trim(), secret, $('region').value.trim() || 'us-east-1').then(load);
  });
  load();
  setInterval(load, 10000);
})();
`;
