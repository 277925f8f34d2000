// One HTML page with inline SVG charts (no script, no CDN): connections, RSS
// and heap per worker, event-loop delay and message rate over time. Lines are
// per worker slot, so a killed worker's successor continues its slot's line.
const W = 900;
const H = 220;
const PAD = { left: 70, right: 20, top: 28, bottom: 30 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
const MiB = 1048576;

/** @param {object[]} samples the JSON lines; @param {object} summary for the heading */
export function plotHtml(samples, summary) {
  const slots = [...new Set(samples.flatMap((s) => s.workers.map((w) => w.worker)))].sort((a, b) => a - b);
  const perWorker = (field, scale = 1) =>
    slots.map((slot, i) => ({
      label: `worker ${slot}`,
      color: i,
      points: samples.flatMap((s) => s.workers.filter((w) => w.worker === slot && w[field] !== null).map((w) => [s.t, w[field] / scale]))
    }));
  const charts = [
    chart('Connections per worker', perWorker('connections')),
    chart('RSS per worker (MiB)', perWorker('rssBytes', MiB)),
    chart('Heap used per worker (MiB)', perWorker('heapUsedBytes', MiB)),
    chart('Event-loop delay, worst per sample (ms)', [
      ...perWorker('loopMaxMs').map((s) => ({ ...s, label: `${s.label} max` })),
      ...perWorker('loopP99Ms').map((s) => ({ ...s, label: `${s.label} p99`, dashed: true }))
    ]),
    chart('Messages per second', [
      { label: 'published', points: samples.map((s) => [s.t, s.rates.publishedPerSec]) },
      { label: 'delivered', points: samples.map((s) => [s.t, s.rates.deliveredPerSec]) }
    ]),
    chart('Primary (MiB) and channels (÷100)', [
      { label: 'RSS', points: samples.map((s) => [s.t, s.primary.rssBytes / MiB]) },
      { label: 'heap', points: samples.map((s) => [s.t, s.primary.heapUsedBytes / MiB]) },
      { label: 'channels ÷100', points: samples.map((s) => [s.t, (s.primary.channels ?? 0) / 100]) }
    ])
  ];
  const verdict = summary.verdict.ok ? 'PASS' : `FAIL: ${escape(summary.verdict.failed.join('; '))}`;
  return `<!doctype html><html><head><meta charset="utf-8"><title>soak ${escape(summary.startedAt)}</title>
<style>body{font:14px sans-serif;margin:20px}svg{display:block;margin-bottom:12px}text{font:11px sans-serif}</style></head><body>
<h1>Soak ${escape(summary.startedAt)}: ${verdict}</h1>
<p>${escape(summary.line)}</p>
${charts.join('\n')}
</body></html>
`;
}

function chart(title, series) {
  const all = series.flatMap((s) => s.points);
  const tMax = Math.max(1, ...all.map((p) => p[0]));
  const yMax = niceMax(Math.max(0, ...all.map((p) => p[1])));
  const x = (t) => PAD.left + (t / tMax) * (W - PAD.left - PAD.right);
  const y = (v) => H - PAD.bottom - (v / yMax) * (H - PAD.top - PAD.bottom);
  const lines = series.map((s, i) => {
    const d = s.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    const color = COLORS[(s.color ?? i) % COLORS.length];
    return `<polyline fill="none" stroke="${color}" stroke-width="1.5"${s.dashed ? ' stroke-dasharray="4 3"' : ''} points="${d}"><title>${escape(s.label)}</title></polyline>`;
  });
  const legend = series.map((s, i) => `<tspan fill="${COLORS[(s.color ?? i) % COLORS.length]}">${escape(s.label)}  </tspan>`).join('');
  const ticks = [0, 0.5, 1].map((f) => `<text x="${PAD.left - 6}" y="${y(yMax * f) + 4}" text-anchor="end">${round(yMax * f)}</text>`).join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}">
<text x="${PAD.left}" y="16" font-weight="bold">${escape(title)}</text><text x="${W - PAD.right}" y="16" text-anchor="end">${legend}</text>
<rect x="${PAD.left}" y="${PAD.top}" width="${W - PAD.left - PAD.right}" height="${H - PAD.top - PAD.bottom}" fill="none" stroke="#ccc"/>
${ticks}<text x="${PAD.left}" y="${H - 8}">0 s</text><text x="${W - PAD.right}" y="${H - 8}" text-anchor="end">${round(tMax)} s</text>
${lines.join('\n')}
</svg>`;
}

function niceMax(v) {
  if (v <= 0) return 1;
  const step = 10 ** Math.floor(Math.log10(v));
  return Math.ceil(v / step) * step;
}

function round(v) {
  return Math.round(v * 10) / 10;
}

function escape(s) {
  return String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
}
