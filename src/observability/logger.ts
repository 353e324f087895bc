import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout. Credentials never reach a log line: the request logger records the
 * path without its query string and these redaction paths cover anything that slips into an object.
 * `destination` (stdout by default) lets tests read what would be logged.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    base: { service: 'game-asset-tracking' },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: [
        'password',
        '*.password',
        'headers.authorization',
        'headers["x-api-key"]',
        'headers.cookie',
        'access_token',
        'refresh_token',
        'key',
        'clientSecret',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
