// A small reader of Terraform files for machines without `terraform`: checks that brackets
// and strings balance (interpolations, comments and heredocs included) and the layout rules of
// `terraform fmt` that matter here: two-space indentation by nesting depth, no tabs or trailing
// spaces, one space around `=`, and `=` aligned within a run of one-line attributes.

export type HclProblem = { line: number; message: string };

type LineInfo = { text: string; depthStart: number; depthEnd: number; inString: boolean; openers: number[] };

const OPEN: Record<string, string> = { '{': '}', '[': ']', '(': ')' };
const CLOSE = new Set(Object.values(OPEN));

/** Scans the file once; for each line, the bracket depth at its start and end. */
const scan = (src: string, problems: HclProblem[]): LineInfo[] => {
  const lines = src.split('\n');
  // Open brackets with the line that opened each; '"' is a string, '${' an interpolation.
  const stack: { ch: string; line: number }[] = [];
  const brackets = () => stack.filter((s) => s.ch in OPEN);
  let heredoc: string | undefined;
  let blockComment = false;
  const out: LineInfo[] = [];
  lines.forEach((text, i) => {
    const lineNo = i + 1;
    const open = brackets();
    const depthStart = open.length;
    const openers = open.map((s) => s.line);
    const inString = heredoc !== undefined || stack.at(-1)?.ch === '"' || blockComment;
    if (heredoc !== undefined) {
      if (text.trim() === heredoc) heredoc = undefined;
      out.push({ text, depthStart, depthEnd: depthStart, inString: true, openers });
      return;
    }
    for (let c = 0; c < text.length; c++) {
      const ch = text[c]!;
      const two = text.slice(c, c + 2);
      if (blockComment) {
        if (two === '*/') {
          blockComment = false;
          c++;
        }
        continue;
      }
      if (stack.at(-1)?.ch === '"') {
        if (ch === '\\') c++;
        else if (two === '${' || two === '%{') {
          stack.push({ ch: '${', line: lineNo });
          c++;
        } else if (ch === '"') stack.pop();
        continue;
      }
      if (ch === '#' || two === '//') break;
      if (two === '/*') {
        blockComment = true;
        c++;
      } else if (ch === '"') stack.push({ ch, line: lineNo });
      else if (two === '<<') {
        const m = /^<<-?([A-Z_]+)\s*$/.exec(text.slice(c));
        if (m) {
          heredoc = m[1];
          break;
        }
      } else if (ch in OPEN) stack.push({ ch, line: lineNo });
      else if (ch === '}' && stack.at(-1)?.ch === '${') stack.pop();
      else if (CLOSE.has(ch)) {
        const top = stack.pop();
        if (!top || OPEN[top.ch] !== ch) problems.push({ line: lineNo, message: `unbalanced ${ch}` });
      }
    }
    if (stack.at(-1)?.ch === '"') problems.push({ line: lineNo, message: 'string not closed on its line' });
    out.push({ text, depthStart, depthEnd: brackets().length, inString, openers });
  });
  if (stack.length || heredoc || blockComment) problems.push({ line: lines.length, message: `unclosed ${stack.at(-1)?.ch ?? heredoc ?? '/*'} at end of file` });
  return out;
};

const ATTR = /^(\s*)([\w.-]+|"[^"]+")(\s*)=(?![=>])(\s*)(\S.*)$/;

/** Problems of one .tf file; empty when it reads like `terraform fmt` output. */
export const lintHcl = (src: string): HclProblem[] => {
  const problems: HclProblem[] = [];
  const lines = scan(src, problems);
  const levels = new Map<number, number>();
  let group: { line: number; col: number; keyEnd: number }[] = [];
  // Every `=` of a run sits one space after the run's longest name.
  const flush = () => {
    const want = Math.max(...group.map((g) => g.keyEnd)) + 1;
    const off = group.find((g) => g.col !== want);
    if (off)
      problems.push({
        line: off.line,
        message: `= at column ${off.col}, expected ${want} (aligned one space after the longest name of lines ${group[0]!.line}-${group.at(-1)!.line})`,
      });
    group = [];
  };
  lines.forEach((l, i) => {
    const lineNo = i + 1;
    if (l.inString) return;
    if (l.text.includes('\t')) problems.push({ line: lineNo, message: 'tab' });
    if (/\s$/.test(l.text)) problems.push({ line: lineNo, message: 'trailing whitespace' });
    const trimmed = l.text.trim();
    if (!trimmed) return flush();
    // A line sits one level deeper than the line that opened its innermost bracket (`[{` on
    // one line is one level); a line that starts by closing it sits at that line's level.
    const inner = l.openers.at(-1);
    const level = inner === undefined ? 0 : (levels.get(inner) ?? 0) + (CLOSE.has(trimmed[0]!) ? 0 : 1);
    levels.set(lineNo, level);
    const want = 2 * level;
    const indent = l.text.length - l.text.trimStart().length;
    if (indent !== want) problems.push({ line: lineNo, message: `indent ${indent}, expected ${want}` });
    const m = trimmed.startsWith('#') ? null : ATTR.exec(l.text);
    if (!m) return flush();
    if (m[4] !== ' ') problems.push({ line: lineNo, message: 'one space after =' });
    // Only one-line attributes align; a multi-line value ends the run, with one space before =.
    if (l.depthEnd !== l.depthStart) {
      flush();
      if (m[3] !== ' ') problems.push({ line: lineNo, message: 'one space before =' });
      return;
    }
    group.push({ line: lineNo, col: m[1]!.length + m[2]!.length + m[3]!.length, keyEnd: m[1]!.length + m[2]!.length });
  });
  flush();
  return problems;
};
