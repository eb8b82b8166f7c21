import { Kafka, logLevel, type Admin } from 'kafkajs';
import './request-queue';
import './member-id';
import './coordinator';

// The kafkajs client of the log and of the topic reader: kafkajs' own logger silenced (the
// callers report failures through Howk's logger and error counters), a broker that does not
// answer given up on after 3 s to connect and 10 s per request. `retries`: how many times
// kafkajs tries a failed request again (200 ms at first, up to 2 s apart).
export const createKafka = (o: { brokers: string[]; clientId: string }, retries: number): Kafka =>
  new Kafka({
    clientId: o.clientId,
    brokers: o.brokers,
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 10_000,
    retry: { retries, initialRetryTime: 200, maxRetryTime: 2000 },
  });

/** One admin client, connected at its first use and kept; a connect that failed is tried afresh at the next use. */
export class LazyAdmin {
  private admin: Admin | undefined;

  constructor(private readonly kafka: Kafka) {}

  async get(): Promise<Admin> {
    if (!this.admin) {
      const a = this.kafka.admin();
      await a.connect();
      this.admin = a;
    }
    return this.admin;
  }

  /** The admin client if one has connected (nothing to clean up otherwise). */
  get connected(): Admin | undefined {
    return this.admin;
  }

  /** Disconnects the admin client, if any; the next use connects a new one. */
  async disconnect(): Promise<void> {
    const a = this.admin;
    this.admin = undefined;
    await a?.disconnect();
  }
}
