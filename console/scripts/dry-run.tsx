import { useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { apiSend, errorText, type Rights } from '../actions';

// A dry run (POST /config/:config/script/test): the script, as stored or as edited here, on a
// sample payload; shows the request it would send. Nothing is sent, nothing is stored.

type Result = {
  request: { body: string; headers: Record<string, string> };
  body_changed: boolean;
  ignored_headers: string[];
  credentials_used: string[];
  refused: { message: string } | null;
  cpu_ms: number;
};

const SAMPLE = '{\n  "event": "order.paid",\n  "order_id": 1042,\n  "amount": 1999\n}';

export const DryRun = ({ apiKey, configId, source, rights }: { apiKey: string | null; configId: string; source: string; rights: Rights }) => {
  const [payload, setPayload] = useState(SAMPLE);
  const [code, setCode] = useState(source);
  const [result, setResult] = useState<Result | null>(null);
  const [error, setError] = useState<string | null>(null);
  const run = (e: Event) => {
    e.preventDefault();
    let value: unknown;
    try {
      value = JSON.parse(payload);
    } catch (x) {
      setError(`The payload is not JSON: ${(x as Error).message}`);
      return;
    }
    setError(null);
    apiSend<Result>('POST', `/config/${encodeURIComponent(configId)}/script/test`, apiKey, { payload: value, ...(code !== source ? { script: code } : {}) }).then(
      (r) => setResult(r),
      (x) => (setResult(null), setError(errorText(x))),
    );
  };
  return (
    <form class="dry-run" onSubmit={run} aria-labelledby="dr-title">
      <h3 id="dr-title">Dry run</h3>
      <label for="dr-payload">Sample payload (JSON)</label>
      <textarea id="dr-payload" rows={6} value={payload} onInput={(e) => setPayload(e.currentTarget.value)} spellcheck={false} />
      <label for="dr-script">Script (edit to try a change; the stored one is not touched)</label>
      <textarea id="dr-script" rows={8} value={code} onInput={(e) => setCode(e.currentTarget.value)} spellcheck={false} />
      <div class="row">
        <button type="submit" disabled={!rights.act} title={rights.act ? undefined : (rights.why ?? undefined)}>
          Run dry run
        </button>
      </div>
      {!rights.act && rights.known && rights.why && <p class="why">{rights.why}</p>}
      <ErrorAlert text={error} />
      {result && (
        <div data-testid="dry-run-result" role="status">
          <h4>Request it would send{result.body_changed ? ' (body changed)' : ''}</h4>
          <dl class="headers">
            {Object.entries(result.request.headers).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
          <pre data-testid="dry-run-body">{result.request.body}</pre>
          <p class="muted">
            {result.cpu_ms.toFixed(2)} ms of CPU
            {result.ignored_headers.length ? `; headers ignored: ${result.ignored_headers.join(', ')}` : ''}
            {result.credentials_used.length ? `; credentials used: ${result.credentials_used.join(', ')}` : ''}
          </p>
          {result.refused && <p class="error">{result.refused.message}</p>}
        </div>
      )}
    </form>
  );
};
