/**
 * The status page (`GET /_shardgate/ui`): one self-contained HTML document, no CDN, no build
 * step, no framework: its style and script are inline (allowed by a per-response CSP nonce) and
 * it draws its plots as SVG itself (page-script.ts). It reads `status` every 10 seconds; without
 * a key it shows what the public status carries (backend health, totals, series); given an access
 * key with the admin action in its form it signs the read with SigV4 in the browser (Web Crypto)
 * and shows every bucket too. The secret is never stored: the page keeps only the day's derived
 * signing key, in its memory (not sessionStorage, which an HTML object served from the same
 * origin could read); a reload or a new UTC day asks again.
 */
import { PAGE_SCRIPT } from './page-script.ts';

const STYLE = `
:root { --ok: #1a8f3c; --warn: #c98a00; --bad: #c62828; --unknown: #8a8f98; --ink: #1d2329; --muted: #5d6673; --line: #dde1e6; --bg: #f6f7f9; --card: #fff; --accent: #2f6fd6; --accent2: #d65f2f; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
header { display: flex; align-items: center; gap: 14px; padding: 12px 20px; background: #15191e; color: #fff; flex-wrap: wrap; }
header h1 { font-size: 18px; margin: 0; letter-spacing: .3px; }
header .sub { color: #aab3bf; font-size: 12px; }
header .spacer { flex: 1; }
header select, header button { font: inherit; font-size: 12px; padding: 4px 8px; border-radius: 4px; border: 1px solid #3a424c; background: #232a31; color: #fff; cursor: pointer; }
.pill { display: inline-block; padding: 2px 10px; border-radius: 999px; font-weight: 600; font-size: 12px; text-transform: uppercase; }
#checks { margin: 6px 0 0; padding-left: 18px; font-size: 13px; } #checks li.critical strong { color: var(--bad); } #checks li.warning strong { color: var(--warn); } #checks .action { color: #555; }
.pill.ok { background: var(--ok); } .pill.warning { background: var(--warn); } .pill.critical { background: var(--bad); } .pill.unknown { background: var(--unknown); }
main { padding: 16px 20px 40px; display: grid; gap: 16px; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); }
section { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; }
section.wide { grid-column: 1 / -1; }
h2 { font-size: 14px; margin: 0 0 10px; color: var(--muted); text-transform: uppercase; letter-spacing: .6px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.err { white-space: normal; color: var(--bad); font-size: 12px; max-width: 360px; }
.light { display: inline-block; width: 12px; height: 12px; border-radius: 50%; vertical-align: -1px; margin-right: 6px; box-shadow: 0 0 0 2px rgba(0,0,0,.06); }
.light.up { background: var(--ok); } .light.degraded { background: var(--warn); } .light.down { background: var(--bad); } .light.unknown { background: var(--unknown); }
tr[data-state="down"] td { background: #fdf1f1; }
#redundancy tr.warning td { background: #fff6e0; } #redundancy tr.critical td { background: #fdf1f1; color: var(--bad); }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(150px, 1fr)); gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.card .v { font-size: 20px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card .k { font-size: 12px; color: var(--muted); }
.card.alert .v { color: var(--bad); }
.bar { position: relative; height: 18px; background: #eceff3; border-radius: 4px; overflow: hidden; }
.bar > span { position: absolute; left: 0; top: 0; bottom: 0; background: var(--accent); }
.bar.rep > span { background: #9aa3ad; }
.bar.full > span { background: #c62828; }
.barrow { display: grid; grid-template-columns: 140px 1fr 150px; gap: 10px; align-items: center; margin: 6px 0; font-size: 13px; }
.barrow .label { overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.barrow .what { color: var(--muted); font-size: 12px; text-align: right; font-variant-numeric: tabular-nums; }
svg.chart { width: 100%; height: 180px; display: block; }
svg.chart text { font-size: 10px; fill: var(--muted); }
.legend { font-size: 12px; color: var(--muted); display: flex; gap: 14px; margin-top: 4px; }
.legend i { display: inline-block; width: 14px; height: 3px; vertical-align: middle; margin-right: 5px; }
.note { color: var(--muted); font-size: 12px; }
dialog { border: 1px solid var(--line); border-radius: 8px; padding: 16px 20px; }
dialog label { display: block; margin: 8px 0 2px; font-size: 12px; color: var(--muted); }
dialog input { font: inherit; width: 320px; padding: 5px 8px; }
dialog menu { display: flex; gap: 8px; justify-content: flex-end; padding: 0; margin: 14px 0 0; }
#error { color: var(--bad); font-size: 12px; }
.c-bad { background: var(--bad); } .c-warn { background: var(--warn); } .c-ok { background: var(--ok); } .c-accent { background: var(--accent); } .c-accent2 { background: var(--accent2); }
h2.spaced { margin-top: 14px; }
`;

