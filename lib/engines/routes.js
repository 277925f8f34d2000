// A channel's routes (the workers it reaches), kept on its state object as
// `routes`: undefined, one route, or an array of routes.

// Most channels reach one worker; an array only for those that reach more.
// Both return whether the channel's occupancy changed: its first route came
// (add), its last one went (remove).
export function addRoute(state, route) {
  const routes = state.routes;
  if (routes === undefined) {
    state.routes = route;
    return true;
  }
  if (Array.isArray(routes)) {
    if (!routes.includes(route)) routes.push(route);
  } else if (routes !== route) state.routes = [routes, route];
  return false;
}

export function removeRoute(state, route) {
  const routes = state.routes;
  if (routes === route) {
    state.routes = undefined;
    return true;
  }
  if (Array.isArray(routes)) {
    const left = routes.filter((r) => r !== route);
    state.routes = left.length === 1 ? left[0] : left;
  }
  return false;
}

export function hasRoute(state, route) {
  const routes = state.routes;
  return routes === route || (Array.isArray(routes) && routes.includes(route));
}

/** Sends `op` along every route of the channel. */
export function pushAll(state, op) {
  const routes = state.routes;
  if (Array.isArray(routes)) for (const route of routes) route.push(op);
  else if (routes !== undefined) routes.push(op);
}
