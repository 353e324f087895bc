// Reads with a streaming replica (issue 34.6): the uncached hot reads (a wallet of 20 holdings, an
// NFT) against one service on a primary alone and one on the same primary with a streaming replica
// (DATABASE_READ_URLS), rounds alternating with Koa hello, in the same run. The primary and the
// replica are made here (scripts/lib/pg-replica.ts): the machine's server allows no replication.
// On one machine the replica shares the cores with everything else: the figures show what the routing
// costs and how much of the reading moves off the primary, not the added capacity of another server.
import { createUser } from '../lib/api.ts';
import { startReplicaPair } from '../lib/pg-replica.ts';
import { startService } from '../lib/service.ts';
import { startHello } from './lib/hello.ts';
import { walletWith20Holdings } from './lib/hot-wallet.ts';
import { type LoadOptions, runLoad, warmUp } from './lib/load.ts';
import type { BenchOptions } from './lib/options.ts';
import { record } from './lib/record.ts';
import { heading } from './lib/report.ts';
import { ratiosInRounds, roundFigures } from './lib/rounds.ts';

/** Routed reads by target from a service's /metrics (db_routed_reads_total). */
async function routed(baseUrl: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const counts: Record<string, number> = {};
  for (const [, target, value] of text.matchAll(/^db_routed_reads_total\{target="([^"]+)"\} (\S+)$/gm))
    counts[target] = Number(value);
  return counts;
}

export async function replicaReads(options: BenchOptions): Promise<void> {
  const pair = await startReplicaPair();
  const hello = await startHello();
  const services: Awaited<ReturnType<typeof startService>>[] = [];
  try {
    await pair.onPrimary('create database gats');
    const database = { DATABASE_URL: pair.primaryUrl('gats') };
    const primaryOnly = await startService('postgres', database);
    services.push(primaryOnly);
    const withReplica = await startService('postgres', {
      ...database,
      DATABASE_READ_URLS: pair.replicaUrl('gats'),
      // One issuer and one secret for both (a token of one is taken by the other), as instances of
      // one deployment.
      PUBLIC_URL: primaryOnly.baseUrl,
      SECRET_KEY: primaryOnly.env.SECRET_KEY,
    });
    services.push(withReplica);
    // Roles are set in the database the services run on (the pair's primary, not the scratch one).
    primaryOnly.setRole = async (userId, role) => {
      if (!/^[\w-]+$/.test(userId) || !/^\w+$/.test(role)) throw new Error('unexpected id or role');
      await pair.onPrimary(`update users set role = '${role}' where id = '${userId}'`, 'gats');
    };
    const { owner, nftId } = await walletWith20Holdings(primaryOnly);
    // A reader that wrote nothing: its reads may go to the replica at once.
    const reader = await createUser(primaryOnly, 'player');
    const load = (label: string, url: string, pid: number): LoadOptions => ({
      label,
      url,
      headers: url.startsWith(hello.baseUrl) ? undefined : { ...reader.headers, 'cache-control': 'no-cache' },
      connections: options.connections,
      durationSeconds: options.durationSeconds,
      serverPid: pid,
    });
    const helloLoad = load('Koa hello GET /', `${hello.baseUrl}/`, hello.pid);
    const targets = [primaryOnly, withReplica].flatMap((service, index) => {
      const where = index === 0 ? 'primary only' : 'primary + replica';
      return [
        load(
          `wallet (20), no-cache, ${where}`,
          `${service.baseUrl}/wallets/${owner.wallet}/assets?limit=20`,
          service.pid,
        ),
        load(`asset (NFT), no-cache, ${where}`, `${service.baseUrl}/assets/${nftId}`, service.pid),
      ];
    });
    heading('reads, primary only against primary + streaming replica (postgres)', {
      connections: options.connections,
      'seconds per run': options.durationSeconds,
      rounds: options.rounds,
    });
    for (const target of [helloLoad, ...targets]) await warmUp(target);
    const before = await routed(withReplica.baseUrl);
    const figures = await ratiosInRounds(
      options.rounds,
      () => runLoad(helloLoad),
      targets.map((target) => ({ label: target.label, run: () => runLoad(target) })),
    );
    const after = await routed(withReplica.baseUrl);
    const delta = (target: string) => (after[target] ?? 0) - (before[target] ?? 0);
    const total = delta('primary') + delta('replica-1');
    console.log(
      `primary + replica: ${delta('replica-1')} of ${total} routed reads ran on the replica` +
        ` (${total > 0 ? ((100 * delta('replica-1')) / total).toFixed(1) : '0'}%)`,
    );
    for (const [index, figure] of figures.entries())
      record({
        benchmark: 'reads',
        scenario: `${targets[index].label}, postgres, median of ${options.rounds} rounds`,
        ...roundFigures(figure),
      });
  } finally {
    for (const service of services) await service.stop();
    await hello.stop();
    pair.close();
  }
}
