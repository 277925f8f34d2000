// The input this worker began handling last: its way in and its kind, set
// synchronously where each input enters (a request, an upgrade, a frame, an
// admin call). No input should reach the process-level handler (every
// decoder answers bad input with an error of the family), so when one does
// it is a defect, and its log line names where to look. An exception thrown
// later in an input's asynchronous continuation is logged with whatever
// input began last: the log line says "last", not "this".

const MAX_KIND = 120; // a hostile path or method stays a short log field

export const lastInput = { way: 'none', kind: '' };

/**
 * @param {string} way 'http', 'upgrade', 'admin', or a WebSocket transport's name ('ws', 'ws-msgpack', 'pusher')
 * @param {string} kind what came in: 'POST /publish', 'text frame', …
 */
export function handling(way, kind) {
  lastInput.way = way;
  lastInput.kind = kind.length > MAX_KIND ? kind.slice(0, MAX_KIND) : kind;
}
