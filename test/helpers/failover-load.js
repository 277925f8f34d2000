// The failover-under-load checks, for the normal suite (one run) and the slow
// tier (ten per setting): a Sentinel failover under the full publish load of
// scripts/bench-redis-topologies.js (the Redis engine alone, 64 publishes in
// flight over 16 channels, the master SIGKILLed a second in), each run on a
// fresh master, replicas and sentinels (scripts/harness/failover-load.js).
// Every run comes back within 10 s: acknowledgements flow again with no
// refusal after. Under wait-replicas 1 no acknowledged publish is lost;
// under 0 a loss is never silent (the channel's epoch changes).
import { expect } from 'chai';
import { failoverUnderLoad } from '../../scripts/harness/failover-load.js';

const FLOWING_WITHIN_S = 10;

/** One `it` per run: `repeat` runs under each of `waits` (--redis-wait-replicas). */
export function failoverRuns(repeat, waits) {
  for (const waitReplicas of waits) {
    for (let run = 1; run <= repeat; run++) {
      it(`comes back within ${FLOWING_WITHIN_S} s, wait-replicas ${waitReplicas}, run ${run} of ${repeat}`, async function () {
        this.timeout(120000);
        // WAIT given 500 ms, as in the other Sentinel tests: on a loaded machine a replica can take over
        // the default 100 ms now and then, a refusal that says nothing about the failover.
        const result = await failoverUnderLoad({ waitReplicas, waitTimeout: 500 });
        const why = JSON.stringify(result, null, 1);
        expect(result.secondsToFlowing, why).to.be.a('number').and.at.most(FLOWING_WITHIN_S);
        if (waitReplicas > 0) expect(result.ackedLost, why).to.equal(0);
        else if (result.ackedLost > 0) expect(result.channelsWithNewEpoch, why).to.be.above(0);
      });
    }
  }
}
