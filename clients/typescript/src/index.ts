// The browser-safe entry of @gats/client (no Node-only API: checked by clients/typescript/tsconfig.json).
export { backoffDelay } from './backoff.ts';
export * from './event-log.ts';
export * from './events.ts';
export * from './problem.ts';
export * from './rest.ts';
export * from './webhooks.ts';
