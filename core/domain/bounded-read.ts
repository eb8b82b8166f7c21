/**
 * The bytes of `stream`, or undefined once they pass `max`: the read stops at the first chunk
 * past it and the stream is cancelled, so at most `max` plus one chunk is ever held. Request
 * bodies (core/http/routes/body-limit.ts) and the Lua http module's responses use it.
 */
export const readUpTo = async (stream: ReadableStream<Uint8Array>, max: number): Promise<Uint8Array | undefined> => {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel().catch(() => undefined);
      return undefined;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
};
