import { describeBehaviour, type Counters, type LabDeadLetter, type LabSnapshot, type LogLine, type SubscriberView } from '../../core/lab';

// The Lab's read-only panels: counters, a card per subscriber, the dead letters and the log.

const secs = (ms: number | null): string => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`);

const COUNTERS: [keyof Counters, string][] = [
  ['events', 'Events'],
  ['deliveries', 'Deliveries'],
  ['inFlight', 'In flight'],
  ['waiting', 'Waiting'],
  ['queued', 'Queued'],
  ['delivered', 'Delivered'],
  ['deadLetters', 'Dead letters'],
  ['requests', 'Requests'],
  ['failed', 'Failed attempts'],
  ['deferred', 'Deferred (429)'],
  ['effects', 'Effects'],
  ['duplicates', 'Duplicates'],
];

export const CounterPanel = ({ c }: { c: Counters }) => (
  <section aria-labelledby="counters-title" class="panel">
    <h2 id="counters-title">Counters</h2>
    <dl class="counters">
      {COUNTERS.map(([k, label]) => (
        <div key={k}>
          <dt>{label}</dt>
          <dd data-counter={k}>{c[k]}</dd>
        </div>
      ))}
    </dl>
  </section>
);

const circuitText = (c: SubscriberView['circuit']): string =>
  c.state === 'CLOSED' ? `closed, ${c.failures} recent failures` : c.state === 'OPEN' ? `open until ${secs(c.openUntil)}` : `half-open, next probe ${secs(c.nextProbeAt)}`;

type CardProps = { s: SubscriberView; onFail: () => void; onRepair: () => void };

export const SubscriberCard = ({ s, onFail, onRepair }: CardProps) => (
  <article class="card" aria-labelledby={`sub-${s.id}`} data-subscriber={s.id}>
    <h3 id={`sub-${s.id}`}>{s.name}</h3>
    <p class="url">{s.url}</p>
    <p>
      <span class={`behaviour behaviour-${s.behaviour.kind}`}>{describeBehaviour(s.behaviour)}</span>
    </p>
    <dl class="facts">
      <div>
        <dt>Circuit</dt>
        <dd data-field="circuit" class={`circuit circuit-${s.circuit.state.toLowerCase()}`}>
          {circuitText(s.circuit)}
        </dd>
      </div>
      <div>
        <dt>Tokens</dt>
        <dd>
          <meter min={0} max={s.burst} value={s.tokens} aria-label={`${s.name} rate-limit tokens`} /> {s.tokens.toFixed(1)} of {s.burst}
        </dd>
      </div>
      <div>
        <dt>Delivered</dt>
        <dd data-field="delivered">{s.delivered}</dd>
      </div>
      <div>
        <dt>Failed</dt>
        <dd data-field="failed">{s.failed}</dd>
      </div>
      <div>
        <dt>Dead-lettered</dt>
        <dd data-field="deadLettered">{s.deadLettered}</dd>
      </div>
      <div>
        <dt>Effects / duplicates</dt>
        <dd>
          {s.effects} / {s.duplicates}
        </dd>
      </div>
      <div>
        <dt>Queued · waiting · in flight</dt>
        <dd>
          {s.queued} · {s.waiting} · {s.inFlight}
        </dd>
      </div>
    </dl>
    <div class="row">
      <button type="button" onClick={onFail}>
        Fail {s.name} (503)
      </button>
      <button type="button" onClick={onRepair}>
        Repair {s.name}
      </button>
    </div>
  </article>
);

export const DeadLetters = ({ list, names, onReplay }: { list: LabDeadLetter[]; names: Map<string, string>; onReplay: (id: string) => void }) => (
  <section aria-labelledby="dl-title" class="panel">
    <h2 id="dl-title">Dead letters ({list.length})</h2>
    {list.length === 0 ? (
      <p>None yet.</p>
    ) : (
      <ul class="dead">
        {list.map((d) => (
          <li key={d.id}>
            <span>
              {d.id} to {names.get(d.subscriberId) ?? d.subscriberId} at {secs(d.deadAt)}: {d.reasonType}, {d.attempts} attempts
              {d.replayOf ? ` (a replay of ${d.replayOf})` : ''}
            </span>
            <button type="button" onClick={() => onReplay(d.id)}>
              Replay {d.id}
            </button>
          </li>
        ))}
      </ul>
    )}
  </section>
);

export const Log = ({ lines }: { lines: LogLine[] }) => (
  <section aria-labelledby="log-title" class="panel">
    <h2 id="log-title">Log (newest first)</h2>
    <ol class="log" tabIndex={0} aria-label="Log lines, newest first">
      {lines
        .slice()
        .reverse()
        .map((l) => (
          <li key={l.seq}>
            <span class="at">{secs(l.at)}</span> {l.text}
          </li>
        ))}
    </ol>
  </section>
);

export const subscriberNames = (s: LabSnapshot) => new Map(s.subscribers.map((x) => [x.id, x.name]));
