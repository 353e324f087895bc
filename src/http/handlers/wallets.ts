// Wallet operations: the caller's wallets and linking an external wallet with SIWE.
import { parseAddress } from '../../domain/ledger/addresses.ts';
import type { Ledger } from '../../domain/ledger/index.ts';
import { type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf } from './ledger-request.ts';

/** A `0x`-prefixed hex string (the signature the contract's pattern already checked). */
function isHex(value: string): value is `0x${string}` {
  return value.startsWith('0x');
}

export function walletHandlers(ledger: Ledger): HandlerMap {
  return typedHandlers<'listMyWallets' | 'createWalletLinkChallenge' | 'linkWallet'>({
    async listMyWallets(request, ctx) {
      respond(ctx, 'listMyWallets', 200, { data: await ledger.wallets.listWallets(actorOf(request).userId) });
    },

    async createWalletLinkChallenge(request, ctx) {
      const address = parseAddress(request.body.address, '/body/address');
      const challenge = await ledger.walletLinks.createChallenge(actorOf(request).userId, address);
      respond(ctx, 'createWalletLinkChallenge', 201, challenge);
    },

    async linkWallet(request, ctx) {
      const { message, signature } = request.body;
      if (!isHex(signature)) throw new Error('linkWallet: the contract admits only 0x-prefixed signatures');
      const linked = await ledger.walletLinks.link(actorOf(request).userId, message, signature);
      respond(ctx, 'linkWallet', 201, linked);
    },
  });
}
