// Wallet operations: the caller's wallets and linking an external wallet with SIWE.
import type { components } from '../../../generated/openapi/types.ts';
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import type { HandlerMap } from '../handler.ts';
import { actorOf } from './ledger-request.ts';

type Schemas = components['schemas'];

export function walletHandlers(ledger: Ledger): HandlerMap {
  return {
    async listMyWallets(request, ctx) {
      ctx.body = { data: await ledger.wallets.listWallets(actorOf(request).userId) };
    },

    async createWalletLinkChallenge(request, ctx) {
      const body = request.body as Schemas['WalletLinkChallengeRequest'];
      const address = parseAddress(body.address, '/body/address');
      ctx.status = 201;
      ctx.body = await ledger.walletLinks.createChallenge(actorOf(request).userId, address);
    },

    async linkWallet(request, ctx) {
      const body = request.body as Schemas['WalletLinkRequest'];
      ctx.status = 201;
      ctx.body = await ledger.walletLinks.link(
        actorOf(request).userId,
        body.message,
        body.signature as `0x${string}`,
      );
    },
  };
}
