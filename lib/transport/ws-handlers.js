// The listeners every WebSocket way in hangs on its connections: created
// once per way in, reading the connection from `this`, so a connection
// costs no closures of its own. A frame or a pong is a sign of life for the
// keepalive wheel; the owner handles frames and the close.
import { Keepalive } from '../session/keepalive.js';
import { kTransport } from '../core/symbols.js';
import { handling } from './last-input.js';

/**
 * @param {{message: (ws, data, isBinary) => void, closed: (ws, code) => void}} owner
 * @param {import('pino').Logger} log
 * @param {string} [way] the way in, as the process-level handler names it (./last-input.js); by default the transport's name
 * @returns {(ws) => void} hangs the listeners on a new connection
 */
export function socketListeners(owner, log, way) {
  function onMessage(data, isBinary) {
    handling(way ?? this[kTransport].name, isBinary ? 'binary frame' : 'text frame');
    owner.message(this, data, isBinary);
  }
  function onPong() {
    Keepalive.alive(this);
  }
  function onClose(code) {
    owner.closed(this, code);
  }
  function onError(err) {
    log.debug({ err: err.message, code: err.code }, 'connection error');
  }
  return (ws) => {
    ws.on('message', onMessage);
    ws.on('pong', onPong);
    ws.on('close', onClose);
    ws.on('error', onError);
  };
}
