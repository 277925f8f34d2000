// Least-squares slope of y over t (seconds), in units of y per hour.
export function slopePerHour(points) {
  const n = points.length;
  if (n < 2) return 0;
  let st = 0;
  let sy = 0;
  for (const [t, y] of points) {
    st += t;
    sy += y;
  }
  const mt = st / n;
  const my = sy / n;
  let num = 0;
  let den = 0;
  for (const [t, y] of points) {
    num += (t - mt) * (y - my);
    den += (t - mt) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 3600;
}
