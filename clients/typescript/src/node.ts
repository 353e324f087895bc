// The Node entry of @gats/client: everything of the browser entry, and a WebSocket factory that
// sends headers on the handshake (`Authorization` and `X-API-Key`, no ticket), through `ws`:
//   streamEvents({ client, auth: 'headers', webSocket: nodeWebSocket, onEvent })
import WebSocket from 'ws';
import type { WebSocketFactory } from './events.ts';

export * from './index.ts';

export const nodeWebSocket: WebSocketFactory = (url, headers) => new WebSocket(url, { headers });
