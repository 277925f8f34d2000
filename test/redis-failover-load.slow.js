// The slow tier (`npm run test:slow`, not part of `npm test`): a Sentinel
// failover under the full publish load of scripts/bench-redis-topologies.js
// (the Redis engine alone, 64 publishes in flight over 16 channels, the
// master SIGKILLed a second in), ten times under --redis-wait-replicas 1 and
// ten under 0, each on a fresh master, replicas and sentinels
// (./scripts/harness/failover-load.js). Every run comes back within 10 s:
// acknowledgements flow again with no refusal after. Under wait-replicas 1
// no acknowledged publish is lost; under 0 a loss is never silent (the
// channel's epoch changes). FAILOVER_REPEAT sets the count (default 10).
import { expect } from 'chai';
import { failoverUnderLoad } from '../scripts/harness/failover-load.js';

const REPEAT = Number(process.env.FAILOVER_REPEAT ?? 10);
const FLOWING_WITHIN_S = 10;

describe('a Sentinel failover under a full publish load', function () {
  this.timeout(120000);
  for (const waitReplicas of [1, 0]) {
    for (let run = 1; run <= REPEAT; run++) {
      it(`comes back within ${FLOWING_WITHIN_S} s, wait-replicas ${waitReplicas}, run ${run} of ${REPEAT}`, async function () {
        const result = await failoverUnderLoad({ waitReplicas });
        const why = JSON.stringify(result, null, 1);
        expect(result.secondsToFlowing, why).to.be.a('number').and.at.most(FLOWING_WITHIN_S);
        if (waitReplicas > 0) expect(result.ackedLost, why).to.equal(0);
        else if (result.ackedLost > 0) expect(result.channelsWithNewEpoch, why).to.be.above(0);
      });
    }
  }
});
