// The refusal of whatever Redis did not answer: the client may retry shortly.
import { ErrorCode, GatewayError } from '../../core/errors.js';

export function unavailable() {
  return new GatewayError(ErrorCode.UNAVAILABLE, 'the engine (Redis) did not answer: retry shortly');
}
