// A client event: a client publish (the core checks the grant its signature
// gave, whether the app allows client events there, and the rate), to every
// other subscriber of the channel. Not answered (Pusher acknowledges no
// client event); any refusal is pusher:error 4301, as Pusher answers.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { kSession } from '../core/symbols.js';
import { metrics } from '../session/metrics.js';
import { checkName, internalName, isPresence, kindOf } from './channels.js';
import { maxEventBytes } from './app-limits.js';
import { errorFrame, eventData, PusherCode } from './frames.js';
import { webhookEvent } from './reports.js';

/** @param {import('./connection.js').PusherConnections} edge */
export function clientEvent(edge, ws, { event, channel: name, data }) {
  try {
    checkName(name);
    const text = typeof data === 'string' ? data : JSON.stringify(data);
    const { app, id: socketId } = ws[kSession];
    const max = maxEventBytes(app);
    if (text === undefined || Buffer.byteLength(text) > max) throw new GatewayError(ErrorCode.PAYLOAD_TOO_LARGE, `a client event's data is JSON of at most ${max} bytes`);
    const internal = internalName(app.appId, name);
    if (!edge.subscriptions.holds(ws, internal)) throw new GatewayError(ErrorCode.FORBIDDEN, `subscribe to ${name} before sending client events on it`);
    const userId = isPresence(kindOf(name)) ? ws[kSession].presenceUsers?.get(internal) : undefined;
    // A refusal after the checks is told as one before them.
    edge.commands.publish(ws, internal, eventData(event, data, userId), undefined, socketId).catch((err) => refused(ws, err));
    webhookEvent(edge.relay, ws, internal, { name: 'client_event', channel: name, event, data: text, socket_id: socketId, user_id: userId });
  } catch (err) {
    refused(ws, err);
  }
}

function refused(ws, err) {
  if (!(err instanceof GatewayError)) throw err;
  metrics.errors.inc({ code: err.code });
  if (ws.readyState === ws.OPEN) ws.send(errorFrame(PusherCode.CLIENT_EVENT_REJECTED, err.message));
}
