// Written by hand in the generator's shape (the columns and index are the entities'; the fill is not
// something a schema diff makes): issue 37, a wallet's own history lists the NFTs minted to it
// (src/db/transfer-history.ts). `asset.minted_to` is the wallet a ledger NFT was minted to and
// `asset.mint_seq` where that mint sorts among the transfers; the ledger stores set both from now on.
// The NFTs minted before: minted to their first transfer's sender, else to their owner (they never
// moved), the rule their item history used (src/domain/ledger/transfers.ts); their place is not
// known exactly (no transfer counter value was drawn for them), so they take negative values in mint
// order (`seq - max(seq) - 1`): below every transfer, at the end of a wallet's history. Currencies
// and on-chain tokens (`chn_`, whose mints are transfer rows) keep nulls.
import { DualPlatformMigration } from '../dual-platform-migration.ts';

const fill = (q: (name: string) => string) =>
  `update ${q('asset')} set ${q('minted_to')} = coalesce((select t.${q('from_address')} from ${q('transfer')} t ` +
  `where t.${q('asset_id')} = ${q('asset')}.${q('id')} order by t.${q('seq')} asc limit 1), ${q('owner')}), ` +
  `${q('mint_seq')} = ${q('seq')} - (select max(a.${q('seq')}) from ${q('asset')} a) - 1 ` +
  `where ${q('kind')} = 'nft' and substr(${q('id')}, 1, 4) = 'nft_';`;

export class Migration20261129143100_nft_minted_to extends DualPlatformMigration {
  protected readonly statements = {
    sqlite: {
      up: [
        'alter table `asset` add column `minted_to` text null;',
        'alter table `asset` add column `mint_seq` bigint null;',
        'create index `asset_minted_to_mint_seq_index` on `asset` (`minted_to`, `mint_seq`);',
        fill((name) => `\`${name}\``),
      ],
      down: [
        'drop index `asset_minted_to_mint_seq_index`;',
        'alter table `asset` drop column `minted_to`;',
        'alter table `asset` drop column `mint_seq`;',
      ],
    },
    postgresql: {
      up: [
        'alter table "asset" add "minted_to" varchar(42) null, add "mint_seq" bigint null;',
        'create index "asset_minted_to_mint_seq_index" on "asset" ("minted_to", "mint_seq");',
        fill((name) => `"${name}"`),
      ],
      down: [
        'drop index "asset_minted_to_mint_seq_index";',
        'alter table "asset" drop column "minted_to", drop column "mint_seq";',
      ],
    },
  };
}
