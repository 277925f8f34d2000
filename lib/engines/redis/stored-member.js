// A presence member as ./presence.lua stores it and publishes it in a join
// or leave: its JSON members after the client's own, with a leading comma
// (`,"user":"42","info":{…}`, or '' for a member with neither), so the script
// writes a frame by concatenation and never parses JSON. The text is this
// engine's own: what it answers and tells are values (lib/core/identity.js).
import { NO_MEMBER } from '../../core/identity.js';

/** @param {import('../../core/identity.js').Member} member */
export function storedMember(member) {
  const json = JSON.stringify(member);
  return json === '{}' ? '' : `,${json.slice(1, -1)}`;
}

/** @returns {import('../../core/identity.js').Member} the member a stored text holds */
export function memberOfStored(stored) {
  return stored === '' ? NO_MEMBER : JSON.parse(`{${stored.slice(1)}}`);
}
