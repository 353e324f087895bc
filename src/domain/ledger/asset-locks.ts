// Frozen and soulbound assets (issue 21) in the plans of crafts and trades: every leg that moves an
// asset to a wallet carries the store's `movable` guard (not frozen, not soulbound), every leg that
// burns it the `burnable` guard (not frozen: a soulbound quest item may be consumed), and a failed
// one answers 409 `/problems/asset-frozen` or `/problems/asset-soulbound`, naming the leg.
import { ConflictError } from '../errors.ts';
import { ZERO_ADDRESS } from './addresses.ts';
import type { Guard, GuardFailure } from './store/plan.ts';
import type { Leg } from './transfers.ts';

export class AssetFrozenError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/asset-frozen', 'Asset frozen');
  }
}

export class AssetSoulboundError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/asset-soulbound', 'Asset soulbound');
  }
}

/** The `movable` or `burnable` guard of each leg's asset (once per asset and kind). */
export function lockGuards(legs: Leg[]): Guard[] {
  const seen = new Set<string>();
  const guards: Guard[] = [];
  for (const leg of legs) {
    const kind = leg.to === ZERO_ADDRESS ? 'burnable' : 'movable';
    const key = `${kind} ${leg.asset.id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    guards.push({ kind, assetId: leg.asset.id });
  }
  return guards;
}

/** The problem of a failed `movable` or `burnable` guard, naming the first leg of its asset; else undefined. */
export function lockRefusal(failure: GuardFailure, legs: Leg[]): Error | undefined {
  const { guard, reason } = failure;
  if (guard.kind !== 'movable' && guard.kind !== 'burnable') return undefined;
  const leg = legs.find((l) => l.asset.id === guard.assetId);
  const label = leg?.place.label ?? '';
  if (reason === 'frozen')
    return new AssetFrozenError(
      `${label}${guard.assetId} is frozen by its studio: it can neither move nor be burned.`,
    );
  if (reason === 'soulbound')
    return new AssetSoulboundError(`${label}${guard.assetId} is soulbound: it cannot change hands.`);
  return new Error(`Unexpected ${guard.kind} failure (${reason}) for ${guard.assetId}.`);
}
