/**
 * `npm run db:check`: verifies the ledger's invariants on the configured database (DATABASE_URL, or
 * SQLITE_PATH / DATA_DIR), read-only; run it on a restored backup before serving from it.
 *
 * - every currency's total supply (its row in asset_supply) equals the sum of its balances, no balance
 *   is negative, and only currencies have a supply row;
 * - every NFT has exactly one holder, holding 1, who is its recorded owner; a burned NFT (owner the
 *   zero address) has none;
 * - the outbox's event ids have no gap between the oldest retained event and the newest (retention
 *   removes the oldest events only, so anything missing in between is lost events). On SQLite an id
 *   is taken inside the writing transaction, so a gap is a violation. On PostgreSQL a sequence never
 *   gives an id back: a write that took an id and then rolled back (a dropped connection, a killed
 *   instance) leaves a gap that was never an event, so gaps are listed as such, not as violations.
 *   Ids skipped by a restore (`npm run db:restored`) are no gap on either database.
 * - PostgreSQL: no NFT has an event past its row of asset_last_event, and no wallet one (as `from` or
 *   `to`) past its row of wallet_last_event (their event reads stop there);
 * - the audit trail's hash chain holds (as `npm run audit:verify` checks it): no entry removed,
 *   altered or reordered.
 *
 * Exit codes: 0 all hold; 1 a violation (each printed); 78 configuration.
 */
import { openDatabase } from '../db/database.ts';
import { verifyAudit } from '../domain/audit.ts';
import { ZERO_ADDRESS } from '../domain/ledger/addresses.ts';
import { walletNewestEventsSql } from '../events/reads.ts';
import { RESTORE_MARK_PREFIX, restoreGapsOf } from '../events/restores.ts';
import { configOrExit } from './config-or-exit.ts';

const config = configOrExit();
/** Rows read at once: holdings of a currency, NFTs (and their holdings) per statement. */
const PAGE = 5_000;

