// Event messages as ready-made WebSocket frames, written straight to a connection's socket by live
// delivery and replay (see Gateway.deliver for why that keeps every connection's order).
import type { PublishedEvent } from '../events/filter.ts';

/** The message of an event for a connection whose matching subscriptions are `ids` (the inside of the JSON array). */
export function eventMessage(event: PublishedEvent, ids: string): string {
  return `{"subscriptionIds":["${ids}"],${event.json.slice(1)}`;
}

/**
 * The message as a complete WebSocket frame (RFC 6455 §5.2: FIN, text, unmasked as from a
 * server), built once per event and distinct `ids`: the envelope is serialized once (by the relay),
 * and every connection the same ids apply to is sent the same Buffer.
 */
export function eventFrame(event: PublishedEvent, ids: string): Buffer {
  let frames = event.frames;
  if (!frames) {
    frames = new Map();
    event.frames = frames;
  }
  let frame = frames.get(ids);
  if (!frame) {
    frame = textFrame(eventMessage(event, ids));
    frames.set(ids, frame);
  }
  return frame;
}

/** One unmasked text frame holding `text`. */
export function textFrame(text: string): Buffer {
  const length = Buffer.byteLength(text);
  const header = length < 126 ? 2 : length < 65_536 ? 4 : 10;
  const frame = Buffer.allocUnsafe(header + length);
  frame[0] = 0x81;
  if (length < 126) {
    frame[1] = length;
  } else if (length < 65_536) {
    frame[1] = 126;
    frame.writeUInt16BE(length, 2);
  } else {
    frame[1] = 127;
    frame.writeBigUInt64BE(BigInt(length), 2);
  }
  frame.write(text, header, 'utf8');
  return frame;
}
