// Token movements from the logs of the three standards. Logs are fetched raw (eth_getLogs filtered
// on the three event signatures) and decoded with viem's `decodeEventLog`, choosing the ERC-721 or
// ERC-20 form of `Transfer` by its topic count (same signature, the token id indexed in ERC-721).
import type { Address, Hex } from 'viem';
import { decodeEventLog, parseAbi, toEventSelector } from 'viem/utils';

const ERC20_TRANSFER = parseAbi(['event Transfer(address indexed from, address indexed to, uint256 value)']);
const ERC721_TRANSFER = parseAbi([
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
]);
const ERC1155_EVENTS = parseAbi([
  'event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)',
  'event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)',
]);

export const TRANSFER_TOPIC = toEventSelector(ERC20_TRANSFER[0]);
export const TRANSFER_SINGLE_TOPIC = toEventSelector(ERC1155_EVENTS[0]);
export const TRANSFER_BATCH_TOPIC = toEventSelector(ERC1155_EVENTS[1]);
export const TOPICS = [TRANSFER_TOPIC, TRANSFER_SINGLE_TOPIC, TRANSFER_BATCH_TOPIC];

export const ZERO_ADDRESS: Address = `0x${'0'.repeat(40)}`;

/** A log as eth_getLogs answers it (quantities in hex). */
export interface RpcLog {
  address: Address;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  logIndex: Hex;
  removed?: boolean;
}

/** One movement of one token: a row of `chain_transfer`. `tokenId` is '' for ERC-20. */
export interface Movement {
  event: 'Transfer' | 'TransferSingle' | 'TransferBatch';
  contract: Address;
  blockNumber: bigint;
  blockHash: Hex;
  txHash: Hex;
  logIndex: number;
  batchIndex: number;
  tokenId: string;
  from: Address;
  to: Address;
  amount: bigint;
}

const lower = (address: unknown) => String(address).toLowerCase() as Address;

/**
 * The movements of raw logs, in block and log order (a batch as one movement per id). A log that
 * does not decode (a non-standard contract emitting the same signature) is skipped and counted.
 */
export function movementsOf(logs: RpcLog[]): { movements: Movement[]; undecodable: number } {
  const movements: Movement[] = [];
  let undecodable = 0;
  const sorted = [...logs]
    .filter((log) => !log.removed)
    .sort((a, b) => {
      const block = BigInt(a.blockNumber) - BigInt(b.blockNumber);
      return block === 0n ? Number(BigInt(a.logIndex) - BigInt(b.logIndex)) : block < 0n ? -1 : 1;
    });
  for (const log of sorted) {
    const base = {
      contract: lower(log.address),
      blockNumber: BigInt(log.blockNumber),
      blockHash: log.blockHash,
      txHash: log.transactionHash,
      logIndex: Number(BigInt(log.logIndex)),
    };
    try {
      const topics = log.topics as [Hex, ...Hex[]];
      if (topics[0] === TRANSFER_TOPIC && topics.length === 4) {
        const { args } = decodeEventLog({ abi: ERC721_TRANSFER, topics, data: log.data, strict: true });
        movements.push({
          event: 'Transfer',
          ...base,
          batchIndex: 0,
          tokenId: args.tokenId.toString(),
          from: lower(args.from),
          to: lower(args.to),
          amount: 1n,
        });
      } else if (topics[0] === TRANSFER_TOPIC) {
        const { args } = decodeEventLog({ abi: ERC20_TRANSFER, topics, data: log.data, strict: true });
        movements.push({
          event: 'Transfer',
          ...base,
          batchIndex: 0,
          tokenId: '',
          from: lower(args.from),
          to: lower(args.to),
          amount: args.value,
        });
      } else {
        const decoded = decodeEventLog({ abi: ERC1155_EVENTS, topics, data: log.data, strict: true });
        const from = lower(decoded.args.from);
        const to = lower(decoded.args.to);
        if (decoded.eventName === 'TransferSingle') {
          movements.push({
            event: 'TransferSingle',
            ...base,
            batchIndex: 0,
            tokenId: decoded.args.id.toString(),
            from,
            to,
            amount: decoded.args.value,
          });
        } else {
          const { ids, values } = decoded.args;
          if (ids.length !== values.length) throw new Error('ids and values differ in length');
          ids.forEach((id, index) => {
            movements.push({
              event: 'TransferBatch',
              ...base,
              batchIndex: index,
              tokenId: id.toString(),
              from,
              to,
              amount: values[index] ?? 0n,
            });
          });
        }
      }
    } catch {
      undecodable += 1;
    }
  }
  return { movements, undecodable };
}
