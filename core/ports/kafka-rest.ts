// A produce in the Upstash Kafka REST dialect (POST /produce): what the edge sends
// (edge/upstash/kafka.ts) and howk-bridge answers (workers/bridge/kafka-routes.ts) in front
// of a real Kafka. One record per message, one ack per record, in request order.

export type KafkaRestRecord = { topic: string; value: string; key?: string; partition?: number; timestamp?: number; headers?: { key: string; value: string }[] };
export type KafkaRestAck = { topic: string; partition: number; offset: number; timestamp: number };
