// The leases of webhook subscriptions (webhook_subscription.locked_by / locked_until): which
// unleased subscriptions have work (behind the relay, or a retry due), taking them (at most
// WEBHOOK_CONCURRENCY per instance, WEBHOOK_CONCURRENCY_PER_OWNER per account: 30.7), renewing what is
// held, letting go, and whose turn is over while others wait. One instance at a time holds a
// subscription and alone sends its deliveries and moves its cursor; a crashed instance's leases
// lapse and another instance carries on from the rows.
import type { Held } from './held.ts';
import type { DeliveryStore } from './store/index.ts';

/** Deliveries sent per lease before the subscription is let go, while others wait for a turn. */
const DELIVERIES_PER_LEASE = 100;

export class Leases {
  /** Unleased subscriptions are waiting while every slot is taken: let go after DELIVERIES_PER_LEASE. */
  contended = false;
  /** Accounts at their WEBHOOK_CONCURRENCY_PER_OWNER with more subscriptions waiting: theirs take turns too. */
  private waitingAccounts = new Set<string>();
  private readonly store: DeliveryStore;
  private readonly instance: string;
  private readonly leaseMs: number;
  private readonly concurrencyPerOwner: number;
  private readonly accountOf: (userId: string) => string | Promise<string>;
  private readonly lastEventId: () => number;
  /** What this instance holds (the dispatcher's). */
  private readonly held: ReadonlyMap<string, Held>;

  constructor(deps: {
    store: DeliveryStore;
    /** This instance (the lease holder's name). */
    instance: string;
    leaseMs: number;
    concurrencyPerOwner: number;
    accountOf: (userId: string) => string | Promise<string>;
    lastEventId: () => number;
    held: ReadonlyMap<string, Held>;
  }) {
    this.store = deps.store;
    this.instance = deps.instance;
    this.leaseMs = deps.leaseMs;
    this.concurrencyPerOwner = deps.concurrencyPerOwner;
    this.accountOf = deps.accountOf;
    this.lastEventId = deps.lastEventId;
    this.held = deps.held;
  }

  /** Extends every lease this instance holds. */
  async renew(): Promise<void> {
    await this.store.renew(this.instance, this.until());
  }

  /** Lets the subscription go. */
  async release(id: string): Promise<void> {
    await this.store.release(id, this.instance);
  }

  private until(): Date {
    return new Date(Date.now() + this.leaseMs);
  }

  /**
   * Takes the leases of up to `limit` of `candidates` that are still free (the store's `claim`).
   * 30.7: no account gets more than `concurrencyPerOwner` of the slots (the rest wait their turn).
   * The leased ones, each with its account.
   */
  async claim(candidates: string[], limit: number): Promise<Map<string, string>> {
    const slots = this.slotsByAccount();
    return this.store.claim(candidates, {
      instance: this.instance,
      until: this.until(),
      limit,
      admit: async (owner) => {
        const found = this.accountOf(owner);
        const account = typeof found === 'string' ? found : await found;
        const used = slots.get(account) ?? 0;
        if (used >= this.concurrencyPerOwner) return null;
        slots.set(account, used + 1);
        return account;
      },
    });
  }

  /** Others wait for its slot (any, or its account's) and it had its DELIVERIES_PER_LEASE. */
  turnOver(h: Held): boolean {
    return (this.contended || this.waitingAccounts.has(h.account)) && h.sent >= DELIVERIES_PER_LEASE;
  }

  /** Slots this instance's held subscriptions take, per account. */
  private slotsByAccount(): Map<string, number> {
    const slots = new Map<string, number>();
    for (const h of this.held.values()) slots.set(h.account, (slots.get(h.account) ?? 0) + 1);
    return slots;
  }

  /**
   * Owners whose account has every slot it may take: their subscriptions are not candidates (they
   * would crowd the others out of the candidates' list and then not be claimed).
   */
  private fullOwners(): string[] {
    const slots = this.slotsByAccount();
    return [
      ...new Set(
        [...this.held.values()]
          .filter((h) => (slots.get(h.account) ?? 0) >= this.concurrencyPerOwner)
          .map((h) => h.owner),
      ),
    ];
  }

  /**
   * Unleased subscriptions with work: behind the relay, or with a retry due; not those whose oldest
   * pending delivery waits for its retry (their next events wait behind it).
   */
  async waiting(limit: number): Promise<string[]> {
    const now = new Date();
    const full = this.fullOwners();
    this.waitingAccounts = await this.accountsWaiting(full, now);
    const behind = await this.store.behind({
      lastEventId: this.lastEventId(),
      now,
      limit,
      exceptOwners: full,
    });
    const dueIds = await this.store.due(now, 500);
    for (const h of this.held.values()) if (dueIds.has(h.id) && h.mode === 'fast') h.wantSlow = true;
    const behindIds = behind.filter((id) => !dueIds.has(id));
    const blocked = await this.store.retryLater(behindIds, now);
    return [...new Set([...dueIds, ...behindIds.filter((id) => !blocked.has(id))])].filter(
      (id) => !this.held.has(id),
    );
  }

  /** The accounts of `owners` (at their cap) with an unleased subscription behind. */
  private async accountsWaiting(owners: string[], now: Date): Promise<Set<string>> {
    if (owners.length === 0) return new Set();
    const waiting = await this.store.ownersBehind(owners, this.lastEventId(), now);
    const accountOfOwner = new Map([...this.held.values()].map((h) => [h.owner, h.account]));
    return new Set(waiting.map((owner) => accountOfOwner.get(owner) ?? owner));
  }
}
