// Reads V8's --trace-gc lines (one per collection, on the process's stdout):
//   [pid:0x...]   1234 ms: Mark-Compact 88.4 (120.1) -> 63.2 (96.9) MB, 72.54 / 0.00 ms  (...) testing; ...
// The first duration is the pause the main thread took. `testing` is the
// reason V8 gives to a collection asked for by gc(), so it marks the manual
// ones the gateway runs.
const LINE = /^\[(\d+):0x[0-9a-f]+\]\s+[\d.]+ ms: ([A-Za-z-]+).*?MB, ([\d.]+) \/ [\d.]+ ms.*?(testing)?;/;

/**
 * @param {string[]} lines
 * @param {(pid: number) => boolean} keep which processes count
 * @returns {{manual: number[], automatic: number[]}} pauses in ms
 */
export function gcPauses(lines, keep) {
  const out = { manual: [], automatic: [] };
  for (const line of lines) {
    const m = LINE.exec(line);
    if (m === null || !keep(Number(m[1]))) continue;
    (m[4] ? out.manual : out.automatic).push(Number(m[3]));
  }
  return out;
}

/**
 * Collections the server's workers (or, without workers, the server itself)
 * make from now on; the server must run with --trace-gc.
 * @returns {() => {manual: number[], automatic: number[]}} the pauses so far
 */
export function watchGc(server) {
  const from = server.lines.length;
  return () => gcPauses(server.lines.slice(from), (pid) => server.kind === 'ws' || pid !== server.pid);
}
