// A lean WebSocket client for load generation (RFC 6455): the handshake and frames written and read
// straight on a TCP socket whose reads land in one buffer shared by every client of the process
// (net's `onread`), with no stream machinery and no copy of a message that arrives whole. A client
// library spends several microseconds of JavaScript per message, which at 200,000 messages a second
// is a whole core of the load generator: time stolen from the service under test on a small
// machine, and a queue whose wait is added to every latency measured. This client does what a
// subscriber needs and nothing more: text messages, pongs to pings, the close handshake, and the
// close code of an unexpected close. Checked against `ws`'s server in test/unit/bench/lean-ws.test.ts.
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import net from 'node:net';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** Every client's reads land here, one read at a time (the callback consumes it synchronously). */
const SHARED_READ_BUFFER = Buffer.allocUnsafe(256 * 1024);
const HEAD_END = Buffer.from('\r\n\r\n');
const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;
/** RFC 6455 §7.1.5: a close frame without a status code. */
const NO_STATUS = 1005;
/** RFC 6455 §7.1.5: a connection that ended without a close frame. */
const ABNORMAL = 1006;

export interface LeanHandlers {
  /**
   * A text (or binary) message: its payload is `data[start..end)`, valid only during the call (the
   * buffer is reused by the next read of any client).
   */
  message(data: Buffer, start: number, end: number): void;
  /**
   * The connection ended; `code` is the close frame's status, 1005 if it had none, 1006 if no close
   * frame came.
   */
  close(code: number): void;
}

export interface LeanWebSocket {
  /** Sends a text message (masked, as a client must). */
  send(text: string): void;
  /** Ends the connection at once, without the close handshake. */
  terminate(): void;
  readonly closed: boolean;
}

/**
 * Connects to `url` (ws://host:port/path) with extra handshake `headers`; resolves once the server
 * accepted the upgrade, rejects when it refused it (with the HTTP status) or the connection failed.
 */
