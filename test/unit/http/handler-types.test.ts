// The contract's types reach every boundary. `npm run typecheck` checks these lines: a marked
// (ts-expect-error) line that compiles fails it. They also run as a plain test.
import type { Context } from 'koa';
import { describe, expect, it } from 'vitest';
import type { components } from '../../../generated/openapi/types.ts';
import type { AssetView } from '../../../src/domain/ledger/views.ts';
import { type RequestBody, respond, type TypedRequest, typedHandlers } from '../../../src/http/handler.ts';
import type { ClientMessage, ServerMessage } from '../../../src/ws/protocol.ts';

const asset: AssetView = {
  id: 'gold',
  kind: 'fungible',
  name: 'Gold',
  description: null,
  metadata: { image: 'https://example.com/gold.png', attributes: [], creator: 'Studio' },
  collection: 'dawn-quest',
  owner: null,
  symbol: 'GOLD',
  decimals: 2,
  totalSupply: '0',
  maxSupply: null,
  createdAt: '2026-11-22T09:30:00.000Z',
};

describe('types from the contract', () => {
  it('type a handler answer by operation and status', () => {
    const ctx = { status: 404, body: undefined } as Pick<Context, 'status' | 'body'> as Context;
    respond(ctx, 'getAsset', 200, asset);
    expect(ctx.status).toBe(200);
    expect(ctx.body).toBe(asset);
    // @ts-expect-error: a misspelled field of the contract's Asset
    respond(ctx, 'getAsset', 200, { ...asset, colection: 'dawn-quest' });
    // @ts-expect-error: getAsset declares no 201 answer
    respond(ctx, 'getAsset', 201, asset);
    // @ts-expect-error: decimals is a number in the contract
    const wrongType: AssetView = { ...asset, decimals: '2' };
    expect(wrongType.decimals).toBe('2');
  });

  it('type request bodies, path and query by operation', () => {
    const transfer: RequestBody<'createTransfer'> = { assetId: 'gold', from: '0x1', to: '0x2', amount: '1' };
    expect(transfer.amount).toBe('1');
    // @ts-expect-error: TransferRequest has no `value`
    const misspelled: RequestBody<'createTransfer'> = { assetId: 'gold', from: '0x1', to: '0x2', value: '1' };
    expect(misspelled).toBeDefined();
    const handlers = typedHandlers<'listTransfers' | 'getTransfer'>({
      listTransfers(request: TypedRequest<'listTransfers'>) {
        const wallet: string | undefined = request.query.wallet;
        // @ts-expect-error: listTransfers has no `owner` query parameter
        expect(request.query.owner).toBeUndefined();
        expect(wallet).toBeUndefined();
      },
      getTransfer(request) {
        // @ts-expect-error: the path parameter is transfer_id
        expect(request.params.id).toBeUndefined();
      },
    });
    expect(Object.keys(handlers).sort()).toEqual(['getTransfer', 'listTransfers']);
  });

  it('type WebSocket messages by the AsyncAPI models', () => {
    const pong: ServerMessage = { type: 'pong', requestId: null, serverTime: '2026-11-22T09:30:00.000Z' };
    // @ts-expect-error: the AsyncAPI PongMessage requires requestId (null when there was none)
    const noRequestId: ServerMessage = { type: 'pong', serverTime: '2026-11-22T09:30:00.000Z' };
    // @ts-expect-error: a ping has no subscriptionId
    const ping: ClientMessage = { type: 'ping', subscriptionId: 'sub_000000000001' };
    expect([pong.type, noRequestId.type, ping.type]).toEqual(['pong', 'pong', 'ping']);
    const problem: components['schemas']['Problem'] = {
      type: '/problems/not-found',
      title: 'Not found',
      status: 404,
    };
    expect(problem.status).toBe(404);
  });
});
