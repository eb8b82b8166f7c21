import { describe, expect, it } from 'vitest';

// Importing a module must not change the process environment: what a binary sets up
// belongs to its start-up, where it is visible (and a library import in a test or an
// embedding program does not silently change their environment).
describe('imports leave process.env alone', () => {
  it('the Kafka adapters (howk-api/worker log, howk-bridge producer)', async () => {
    const before = { ...process.env };
    await import('../../workers/kafka/log');
    await import('../../workers/kafka/rest-producer');
    expect({ ...process.env }).toEqual(before);
  });
});
