// One measured run as the report holds it. A run that fell short of its
// target keeps its reason and loses its figures: a short run is never a figure.

/**
 * @param {object} run
 * @param {string} run.scenario e.g. 'idle'
 * @param {string} run.variant the server and its setting, e.g. 'gateway' or 'gateway gc 0'
 * @param {string} [run.short] why the run fell short; figures are then dropped
 * @param {object} run.figures named numbers
 * @param {object} [run.load] what the load generator saw
 */
export function runResult({ scenario, variant, size, short, figures, load }) {
  if (short !== undefined) return { scenario, variant, size, status: 'SHORT', short, load };
  return { scenario, variant, size, status: 'ok', figures: roundAll(figures), load };
}

/** The parts of a loadgen report worth keeping next to a figure. */
export function loadSummary(report) {
  const { target, open, failed, connectRate, handshakeMs, received, lost, outOfOrder, seqGaps, latencyMs, durationS, processes } = report;
  return { target, open, failed, connectRate, handshakeMs, received, lost, outOfOrder, seqGaps, latencyMs, durationS, processes };
}

function roundAll(figures) {
  const out = {};
  for (const [key, value] of Object.entries(figures)) out[key] = typeof value === 'number' ? Math.round(value * 100) / 100 : value;
  return out;
}
