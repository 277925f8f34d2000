// One Sentinel failover under a full publish load, under
// --redis-wait-replicas 1 (./helpers/failover-load.js; about 16 s). The slow
// tier repeats it ten times under each setting (redis-failover-load.slow.js).
import { failoverRuns } from '../../helpers/failover-load.js';

describe('a Sentinel failover under a full publish load', function () {
  failoverRuns(1, [1]);
});
