import { useState } from 'preact/hooks';
import { changeOneCharacter, DEMO_PAYLOAD, signDemo, verifyDemo, type DemoVerification, type SignedDemo } from '../../core/lab';

// The signed-payload demo: sign a body as a worker does, then check what "arrived" as a
// receiver does. WebCrypto needs a secure context (https, or localhost / 127.0.0.1).

/** A letter or digit near the middle of the body (inside a value, not a brace): the change is visible but small. */
const pickIndex = (text: string): number => {
  const mid = Math.floor(text.length / 2);
  const after = text.slice(mid).search(/[0-9A-Za-z]/);
  if (after >= 0) return mid + after;
  const any = text.search(/[0-9A-Za-z]/);
  return any >= 0 ? any : 0;
};

const verdict = (v: DemoVerification['standard']): string => (v.ok ? 'valid' : `rejected: ${v.reason}${v.detail ? ` (${v.detail})` : ''}`);

export const SigningDemo = () => {
  const [body, setBody] = useState(DEMO_PAYLOAD);
  const [signed, setSigned] = useState<SignedDemo | null>(null);
  const [received, setReceived] = useState('');
  const [result, setResult] = useState<DemoVerification | null>(null);
  const [error, setError] = useState<string | null>(null);
  const available = typeof crypto !== 'undefined' && !!crypto.subtle;

  const sign = async () => {
    try {
      const s = await signDemo(body);
      setSigned(s);
      setReceived(s.body);
      setResult(await verifyDemo(s, s.body));
      setError(null);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const verify = async (text: string) => {
    setReceived(text);
    if (signed) setResult(await verifyDemo(signed, text));
  };

  return (
    <section aria-labelledby="sign-title" class="panel">
      <h2 id="sign-title">Signed payload</h2>
      <p>
        Signed as a worker signs each attempt, with the public demo key <code>lab-demo-key-not-a-secret</code> and a fixed timestamp; checked as a receiver checks it. Change one
        character of what arrived and both signatures fail.
      </p>
      {!available && <p role="alert">This page is not a secure context (https or localhost), so the browser offers no WebCrypto: the demo cannot sign.</p>}
      <label for="sign-body">Body to sign</label>
      <textarea id="sign-body" rows={3} value={body} onInput={(e) => setBody(e.currentTarget.value)} />
      <div class="row">
        <button type="button" disabled={!available} onClick={sign}>
          Sign
        </button>
      </div>
      {error && <p role="alert">{error}</p>}
      {signed && (
        <>
          <h3>Headers of the attempt</h3>
          <dl class="headers" data-testid="signed-headers">
            {Object.entries(signed.headers).map(([k, v]) => (
              <div key={k}>
                <dt>{k}</dt>
                <dd>{v}</dd>
              </div>
            ))}
          </dl>
          <p>
            HMAC-SHA256 of <code data-testid="signed-standard">{signed.signed.standard}</code> (webhook-signature) and of <code>{signed.signed.howk}</code> (x-webhook-signature).
          </p>
          <label for="sign-received">Body as it arrived</label>
          <textarea id="sign-received" rows={3} value={received} onInput={(e) => verify(e.currentTarget.value)} />
          <div class="row">
            <button type="button" disabled={received.length === 0} onClick={() => verify(changeOneCharacter(received, pickIndex(received)))}>
              Change one character
            </button>
            <button type="button" onClick={() => verify(signed.body)}>
              Restore the body
            </button>
          </div>
          {result && (
            <p role="status" data-testid="verify-result" class={result.ok ? 'ok' : 'bad'}>
              {result.ok ? 'Both signatures are valid.' : 'The body was changed: the receiver rejects it.'} webhook-signature: {verdict(result.standard)}; x-webhook-signature:{' '}
              {verdict(result.howk)}.
            </p>
          )}
        </>
      )}
    </section>
  );
};
