// Shared by the delivery and transformer runners. The header rules (checkHeaders for the
// tables scripts return) are core/security/headers.ts, the same as the enqueue API's and the sender's.

export const lowerKeys = (h: Record<string, string>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) out[k.toLowerCase()] = v;
  return out;
};
