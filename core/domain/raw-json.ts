// Finds the raw byte spans of JSON values without re-serializing them.
// The bytes a producer enqueues are the bytes we sign and send, on every attempt, so a
// payload is cut out of the request text as it stands, never JSON.parse'd and
// JSON.stringify'd (which would change number formatting, escapes and big integers).

export type Span = { start: number; end: number };

const isWs = (c: number): boolean => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

const skipWs = (s: string, i: number): number => {
  while (i < s.length && isWs(s.charCodeAt(i))) i++;
  return i;
};

const skipString = (s: string, i: number): number => {
  // s[i] === '"'
  i++;
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c === 0x5c) i += 2;
    else if (c === 0x22) return i + 1;
    else i++;
  }
  throw new SyntaxError('unterminated string');
};

/** Index just past the JSON value that starts at i (i at its first character). */
export const skipValue = (s: string, i: number): number => {
  const c = s.charCodeAt(i);
  if (c === 0x22) return skipString(s, i);
  if (c === 0x7b || c === 0x5b) {
    let depth = 0;
    while (i < s.length) {
      const d = s.charCodeAt(i);
      if (d === 0x22) {
        i = skipString(s, i);
        continue;
      }
      if (d === 0x7b || d === 0x5b) depth++;
      else if (d === 0x7d || d === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
      i++;
    }
    throw new SyntaxError('unterminated container');
  }
  // number, true, false, null
  let j = i;
  while (j < s.length) {
    const d = s.charCodeAt(j);
    if (d === 0x2c || d === 0x7d || d === 0x5d || isWs(d)) break;
    j++;
  }
  if (j === i) throw new SyntaxError(`unexpected character at ${i}`);
  return j;
};

/** Spans of the members of the object whose '{' is at `start` (last duplicate key wins, as in JSON.parse). */
export const objectMembers = (s: string, start: number): Map<string, Span> => {
  const out = new Map<string, Span>();
  let i = skipWs(s, start);
  if (s.charCodeAt(i) !== 0x7b) throw new SyntaxError('expected an object');
  i = skipWs(s, i + 1);
  if (s.charCodeAt(i) === 0x7d) return out;
  for (;;) {
    i = skipWs(s, i);
    const keyEnd = skipString(s, i);
    const rawKey = s.slice(i + 1, keyEnd - 1);
    const key = rawKey.includes('\\') ? (JSON.parse(s.slice(i, keyEnd)) as string) : rawKey;
    i = skipWs(s, keyEnd);
    if (s.charCodeAt(i) !== 0x3a) throw new SyntaxError('expected a colon');
    const vStart = skipWs(s, i + 1);
    const vEnd = skipValue(s, vStart);
    out.set(key, { start: vStart, end: vEnd });
    i = skipWs(s, vEnd);
    const c = s.charCodeAt(i);
    if (c === 0x2c) {
      i++;
      continue;
    }
    if (c === 0x7d) return out;
    throw new SyntaxError('expected a comma or a closing brace');
  }
};

/** Spans of the elements of the array whose '[' is at `start`. */
export const arrayElements = (s: string, start: number): Span[] => {
  const out: Span[] = [];
  let i = skipWs(s, start);
  if (s.charCodeAt(i) !== 0x5b) throw new SyntaxError('expected an array');
  i = skipWs(s, i + 1);
  if (s.charCodeAt(i) === 0x5d) return out;
  for (;;) {
    const vStart = skipWs(s, i);
    const vEnd = skipValue(s, vStart);
    out.push({ start: vStart, end: vEnd });
    i = skipWs(s, vEnd);
    const c = s.charCodeAt(i);
    if (c === 0x2c) {
      i++;
      continue;
    }
    if (c === 0x5d) return out;
    throw new SyntaxError('expected a comma or a closing bracket');
  }
};

export const slice = (s: string, span: Span): string => s.slice(span.start, span.end);
