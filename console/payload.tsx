import { useMemo, useState } from 'preact/hooks';
import { jsonText } from './json-text';

// A webhook's payload as text, whatever its shape: indented to a bounded depth and length
// (a payload 200,000 levels deep would be gigabytes of indentation, and JSON.stringify
// overflows the stack long before), and, on demand, the whole of it as one compact line.

const SHOWN = { indent: 2, maxDepth: 32, maxChars: 200_000 };
const WHOLE = { indent: 0, maxDepth: Infinity, maxChars: 8_000_000 };

export const Payload = ({ value }: { value: unknown }) => {
  const [whole, setWhole] = useState(false);
  const shown = useMemo(() => (typeof value === 'string' ? { text: value, deeper: false, cut: false } : jsonText(value ?? null, SHOWN)), [value]);
  const all = useMemo(() => (whole ? jsonText(value ?? null, WHOLE) : null), [value, whole]);
  const partial = shown.deeper || shown.cut;
  return (
    <>
      {/* Focusable: a long payload scrolls in its box, and the keyboard must reach it too. */}
      <pre data-testid="payload" class="payload" role="region" aria-label="Payload" tabIndex={0}>
        {shown.text}
        {shown.cut ? '…' : ''}
      </pre>
      {partial && (
        <p class="payload-note" data-testid="payload-note">
          {shown.deeper ? `Nested deeper than ${SHOWN.maxDepth} levels: the deeper levels are not shown ([…], {…}). ` : ''}
          {shown.cut ? `Longer than ${SHOWN.maxChars.toLocaleString('en')} characters: the rest is not shown. ` : ''}
          <button type="button" aria-expanded={whole} onClick={() => setWhole((w) => !w)}>
            {whole ? 'Hide the whole payload' : 'Show the whole payload as compact JSON'}
          </button>
        </p>
      )}
      {all && (
        <pre data-testid="payload-whole" class="payload payload-whole" role="region" aria-label="The whole payload, compact JSON" tabIndex={0}>
          {all.text}
          {all.cut ? `… (cut at ${WHOLE.maxChars.toLocaleString('en')} characters)` : ''}
        </pre>
      )}
    </>
  );
};
