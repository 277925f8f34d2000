// What a check concluded about one limit. Only FAIL makes the doctor exit 1;
// WARN and FAIL become the gateway's start-up warnings.
export const Status = Object.freeze({
  OK: 'ok',
  INFO: 'info', // shown for the operator, never a problem for the server (the port range)
  WARN: 'warn', // slows bursts or leaves no headroom, but N connections still fit
  FAIL: 'fail', // would stop N connections
  UNKNOWN: 'unknown' // the file could not be read
});
