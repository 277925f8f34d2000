// pusher:signin: `user_data` signed as `socket_id::user::user_data`. A
// signed-in connection holds its user's own channel, where the HTTP API
// reaches it (sendToUser, terminate_connections) on every worker and node.
// pusher:signin_success is sent once that channel is live here (under the
// Redis engine, once this node is subscribed to it), so whatever the backend
// does for the user after the client is told it is signed in reaches it;
// a subscribe to `#server-to-user-<id>` meanwhile is answered with it.
import { kSession } from '../core/symbols.js';
import { MAX_USER_ID_BYTES, userChannel } from './channels.js';
import { authMatches } from './signatures.js';
import { errorFrame, PusherCode, signinSuccess, subscriptionSucceeded } from './frames.js';

/** @param {import('./connection.js').PusherConnections} edge */
export function signin(edge, ws, { auth, user_data: userData }) {
  const session = ws[kSession];
  const { app } = session;
  const refuse = (message) => ws.send(errorFrame(PusherCode.UNAUTHORIZED, message));
  if (typeof userData !== 'string' || !authMatches(app, `${session.id}::user::${userData}`, auth)) return refuse('invalid signin signature');
  const user = userIdOf(userData);
  if (user === undefined) return refuse(`user_data must be a JSON object with an id of 1 to ${MAX_USER_ID_BYTES} bytes`);
  if (session.signedIn !== null && session.signedIn !== user) return refuse(`already signed in as another user`);
  const channel = userChannel(app.appId, user);
  if (session.signedIn === null) {
    session.signedIn = user;
    // The join carries the answer: its user_data, and the subscribes to the user's channel that wait with it.
    edge.sessions.join({ owner: edge, conn: ws, channel, latest: edge.commands.namespace(channel).latest, signin: { userData, names: [] } });
    return;
  }
  // Signed in as this user already: answered now, or with the sign-in under way.
  if (edge.sessions.joiningOf(ws, channel) === undefined) ws.send(signinSuccess(userData));
}

/**
 * A subscribe to the connection's own `#server-to-user-<id>`: it holds that
 * channel from its sign-in, so it is answered now, or once the sign-in is.
 */
export function ownUserChannel(edge, ws, name) {
  const { app, signedIn } = ws[kSession];
  const waiting = edge.sessions.joiningOf(ws, userChannel(app.appId, signedIn))?.signin;
  if (waiting === undefined) ws.send(subscriptionSucceeded(name));
  else waiting.names.push(name);
}

/**
 * Where the sign-in's join ended: signed in (signin_success, then the
 * subscribes to its user channel that waited), or not (pusher:error; a
 * later pusher:signin tries again).
 * @param {{userData: string, names: string[]}} signin the join's answer to give
 * @param {import('../core/errors.js').GatewayError} [err] why the engine refused it
 */
export function signinEnded(edge, ws, { userData, names }, live, err) {
  if (!edge.isOpen(ws)) return;
  if (!live) {
    ws[kSession].signedIn = null;
    ws.send(errorFrame(null, err?.message ?? 'the sign-in did not complete: sign in again'));
    return;
  }
  ws.send(signinSuccess(userData));
  for (const name of names) ws.send(subscriptionSucceeded(name));
}

/** The id of a sign-in's user_data, or undefined when it has none usable. */
function userIdOf(userData) {
  let parsed;
  try {
    parsed = JSON.parse(userData);
  } catch {
    return undefined;
  }
  const id = parsed?.id;
  return typeof id === 'string' && id !== '' && Buffer.byteLength(id) <= MAX_USER_ID_BYTES ? id : undefined;
}
