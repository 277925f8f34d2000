// The slow tier (`npm run test:slow`, not part of `npm test`): a Sentinel
// failover under a full publish load, ten times under --redis-wait-replicas 1
// and ten under 0 (./helpers/failover-load.js). FAILOVER_REPEAT sets the
// count.
import { failoverRuns } from '../helpers/failover-load.js';

describe('a Sentinel failover under a full publish load, repeated', function () {
  failoverRuns(Number(process.env.FAILOVER_REPEAT ?? 10), [1, 0]);
});
