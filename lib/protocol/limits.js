// The wire protocol's bounds on what a client sends, in one place: the
// checks of ./validate.js and ./client-frame.js, the server API's checks
// (../core/server.js) and Pusher's user ids (../pusher/connection.js) read
// them here. Plain JavaScript with no imports, so the browser client can
// load the checks that read them as they are.

/** How deep a message's data may nest: JSON.stringify recurses, so deeper data is refused before anything serialises it. */
export const MAX_DATA_DEPTH = 64;

/** A frame's `id`, as a string. */
export const MAX_ID_LENGTH = 128;

/** A user id (a token's sub). */
export const MAX_USER_LENGTH = 128;

/**
 * A connection's `info` (the token's claim, or the connect hook's) is shown
 * to every subscriber of its presence channels, in each presence answer and
 * presence_diff frame: bounded, serialised.
 */
export const MAX_INFO_BYTES = 1024;

/** Channels in an auth frame's `since`. */
export const MAX_HELD = 1000;
