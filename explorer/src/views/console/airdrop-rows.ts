// Reads an airdrop list (pasted, or a CSV file's text) into the items of POST
// /api/v1/collections/{id}/mint/batch, with one clear error per bad row. Nothing here calls the API.
//
// Format: comma-separated values, one mint per line; quotes ("a, b") and doubled quotes ("say ""hi""")
// as in RFC 4180. A first line naming the columns is optional: `wallet` first, then for NFTs `name`,
// `image`, `description` and any other column as an attribute (its header is the trait), for a
// currency `amount`. Without that line the columns are `wallet,name` (NFTs) or `wallet,amount`.
import type { Schemas } from '../../api/client.ts';
import { checkAddress } from '../../ui/address.ts';
import { attributeValue, ZERO_ADDRESS } from '../../ui/format.ts';

type MintBatchItem = Schemas['MintBatchItem'];

export type AirdropKind =
  | { kind: 'nft'; defaultImage: string; creator: string }
  | { kind: 'currency'; currency: string; decimals: number };

export interface AirdropRow {
  /** The line in the list, from 1 (the header line counts). */
  line: number;
  /** The values as read, for the preview. */
  cells: string[];
  item: MintBatchItem | null;
  error: string | null;
}

export interface AirdropList {
  columns: string[];
  rows: AirdropRow[];
}

/** RFC 4180 records: fields split on commas outside quotes, records on line ends outside quotes. */
export function parseCsv(text: string): { line: number; cells: string[] }[] {
  const records: { line: number; cells: string[] }[] = [];
  let cells: string[] = [];
  let field = '';
  let quoted = false;
  let line = 1;
  let recordLine = 1;
  const endRecord = () => {
    cells.push(field);
    if (cells.some((cell) => cell.trim() !== ''))
      records.push({ line: recordLine, cells: cells.map((cell) => cell.trim()) });
    cells = [];
    field = '';
  };
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index];
    if (quoted) {
      if (char === '"' && text[index + 1] === '"') {
        field += '"';
        index += 1;
      } else if (char === '"') quoted = false;
      else {
        if (char === '\n') line += 1;
        field += char;
      }
    } else if (char === '"' && field.trim() === '') {
      field = '';
      quoted = true;
    } else if (char === ',') {
      cells.push(field);
      field = '';
    } else if (char === '\n' || char === '\r') {
      if (char === '\r' && text[index + 1] === '\n') index += 1;
      endRecord();
      line += 1;
      recordLine = line;
    } else field += char;
  }
  endRecord();
  return records;
}

const AMOUNT = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
const IMAGE = /^(https?|ipfs):\/\/\S+$/;

function walletError(raw: string): string | { address: string } {
  if (raw === '') return 'No wallet: the first value of a row is the wallet that receives.';
  const check = checkAddress(raw);
  if (check.state !== 'valid')
    return `Wallet "${raw}": ${check.state === 'invalid' ? check.message : 'empty'}`;
  if (check.address === ZERO_ADDRESS) return 'The zero address cannot receive a mint.';
  return { address: check.address };
}

function nftRow(
  values: Record<string, string>,
  attributes: string[],
  kind: Extract<AirdropKind, { kind: 'nft' }>,
): MintBatchItem | string {
  const name = values.name ?? '';
  if (name === '') return 'No name: each NFT needs one (the second value).';
  if (name.length > 200) return `The name has ${name.length} characters; at most 200.`;
  const image = values.image || kind.defaultImage;
  if (!IMAGE.test(image)) return `Image "${image}" is not an http(s):// or ipfs:// address.`;
  const description = values.description ?? '';
  return {
    to: '',
    nft: {
      name,
      ...(description ? { description } : {}),
      metadata: {
        image,
        creator: kind.creator,
        attributes: attributes
          .filter((trait) => (values[trait] ?? '') !== '')
          .map((trait) => ({ trait_type: trait, value: attributeValue(values[trait]) })),
      },
    },
  };
}

function currencyRow(
  values: Record<string, string>,
  kind: Extract<AirdropKind, { kind: 'currency' }>,
): MintBatchItem | string {
  const amount = values.amount ?? '';
  if (!AMOUNT.test(amount)) return `Amount "${amount}" is not a decimal number such as 100 or 2.5.`;
  if (/^0(\.0*)?$/.test(amount)) return 'The amount must be more than zero.';
  const decimals = amount.split('.')[1]?.length ?? 0;
  if (decimals > kind.decimals)
    return `Amount ${amount} has ${decimals} decimals; ${kind.currency} has ${kind.decimals}.`;
  return { to: '', currency: kind.currency, amount };
}

export function readAirdrop(text: string, kind: AirdropKind): AirdropList {
  const records = parseCsv(text);
  const first = records[0]?.cells.map((cell) => cell.toLowerCase());
  const hasHeader = first?.[0] === 'wallet' || first?.[0] === 'to';
  const columns =
    hasHeader && records[0]
      ? records[0].cells.map((cell, index) => (index === 0 ? 'wallet' : cell))
      : kind.kind === 'nft'
        ? ['wallet', 'name']
        : ['wallet', 'amount'];
  const known = new Set(['wallet', 'name', 'image', 'description', 'amount']);
  const attributes = columns.slice(1).filter((column) => !known.has(column.toLowerCase()));
  const rows = (hasHeader ? records.slice(1) : records).map(({ line, cells }): AirdropRow => {
    const fail = (error: string): AirdropRow => ({ line, cells, item: null, error });
    if (cells.length > columns.length)
      return fail(
        `${cells.length} values, but ${columns.length} columns (${columns.join(', ')}): a comma too many? Quote a value that has one.`,
      );
    const values: Record<string, string> = {};
    columns.forEach((column, index) => {
      values[known.has(column.toLowerCase()) ? column.toLowerCase() : column] = cells[index] ?? '';
    });
    const wallet = walletError(values.wallet ?? '');
    if (typeof wallet === 'string') return fail(wallet);
    const item = kind.kind === 'nft' ? nftRow(values, attributes, kind) : currencyRow(values, kind);
    if (typeof item === 'string') return fail(item);
    return { line, cells, item: { ...item, to: wallet.address }, error: null };
  });
  return { columns, rows };
}
