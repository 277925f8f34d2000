'use strict';
// sticky-session's Master requires `ip` only for Master#balance, which
// lib/primary/master.js replaces. Nothing here is ever called.
module.exports = {};