export function connectLean(
  url: string,
  headers: Record<string, string>,
  handlers: LeanHandlers,
): Promise<LeanWebSocket> {
  const target = new URL(url);
  if (target.protocol !== 'ws:') throw new Error(`only ws:// URLs are supported: ${url}`);
  const key = randomBytes(16).toString('base64');
  const accept = createHash('sha1')
    .update(key + GUID)
    .digest('base64');

  return new Promise((resolve, reject) => {
    let opened = false;
    let closed = false;
    let closeCode = ABNORMAL;
    /** Bytes of a frame (or of the handshake's answer) that arrived in part, kept for the next read. */
    let pending: Buffer | null = null;
    /** A fragmented message's payload so far (servers seldom fragment; supported all the same). */
    let fragments: Buffer[] | null = null;

    const finish = (code: number) => {
      if (closed) return;
      closed = true;
      if (opened) handlers.close(code);
    };

    const sendFrame = (opcode: number, payload: Buffer) => {
      if (closed || socket.destroyed) return;
      const length = payload.length;
      const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
      const frame = Buffer.allocUnsafe(header + 4 + length);
      frame[0] = 0x80 | opcode;
      if (length < 126) {
        frame[1] = 0x80 | length;
      } else if (length < 65_536) {
        frame[1] = 0x80 | 126;
        frame.writeUInt16BE(length, 2);
      } else {
        frame[1] = 0x80 | 127;
        frame.writeBigUInt64BE(BigInt(length), 2);
      }
      const mask = frame.subarray(header, header + 4);
      randomFillSync(mask);
      for (let index = 0; index < length; index++)
        frame[header + 4 + index] = payload[index] ^ mask[index & 3];
      socket.write(frame);
    };

    const client: LeanWebSocket = {
      send: (text) => sendFrame(OP_TEXT, Buffer.from(text, 'utf8')),
      terminate: () => {
        finish(ABNORMAL);
        socket.destroy();
      },
      get closed() {
        return closed;
      },
    };

    /** Handles one complete frame; returns false once the connection is closing. */
    const frame = (fin: boolean, opcode: number, data: Buffer, start: number, end: number): boolean => {
      switch (opcode) {
        case OP_TEXT:
        case OP_BINARY:
          if (fin) handlers.message(data, start, end);
          else fragments = [Buffer.from(data.subarray(start, end))];
          return true;
        case OP_CONTINUATION: {
          if (!fragments) return protocolError('a continuation frame with no message');
          fragments.push(Buffer.from(data.subarray(start, end)));
          if (fin) {
            const whole = Buffer.concat(fragments);
            fragments = null;
            handlers.message(whole, 0, whole.length);
          }
          return true;
        }
        case OP_PING:
          sendFrame(OP_PONG, Buffer.from(data.subarray(start, end)));
          return true;
        case OP_PONG:
          return true;
        case OP_CLOSE: {
          closeCode = end - start >= 2 ? data.readUInt16BE(start) : NO_STATUS;
          // Answer with the same code and end (RFC 6455 §5.5.1).
          sendFrame(OP_CLOSE, Buffer.from(data.subarray(start, Math.min(end, start + 2))));
          socket.end();
          finish(closeCode);
          return false;
        }
        default:
          return protocolError(`unknown opcode ${opcode}`);
      }
    };

    const protocolError = (reason: string): boolean => {
      socket.destroy(new Error(`WebSocket protocol error: ${reason}`));
      return false;
    };

    /** Consumes every complete frame of `data[start..end)`; keeps a partial one in `pending`. */
    const frames = (data: Buffer, start: number, end: number) => {
      let at = start;
      while (at < end && !closed) {
        if (end - at < 2) break;
        const first = data[at];
        const second = data[at + 1];
        if (second & 0x80) {
          protocolError('a masked frame from the server');
          return;
        }
        let length = second & 0x7f;
        let header = 2;
        if (length === 126) {
          if (end - at < 4) break;
          length = data.readUInt16BE(at + 2);
          header = 4;
        } else if (length === 127) {
          if (end - at < 10) break;
          length = Number(data.readBigUInt64BE(at + 2));
          header = 10;
        }
        if (end - at < header + length) break;
        const payload = at + header;
        if (!frame((first & 0x80) !== 0, first & 0x0f, data, payload, payload + length)) return;
        at = payload + length;
      }
      pending = at < end ? Buffer.from(data.subarray(at, end)) : null;
    };

    /** The server's answer to the upgrade; returns where the frames start (-1: not all here yet). */
    const handshake = (data: Buffer, end: number): number => {
      const headEnd = data.indexOf(HEAD_END);
      if (headEnd < 0 || headEnd >= end) return -1;
      const head = data.toString('latin1', 0, headEnd);
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      if (status !== 101) {
        reject(new Error(`handshake refused: ${status}`));
        socket.destroy();
        return -1;
      }
      const answer = /\r\nsec-websocket-accept:\s*(\S+)/i.exec(head)?.[1];
      if (answer !== accept) {
        reject(new Error('handshake answered with a wrong Sec-WebSocket-Accept'));
        socket.destroy();
        return -1;
      }
      opened = true;
      resolve(client);
      return headEnd + HEAD_END.length;
    };

    const socket = net.connect({
      host: target.hostname,
      port: Number(target.port || 80),
      noDelay: true,
      onread: {
        buffer: SHARED_READ_BUFFER,
        callback(nread: number, buffer: Buffer): boolean {
          // A partial frame from the last read comes first: join it with this read.
          let data = buffer;
          let end = nread;
          if (pending) {
            data = Buffer.concat([pending, buffer.subarray(0, nread)]);
            end = data.length;
            pending = null;
          }
          if (!opened) {
            const start = handshake(data, end);
            if (start < 0) {
              if (!socket.destroyed) pending = Buffer.from(data.subarray(0, end));
              return true;
            }
            frames(data, start, end);
          } else {
            frames(data, 0, end);
          }
          return true;
        },
      },
    });
    socket.once('connect', () => {
      const extra = Object.entries(headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('');
      socket.write(
        `GET ${target.pathname}${target.search} HTTP/1.1\r\nHost: ${target.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
      );
    });
    socket.on('error', (error) => {
      if (!opened) reject(error);
    });
    socket.on('close', () => {
      if (!opened) reject(new Error('the connection closed before the handshake ended'));
      finish(closeCode);
    });
  });
}
