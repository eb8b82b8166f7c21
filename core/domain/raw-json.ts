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
  // s[i] === '"'. indexOf finds the next quote at native speed (strings are most of a
  // payload's bytes); a quote after an odd run of backslashes is escaped.
  let from = i + 1;
  for (;;) {
    const q = s.indexOf('"', from);
    if (q < 0) throw new SyntaxError('unterminated string');
    let b = q;
    while (s.charCodeAt(b - 1) === 0x5c) b--;
    if ((q - b) % 2 === 0) return q + 1;
    from = q + 1;
  }
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

/** Each member of the object whose '{' is at `start`, in order: its key (unescaped) and the span of its value. Returns the index past the object. */
const eachMember = (s: string, start: number, visit: (key: string, span: Span) => void): number => {
  let i = skipWs(s, start);
  if (s.charCodeAt(i) !== 0x7b) throw new SyntaxError('expected an object');
  i = skipWs(s, i + 1);
  if (s.charCodeAt(i) === 0x7d) return i + 1;
  for (;;) {
    i = skipWs(s, i);
    const keyEnd = skipString(s, i);
    const rawKey = s.slice(i + 1, keyEnd - 1);
    const key = rawKey.includes('\\') ? (JSON.parse(s.slice(i, keyEnd)) as string) : rawKey;
    i = skipWs(s, keyEnd);
    if (s.charCodeAt(i) !== 0x3a) throw new SyntaxError('expected a colon');
    const vStart = skipWs(s, i + 1);
    const vEnd = skipValue(s, vStart);
    visit(key, { start: vStart, end: vEnd });
    i = skipWs(s, vEnd);
    const c = s.charCodeAt(i);
    if (c === 0x2c) {
      i++;
      continue;
    }
    if (c === 0x7d) return i + 1;
    throw new SyntaxError('expected a comma or a closing brace');
  }
};

/** Spans of the members of the object whose '{' is at `start` (last duplicate key wins, as in JSON.parse). */
export const objectMembers = (s: string, start: number): Map<string, Span> => {
  const out = new Map<string, Span>();
  eachMember(s, start, (key, span) => out.set(key, span));
  return out;
};

/** The span of member `key` of the object whose '{' is at `start` (the last duplicate), or undefined. */
export const memberSpan = (s: string, start: number, key: string): Span | undefined => {
  let found: Span | undefined;
  eachMember(s, start, (k, span) => {
    if (k === key) found = span;
  });
  return found;
};

/** Each element of the array whose '[' is at `start`: `scan` gets the index of its first character and returns the index past it. */
const eachElement = (s: string, start: number, scan: (at: number) => number): void => {
  let i = skipWs(s, start);
  if (s.charCodeAt(i) !== 0x5b) throw new SyntaxError('expected an array');
  i = skipWs(s, i + 1);
  if (s.charCodeAt(i) === 0x5d) return;
  for (;;) {
    i = skipWs(s, scan(skipWs(s, i)));
    const c = s.charCodeAt(i);
    if (c === 0x2c) {
      i++;
      continue;
    }
    if (c === 0x5d) return;
    throw new SyntaxError('expected a comma or a closing bracket');
  }
};

/** Spans of the elements of the array whose '[' is at `start`. */
export const arrayElements = (s: string, start: number): Span[] => {
  const out: Span[] = [];
  eachElement(s, start, (at) => {
    const end = skipValue(s, at);
    out.push({ start: at, end });
    return end;
  });
  return out;
};

/**
 * For each element of the array whose '[' is at `start`: the span of its member `key` when it
 * is an object that has one (the last duplicate), else undefined. One pass over the array and
 * no Map per element: a batch of enqueue items is read this way.
 */
export const elementMembers = (s: string, start: number, key: string): (Span | undefined)[] => {
  const out: (Span | undefined)[] = [];
  eachElement(s, start, (at) => {
    if (s.charCodeAt(at) !== 0x7b) {
      out.push(undefined);
      return skipValue(s, at);
    }
    let found: Span | undefined;
    const end = eachMember(s, at, (k, span) => {
      if (k === key) found = span;
    });
    out.push(found);
    return end;
  });
  return out;
};

export const slice = (s: string, span: Span): string => s.slice(span.start, span.end);