const opened = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: config.sqlitePath });
const orm = opened.orm;
const violations: string[] = [];
const facts: string[] = [];
try {
  const connection = orm.em.getConnection();
  const rows = <T>(sql: string, parameters: unknown[] = []) => connection.execute<T[]>(sql, parameters);

  // Amounts are uint256 (text on SQLite, numeric on PostgreSQL): summed as BigInt, never as floats.
  // A currency's supply is its row in asset_supply (issue 34 item 5); an NFT has none. A database
  // not migrated that far yet (a restored backup of an older release, checked before the service
  // migrates it) keeps it in asset.total_supply.
  const supplyTable = (
    await rows<{ found: unknown }>(
      config.databaseUrl
        ? "select to_regclass('asset_supply') is not null as found"
        : "select count(*) as found from sqlite_master where type = 'table' and name = 'asset_supply'",
    )
  ).some((row) => Number(row.found) > 0);
  const currencies = await rows<{ id: string; total_supply: string | null }>(
    supplyTable
      ? `select a.id, s.total_supply from asset a left join asset_supply s on s.asset_id = a.id where a.kind = 'fungible' order by a.id`
      : `select id, total_supply from asset where kind = 'fungible' order by id`,
  );
  // Every read below is paged (PAGE rows at most in memory): at 1,000,000 holdings the whole-table
  // reads this command made before ran out of the default 4 GB heap (issue 34's scale benchmark).
  // A currency's balances, page by page along the holdings of the currency (holding_asset_id_index:
  // on SQLite the index ends with the row id, so each page is a range of it).
  const sums = new Map<string, bigint>();
  for (const currency of currencies) {
    let sum = 0n;
    for (let after = 0; ; ) {
      const page = await rows<{ id: number | string; wallet: string; balance: string }>(
        `select h.id, h.wallet, h.balance from holding h where h.asset_id = ? and h.id > ? order by h.id limit ${PAGE}`,
        [currency.id, after],
      );
      for (const row of page) {
        const balance = BigInt(String(row.balance));
        if (balance < 0n)
          violations.push(`currency ${currency.id}: negative balance ${balance} at ${row.wallet}`);
        sum += balance;
      }
      if (page.length < PAGE) break;
      after = Number(page[page.length - 1].id);
    }
    sums.set(currency.id, sum);
  }
  for (const currency of currencies) {
    const supply = BigInt(String(currency.total_supply ?? '0'));
    const sum = sums.get(currency.id) ?? 0n;
    if (supply !== sum)
      violations.push(`currency ${currency.id}: total supply ${supply} != sum of balances ${sum}`);
  }
  const strays = supplyTable
    ? await rows<{ asset_id: string }>(
        `select s.asset_id from asset_supply s join asset a on a.id = s.asset_id where a.kind <> 'fungible' order by s.asset_id`,
      )
    : [];
  for (const stray of strays) violations.push(`asset ${stray.asset_id}: a supply row, but it is no currency`);
  facts.push(`${currencies.length} currencies: supply = sum of balances`);

  // NFTs a page at a time in id order (the asset's primary key), each page's holdings by asset id.
  let nfts = 0;
  let burned = 0;
  for (let after = ''; ; ) {
    const page = await rows<{ id: string; owner: string | null }>(
      `select id, owner from asset where kind = 'nft' and id > ? order by id limit ${PAGE}`,
      [after],
    );
    if (page.length === 0) break;
    const holders = await rows<{ asset_id: string; wallet: string; balance: string }>(
      `select asset_id, wallet, balance from holding where asset_id in (${page.map(() => '?').join(', ')})`,
      page.map((nft) => nft.id),
    );
    const byNft = new Map<string, { wallet: string; balance: bigint }[]>();
    for (const row of holders) {
      const balance = BigInt(String(row.balance));
      if (balance === 0n) continue;
      const held = byNft.get(row.asset_id) ?? [];
      held.push({ wallet: row.wallet, balance });
      byNft.set(row.asset_id, held);
    }
    for (const nft of page) {
      const held = byNft.get(nft.id) ?? [];
      // A burned NFT (by its holder, a craft, or on chain) is owned by the zero address and held by nobody.
      if (nft.owner === ZERO_ADDRESS && held.length === 0) {
        burned++;
        continue;
      }
      if (held.length !== 1 || held[0].balance !== 1n || held[0].wallet !== nft.owner)
        violations.push(
          `nft ${nft.id}: owner ${nft.owner} but held by ${held.map((h) => `${h.wallet} (${h.balance})`).join(', ') || 'nobody'}`,
        );
    }
    nfts += page.length;
    if (page.length < PAGE) break;
    after = page[page.length - 1].id;
  }
  facts.push(
    `${nfts} NFTs: one owner each${burned > 0 ? ` (${burned} burned: owner the zero address, held by nobody)` : ''}`,
  );

  const [range] = await rows<{ first: string | null; last: string | null; count: string }>(
    'select min(id) as first, max(id) as last, count(*) as count from outbox_event',
  );
  const gaps = await rows<{ after: string; next: string }>(
    'select prev as after, id as next from (select id, lag(id) over (order by id) as prev from outbox_event) t where id - prev > 1 order by id',
  );
  // Ids a restore skipped (npm run db:restored) are no events: not missing.
  const restores = restoreGapsOf(
    await rows<{ name: string; value: string }>(
      `select name, value from sequence_counter where name like '${RESTORE_MARK_PREFIX}%'`,
    ),
  );
  const span = (first: number, last: number) => (first === last ? `${first}` : `${first}..${last}`);
  const missing = gaps.flatMap((gap) => {
    const holes: [number, number][] = [[Number(gap.after) + 1, Number(gap.next) - 1]];
    for (const restore of restores) {
      const [first, last] = holes.pop() as [number, number];
      if (restore.after + 1 > last || restore.next - 1 < first) holes.push([first, last]);
      else {
        if (first <= restore.after) holes.push([first, restore.after]);
        if (restore.next <= last) holes.push([restore.next, last]);
      }
    }
    return holes.map(([first, last]) => span(first, last));
  });
  if (!config.databaseUrl) for (const ids of missing) violations.push(`outbox: event ids ${ids} missing`);
  facts.push(
    range.first === null
      ? 'outbox: empty'
      : `outbox: ${range.count} events, ids ${range.first}..${range.last}${missing.length ? '' : ' without gaps'}`,
  );
  for (const restore of restores)
    facts.push(`event ids ${span(restore.after + 1, restore.next - 1)} skipped by a restore`);
  if (config.databaseUrl && missing.length > 0)
    facts.push(`outbox ids never committed (rolled-back writes): ${missing.join(', ')}`);

  // Issue 34: an NFT's event read stops at its newest event as asset_last_event holds it
  // (src/events/reads.ts), so an event of the NFT past it would never be read. (No row: no bound,
  // every event read; SQLite writes none; a database not migrated that far has no such table.)
  const lastEvents =
    config.databaseUrl &&
    (await rows<{ found: boolean }>("select to_regclass('asset_last_event') is not null as found"))[0].found;
  if (lastEvents) {
    const behind = await rows<{ id: string; last: string; newest: string }>(
      `select b.asset_id as id, b.event_id as last, max(e.id) as newest from asset_last_event b
        join outbox_event e on e.asset_id = b.asset_id group by b.asset_id, b.event_id
        having max(e.id) > b.event_id order by b.asset_id limit 20`,
    );
    for (const nft of behind)
      violations.push(`nft ${nft.id}: newest event ${nft.newest} past its asset_last_event ${nft.last}`);
  }
  // The same for a wallet's `from` and `to` branches (wallet_last_event): one pass over the log.
  const walletBounds =
    config.databaseUrl &&
    (await rows<{ found: boolean }>("select to_regclass('wallet_last_event') is not null as found"))[0].found;
  if (walletBounds) {
    const behind = await rows<{ wallet: string; last: string; newest: string }>(
      `select x.wallet, b.event_id as last, x.id as newest from (${walletNewestEventsSql()}) x
        join wallet_last_event b on b.wallet = x.wallet where x.id > b.event_id order by x.wallet limit 20`,
    );
    for (const wallet of behind)
      violations.push(
        `wallet ${wallet.wallet}: newest event ${wallet.newest} past its wallet_last_event ${wallet.last}`,
      );
  }

  const audit = await verifyAudit(orm);
  for (const problem of audit.problems) violations.push(`audit trail: ${problem}`);
  if (audit.problems.length === 0)
    facts.push(`audit trail: ${audit.entries} entries chained, tip ${audit.tip.seq} ${audit.tip.hash}`);
} finally {
  await opened.close();
}

const where = config.databaseUrl ? 'postgresql' : config.sqlitePath;
if (violations.length > 0) {
  console.error(`${where}: ${violations.length} violation(s) of the ledger's invariants:`);
  for (const violation of violations) console.error(`  ${violation}`);
  process.exitCode = 1;
} else {
  console.log(`${where}: ok; ${facts.join('; ')}`);
}
