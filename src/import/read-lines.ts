import { strictUtf8 } from '../domain/well-formed-text.js';

/** One line of the input, numbered from 1, without its line ending. */
export interface InputLine {
  readonly number: number;
  readonly text: string;
  /** The line was longer than the limit; `text` is empty and the rest was skipped. */
  readonly tooLong: boolean;
  /** The line's bytes are not UTF-8; `text` is empty. */
  readonly notUtf8?: boolean;
  /** Bytes consumed so far, for progress. */
  readonly bytesRead: number;
}

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Splits a byte stream into lines with bounded memory: only the current line
 * is buffered, and a line longer than `maxLineBytes` is skipped (reported as
 * too long) instead of growing the buffer. Accepts LF and CRLF endings, a
 * missing final newline, and a UTF-8 byte order mark.
 */
export async function* readLines(input: AsyncIterable<Buffer | string>, maxLineBytes: number): AsyncGenerator<InputLine> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let skipping = false;
  let number = 0;
  let bytesRead = 0;

  const finish = (tail: Buffer): InputLine => {
    number += 1;
    if (skipping) {
      skipping = false;
      pending = [];
      pendingBytes = 0;
      return { number, text: '', tooLong: true, bytesRead };
    }
    let line = pending.length === 0 ? tail : Buffer.concat([...pending, tail]);
    pending = [];
    pendingBytes = 0;
    if (line.length > 0 && line[line.length - 1] === CARRIAGE_RETURN) line = line.subarray(0, line.length - 1);
    if (number === 1 && line[0] === 0xef && line[1] === 0xbb && line[2] === 0xbf) line = line.subarray(3);
    if (line.length > maxLineBytes) return { number, text: '', tooLong: true, bytesRead };
    const text = strictUtf8(line);
    return text === undefined ? { number, text: '', tooLong: false, notUtf8: true, bytesRead } : { number, text, tooLong: false, bytesRead };
  };

  for await (const raw of input) {
    const chunk = typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw;
    let start = 0;
    for (;;) {
      const end = chunk.indexOf(NEWLINE, start);
      if (end === -1) break;
      bytesRead += end + 1 - start;
      yield finish(chunk.subarray(start, end));
      start = end + 1;
    }
    const rest = chunk.length - start;
    bytesRead += rest;
    if (rest === 0 || skipping) continue;
    if (pendingBytes + rest > maxLineBytes + 1) {
      skipping = true;
      pending = [];
      pendingBytes = 0;
    } else {
      // Copy: the stream may reuse its buffer for the next chunk.
      pending.push(Buffer.from(chunk.subarray(start)));
      pendingBytes += rest;
    }
  }
  if (pendingBytes > 0 || skipping) yield finish(Buffer.alloc(0));
}
