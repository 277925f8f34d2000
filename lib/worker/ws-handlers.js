// The listeners every WebSocket way in hangs on its connections: created
// once per way in, reading the connection from `this`, so a connection
// costs no closures of its own. A frame or a pong is a sign of life for the
// keepalive wheel; the owner handles frames and the close.
import { Keepalive } from './keepalive.js';

/**
 * @param {{message: (ws, data, isBinary) => void, closed: (ws, code) => void}} owner
 * @param {import('pino').Logger} log
 * @returns {(ws) => void} hangs the listeners on a new connection
 */
export function socketListeners(owner, log) {
  function onMessage(data, isBinary) {
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
