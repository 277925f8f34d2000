// How a publish or a subscribe ended short of the plain case, as the engines
// report it and the metrics label it (the Redis engine's scripts return the
// same words, lib/engines/redis/publish.lua). No imports.

/** Why a publish with an idempotencyKey or a version published nothing (the label of gateway_publishes_skipped_total). */
export const Skipped = Object.freeze({
  DUPLICATE: 'duplicate', // the key was seen within its window: the first publish's result
  STALE: 'stale' // the version is not above the channel's last accepted one
});

/** How a subscribe with `since` ended (the label of gateway_recoveries_total). */
export const Recovery = Object.freeze({
  RECOVERED: 'recovered',
  EPOCH_CHANGED: 'epoch_changed', // the channel's sequence started over
  TOO_OLD: 'too_old' // the history no longer reaches back to since.seq
});
