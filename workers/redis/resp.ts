import { Buffer } from 'node:buffer';

// RESP, the Redis protocol, written by hand for the hot script calls (workers/redis/script-call.ts):
// a call's arguments become one string as they are added, the bytes ioredis would send for
// the same arguments, without its per-argument work (copying and flattening the argument
// list, turning each number into text, then encoding each argument when writing).

/** One argument as a RESP bulk string: `$<bytes>\r\n<text>\r\n`. */
export const bulk = (s: string): string => `$${Buffer.byteLength(s)}\r\n${s}\r\n`;

/** A number as ioredis sends it (String(n)); its text is ASCII, so its length is its byte count. */
export const bulkNumber = (n: number): string => {
  const s = String(n);
  return `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
};

const EMPTY = '$0\r\n\r\n';

/** The arguments of one command, encoded as they are added. */
export class RespArgs {
  count = 0;
  text = '';

  str(s: string): this {
    this.text += s === '' ? EMPTY : bulk(s);
    this.count++;
    return this;
  }

  num(n: number): this {
    this.text += bulkNumber(n);
    this.count++;
    return this;
  }

  /** `count` arguments encoded beforehand (e.g. the same on every call). */
  encoded(text: string, count: number): this {
    this.text += text;
    this.count += count;
    return this;
  }

  append(more: RespArgs): this {
    return this.encoded(more.text, more.count);
  }
}

/** A whole command: its name and arguments (what a client writes to the socket). */
export const command = (name: string, args: RespArgs): string => `*${args.count + 1}\r\n${bulk(name)}${args.text}`;
