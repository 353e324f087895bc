// Where webhooks may go: the service's shared SSRF rules (src/net/targets.ts), under the webhook
// settings' names (WEBHOOK_ALLOW_LOOPBACK, WEBHOOK_ALLOWED_NETWORKS).
export {
  addressAllowed,
  type Resolver,
  resolveTarget,
  type TargetPolicy,
  TargetRefusedError,
  targetUrlProblem as webhookUrlProblem,
} from '../net/targets.ts';