const BODY = `
<header>
  <h1>shardgate</h1><span id="health" class="pill unknown">loading</span>
  <span class="sub" id="build"></span>
  <span class="sub" id="about"></span>
  <span class="spacer"></span>
  <span class="sub" id="updated"></span>
  <select id="hours" aria-label="history"><option value="1" selected>last hour</option><option value="6">last 6 hours</option><option value="24">last 24 hours</option></select>
  <button id="signin" type="button">sign in</button>
</header>
<main>
  <section class="wide"><h2>Backends</h2>
    <table id="backends"><thead><tr><th>backend</th><th>domain</th><th>state</th><th class="num">p50</th><th class="num">p99</th><th class="num">errors (5 min)</th><th class="num">requests (5 min)</th><th>last answer</th><th>last error</th><th class="num">stored</th><th class="num">shards</th></tr></thead><tbody></tbody></table>
    <p class="note" id="backends-note"></p>
    <ul id="checks"></ul>
  </section>
  <section class="wide"><h2>Data</h2><div class="cards" id="cards"></div><p id="error"></p></section>
  <section><h2>Degraded objects and repair backlog</h2><svg class="chart" id="chart-degraded" role="img" aria-label="degraded objects over time"></svg>
    <div class="legend"><span><i class="c-bad"></i>degraded objects</span><span><i class="c-warn"></i>repair backlog (units)</span></div></section>
  <section><h2>Throughput</h2><svg class="chart" id="chart-throughput" role="img" aria-label="bytes per minute"></svg>
    <div class="legend"><span><i class="c-accent"></i>S3 in per min</span><span><i class="c-accent2"></i>S3 out per min</span></div></section>
  <section><h2>Repairs and errors per minute</h2><svg class="chart" id="chart-repairs" role="img" aria-label="repairs per minute"></svg>
    <div class="legend"><span><i class="c-ok"></i>repairs done</span><span><i class="c-bad"></i>repairs failed</span><span><i class="c-warn"></i>backend errors</span></div></section>
  <section><h2>Scrub progress</h2><div id="scrub"></div><p class="note" id="scrub-note"></p></section>
  <section><h2>Bucket usage and quotas</h2><div id="usage"></div><p class="note">Per bucket (signed in): bytes over every version and the parts of uploads in flight, against its bytes quota when it has one (a bar); versions, delete markers, and a month of its shard files at the backends' storage prices. Quotas: docs/QUOTAS.md.</p></section>
  <section><h2>Redundancy by shards left</h2>
    <table id="redundancy"><thead><tr><th>bucket</th><th>policy</th><th>shards left</th><th class="num">units</th><th class="num">bytes</th></tr></thead><tbody></tbody></table>
    <p class="note">Every stored unit by the shards it still has (k+m: whole; k: one more loss loses it; below k: its objects cannot be read), and the object bytes in them. Repair brings units back up to whole.</p></section>
  <section><h2>Storage per backend</h2><div id="storage"></div><h2 class="spaced">Overhead against replication</h2><div id="overhead"></div></section>
</main>
<dialog id="signin-dialog"><form method="dialog" id="signin-form">
  <strong>Sign the status reads</strong>
  <p class="note">An access key of the gateway's config with the admin action. The secret is not kept: the page derives today's signing key, holds it in memory only and signs each read with SigV4 in the browser; a reload or a new day asks again.</p>
  <label for="akid">access key id</label><input id="akid" autocomplete="username" required>
  <label for="secret">secret access key</label><input id="secret" type="password" autocomplete="current-password" required>
  <label for="region">region</label><input id="region" value="us-east-1" required>
  <menu><button value="cancel" formnovalidate>cancel</button><button value="ok" id="signin-ok">sign in</button></menu>
</form></dialog>
`;

export function statusPage(nonce: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>shardgate status</title>
<style nonce="${nonce}">${STYLE}</style></head>
<body>${BODY}
<script nonce="${nonce}">${PAGE_SCRIPT}</script>
</body></html>`;
}
