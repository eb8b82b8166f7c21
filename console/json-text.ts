// JSON as text without recursion: a payload may nest hundreds of thousands of levels
// (`[[[[…]]]]` fills a request with 200,000), deeper than any call stack, and
// JSON.stringify recurses (RangeError: Maximum call stack size exceeded). This walks an
// explicit stack instead, and stops at a depth and a length so the text stays readable.

export type JsonTextOptions = {
  /** Spaces per level; 0 writes one compact line. */
  indent: number;
  /** Containers deeper than this are written `[…]` / `{…}`. */
  maxDepth: number;
  /** Text beyond this many characters is cut. */
  maxChars: number;
};

export type JsonText = { text: string; /** some levels were not written */ deeper: boolean; /** the text was cut at maxChars */ cut: boolean };

type Frame = { close: ']' | '}'; items: [string | null, unknown][]; i: number; depth: number };

const isContainer = (v: unknown): v is object => typeof v === 'object' && v !== null;

export const jsonText = (value: unknown, o: JsonTextOptions): JsonText => {
  const out: string[] = [];
  let len = 0;
  let deeper = false;
  const stack: Frame[] = [];
  const emit = (s: string) => {
    out.push(s);
    len += s.length;
  };
  const newline = (depth: number) => (o.indent ? `\n${' '.repeat(o.indent * depth)}` : '');
  const open = (v: unknown, depth: number) => {
    if (!isContainer(v)) return emit(JSON.stringify(v) ?? 'null');
    const array = Array.isArray(v);
    const items: [string | null, unknown][] = array ? v.map((x): [null, unknown] => [null, x]) : Object.entries(v);
    if (!items.length) return emit(array ? '[]' : '{}');
    if (depth >= o.maxDepth) {
      deeper = true;
      return emit(array ? '[…]' : '{…}');
    }
    emit(array ? '[' : '{');
    stack.push({ close: array ? ']' : '}', items, i: 0, depth });
  };
  open(value, 0);
  while (stack.length && len <= o.maxChars) {
    const f = stack[stack.length - 1]!;
    if (f.i < f.items.length) {
      const [key, v] = f.items[f.i]!;
      emit(`${f.i ? ',' : ''}${newline(f.depth + 1)}${key === null ? '' : `${JSON.stringify(key)}:${o.indent ? ' ' : ''}`}`);
      f.i++;
      open(v, f.depth + 1);
    } else {
      emit(`${newline(f.depth)}${f.close}`);
      stack.pop();
    }
  }
  const cut = len > o.maxChars || stack.length > 0;
  const text = out.join('');
  return { text: cut ? text.slice(0, o.maxChars) : text, deeper, cut };
};
