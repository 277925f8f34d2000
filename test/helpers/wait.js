// Waiting, in every test the same way: poll for a condition with a deadline
// (eventually), and sleep only where the time itself is under test (a rate
// limit's window, a grace period, a backoff). To show that something did not
// arrive, send a marker after it and wait for the marker: a sleep would pass
// without checking anything on a slow machine.
export { eventually } from '../../scripts/harness/gateway.js';
export { setTimeout as sleep } from 'node:timers/promises';
