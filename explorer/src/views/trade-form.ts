// Propose a trade (POST /api/v1/trades) from another player's wallet page: what you give from your
// wallet (NFTs ticked, currency amounts typed) for what you ask from theirs, open for an hour, a day
// or a week. The counterparty accepts or refuses it in their Trades panel; nothing moves until then
// (the service checks both sides again at acceptance). Items on chain and soulbound NFTs never move
// through the ledger, so they are not offered.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { openDialog } from '../ui/dialog.ts';
import { h, replace, uid } from '../ui/dom.ts';
import { labelled, select } from '../ui/field.ts';
import { shortAddress } from '../ui/format.ts';
import { problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';
import { isOnChain } from './asset-card.ts';

type Holding = Schemas['WalletAssetHolding'];
type TradeItem = Schemas['TradeItem'];

/** The most items of each kind a side lists (the contract allows 10 items a side). */
const LISTED = 50;

const EXPIRIES = [
  ['3600', 'an hour'],
  ['86400', 'a day'],
  ['604800', 'a week'],
] as const;

const FIELD_LABELS: Record<string, string> = {
  '/body/offer': 'You give',
  '/body/request': 'You ask for',
  '/body/toWallet': 'Their wallet',
};

/** One side of the trade: the wallet's tradable NFTs (checkboxes) and currencies (amounts). */
function side(session: Session, wallet: string, legend: string, signal: AbortSignal) {
  const root = h('fieldset', { class: 'trade-side', 'aria-busy': 'true' }, h('legend', {}, legend));
  const picks: { assetId: string; read(): string | null }[] = [];
  const load = async () => {
    const holdings = async (kind: 'nft' | 'fungible') =>
      unwrap(
        await session.api.GET('/wallets/{wallet_id}/assets', {
          params: { path: { wallet_id: wallet }, query: { kind, limit: LISTED } },
          signal,
        }),
      ).data.filter((holding: Holding) => !isOnChain(holding.asset) && !holding.asset.soulbound);
    const [nfts, currencies] = await Promise.all([holdings('nft'), holdings('fungible')]);
    for (const holding of nfts) {
      const input = h('input', { id: uid('trade-nft'), type: 'checkbox', value: holding.asset.id });
      root.append(
        h('div', { class: 'field check' }, input, h('label', { for: input.id }, holding.asset.name)),
      );
      picks.push({ assetId: holding.asset.id, read: () => (input.checked ? '1' : null) });
    }
    for (const holding of currencies) {
      const input = h('input', {
        id: uid('trade-amount'),
        inputmode: 'decimal',
        autocomplete: 'off',
        placeholder: '0',
        pattern: '[0-9]+([.][0-9]+)?',
      });
      root.append(labelled(`${holding.asset.name} (of ${holding.balance})`, input));
      picks.push({
        assetId: holding.asset.id,
        read: () => {
          const amount = input.value.trim();
          return amount === '' || Number(amount) === 0 ? null : amount;
        },
      });
    }
    if (picks.length === 0) root.append(h('p', { class: 'muted' }, 'Nothing that can be traded.'));
    root.removeAttribute('aria-busy');
  };
  const items = (): TradeItem[] =>
    picks.flatMap((pick) => {
      const amount = pick.read();
      return amount === null ? [] : [{ assetId: pick.assetId, amount }];
    });
  return { root, load, items };
}

export function openTradeDialog(
  session: Session,
  fromWallet: string,
  toWallet: string,
  onProposed: (trade: Schemas['Trade']) => void,
): void {
  const guard = new SubmissionGuard();
  const controller = new AbortController();
  const give = side(
    session,
    fromWallet,
    `You give (from your wallet ${shortAddress(fromWallet)})`,
    controller.signal,
  );
  const take = side(session, toWallet, `You ask for (from ${shortAddress(toWallet)})`, controller.signal);
  const expiry = select('expires', EXPIRIES, '86400');
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Propose trade');
  const form = h(
    'form',
    { class: 'stack trade-form' },
    h('div', { class: 'trade-sides' }, give.root, take.root),
    labelled('Open for', expiry),
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  const dialog = openDialog('Propose a trade', form);
  dialog.element.addEventListener('close', () => controller.abort());
  void Promise.all([give.load(), take.load()]).catch((error: unknown) => {
    if (!controller.signal.aborted) replace(status, problemBox(problemOf(error)));
  });

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy) return;
    const body: Schemas['CreateTradeRequest'] = {
      fromWallet,
      toWallet,
      offer: give.items(),
      request: take.items(),
      expiresIn: Number(expiry.value),
    };
    if (body.offer.length === 0 || body.request.length === 0) {
      replace(
        status,
        h('p', { class: 'problem', role: 'alert' }, 'Choose at least one item to give and one to ask for.'),
      );
      return;
    }
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    replace(status, h('p', { class: 'muted' }, 'Proposing…'));
    try {
      const trade = await guard.run(body, async (key) =>
        unwrap(
          await session.api.POST('/api/v1/trades', { params: { header: { 'Idempotency-Key': key } }, body }),
        ),
      );
      if (!trade) return;
      dialog.close();
      onProposed(trade);
    } catch (error) {
      replace(status, problemBox(problemOf(error), FIELD_LABELS));
    } finally {
      submit.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
}
