import type { EndpointRecord } from '../records/application';

// Which endpoints of an application a message reaches (Svix's rules): an enabled endpoint
// whose event-type filter is absent or names the message's type, and whose channels are absent
// or share at least one with the message's. A message without channels reaches no endpoint
// that listens to channels only.

export const listensTo = (e: Pick<EndpointRecord, 'disabled' | 'filter_types' | 'channels'>, eventType: string, channels: readonly string[] | null): boolean => {
  if (e.disabled) return false;
  if (e.filter_types && e.filter_types.length && !e.filter_types.includes(eventType)) return false;
  if (e.channels && e.channels.length) return (channels ?? []).some((c) => e.channels!.includes(c));
  return true;
};

/** The endpoints a message reaches, in the order given. */
export const matchingEndpoints = <E extends Pick<EndpointRecord, 'disabled' | 'filter_types' | 'channels'>>(
  endpoints: readonly E[],
  eventType: string,
  channels: readonly string[] | null,
): E[] => endpoints.filter((e) => listensTo(e, eventType, channels));
