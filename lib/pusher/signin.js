// pusher:signin: `user_data` signed as `socket_id::user::user_data`. A
// signed-in connection holds its user's own channel, where the HTTP API
// reaches it (sendToUser, terminate_connections) on every worker and node.
import { kSession } from '../core/symbols.js';
import { MAX_USER_ID_BYTES, userChannel } from './channels.js';
import { authMatches } from './signatures.js';
import { errorFrame, PusherCode, signinSuccess } from './frames.js';

/** @param {import('./connection.js').PusherConnections} edge */
export function signin(edge, ws, { auth, user_data: userData }) {
  const session = ws[kSession];
  const { app } = session;
  const refuse = (message) => ws.send(errorFrame(PusherCode.UNAUTHORIZED, message));
  if (typeof userData !== 'string' || !authMatches(app, `${session.id}::user::${userData}`, auth)) return refuse('invalid signin signature');
  const user = userIdOf(userData);
  if (user === undefined) return refuse(`user_data must be a JSON object with an id of 1 to ${MAX_USER_ID_BYTES} bytes`);
  if (session.signedIn !== null && session.signedIn !== user) return refuse(`already signed in as another user`);
  if (session.signedIn === null) {
    session.signedIn = user;
    const channel = userChannel(app.appId, user);
    edge.sessions.join({ owner: edge, conn: ws, channel, latest: edge.commands.namespace(channel).latest });
  }
  ws.send(signinSuccess(userData));
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
