import { describeBehaviour } from './subscriber';
import { at } from './text';
import type { LabSnapshot } from './types';

// The state in sentences, for screen readers and anyone who prefers text to panels.

const circuitText = (c: LabSnapshot['subscribers'][number]['circuit']): string => {
  if (c.state === 'CLOSED') return `circuit closed with ${c.failures} recent failures`;
  if (c.state === 'OPEN') return `circuit open until ${at(c.openUntil!)}`;
  return `circuit half-open, next probe at ${at(c.nextProbeAt!)}`;
};

export const summarize = (s: LabSnapshot, recentLines = 5): string => {
  const c = s.counters;
  const head = [
    `Simulated clock at ${at(s.now)}, ${s.paused ? 'paused' : `running at ${s.speed} times wall-clock speed`}.${s.scenario ? ` Scenario: ${s.scenario.title}.` : ''}${s.nextAt !== null ? ` The next scheduled moment is at ${at(s.nextAt)}.` : ''}`,
    `${c.events} events sent, making ${c.deliveries} deliveries: ${c.delivered} delivered, ${c.deadLetters} dead-lettered, ${c.queued} queued, ${c.inFlight} in flight and ${c.waiting} waiting. ${c.requests} requests, ${c.failed} failed and ${c.deferred} deferred by 429 responses. Consumers applied ${c.effects} effects and dropped ${c.duplicates} duplicates. ${c.replays} replays. Circuits opened ${c.circuitOpens} times.`,
  ];
  const subs = s.subscribers.map(
    (x) =>
      `${x.name} (${x.url}) is ${describeBehaviour(x.behaviour)}; ${circuitText(x.circuit)}; rate-limit tokens ${x.tokens} of ${x.burst}. Delivered ${x.delivered}, failed ${x.failed}, deferred ${x.deferred}, dead-lettered ${x.deadLettered}, effects ${x.effects}, duplicates ${x.duplicates}; ${x.queued} queued, ${x.waiting} waiting, ${x.inFlight} in flight.`,
  );
  const lines = s.log
    .slice(-recentLines)
    .reverse()
    .map((l) => `${at(l.at)}: ${l.text}`);
  return [...head, ...subs, lines.length ? `Most recent log lines, newest first: ${lines.join(' | ')}` : 'The log is empty.'].join('\n');
};
