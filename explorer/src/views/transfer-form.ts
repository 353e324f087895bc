// Transfer an asset you hold (POST /api/v1/transfer): the recipient is checked as EIP-55 while
// typed, an NFT always moves whole, and the submission carries one Idempotency-Key.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { addressField } from '../ui/address.ts';
import { openDialog } from '../ui/dialog.ts';
import { h, replace, uid } from '../ui/dom.ts';
import { problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';

type Asset = Schemas['Asset'];
type Transfer = Schemas['Transfer'];

const FIELD_LABELS: Record<string, string> = {
  '/body/to': 'Recipient wallet',
  '/body/from': 'From wallet',
  '/body/amount': 'Amount',
  '/body/assetId': 'Asset',
};

export interface TransferInput {
  asset: Asset;
  /** The wallet of yours the asset leaves from. */
  from: string;
  /** How much of it that wallet holds. */
  balance: string;
}

export function openTransferDialog(
  session: Session,
  input: TransferInput,
  onDone: (transfer: Transfer) => void,
): void {
  const { asset, from, balance } = input;
  const guard = new SubmissionGuard();
  const recipient = addressField({ label: 'Recipient wallet', name: 'to', required: true });
  const amountId = uid('transfer-amount');
  const isNft = asset.kind === 'nft';
  const amount = h('input', {
    id: amountId,
    name: 'amount',
    inputmode: 'decimal',
    required: true,
    autocomplete: 'off',
    // An NFT moves whole: its amount is always "1".
    value: isNft ? '1' : '',
    readonly: isNft,
    pattern: '^(0|[1-9][0-9]*)(\\.[0-9]+)?$',
    'aria-describedby': `${amountId}-hint`,
  });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, isNft ? 'Transfer NFT' : 'Transfer');
  const form = h(
    'form',
    { class: 'stack' },
    h('p', {}, h('strong', {}, asset.name), ` from your wallet ${from}`),
    recipient.root,
    h(
      'div',
      { class: 'field' },
      h('label', { for: amountId }, isNft ? 'Amount' : `Amount (${asset.symbol ?? asset.id})`),
      amount,
      h(
        'p',
        { id: `${amountId}-hint`, class: 'field-hint' },
        isNft
          ? 'An NFT is transferred whole.'
          : `You hold ${balance}. Up to ${asset.decimals ?? 0} decimals.`,
      ),
    ),
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  const dialog = openDialog(`Transfer ${asset.name}`, form);
  recipient.input.focus();

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy) return; // a second click or Enter while the first submission is in flight
    const to = recipient.value();
    if (to === null) {
      recipient.input.focus();
      return;
    }
    const body: Schemas['TransferRequest'] = { assetId: asset.id, from, to, amount: amount.value.trim() };
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    replace(status, h('p', { class: 'muted' }, 'Transferring…'));
    try {
      const transfer = await guard.run(body, async (key) =>
        unwrap(
          await session.api.POST('/api/v1/transfer', {
            params: { header: { 'Idempotency-Key': key } },
            body,
          }),
        ),
      );
      if (!transfer) return;
      if (transfer.status === 'failed') {
        replace(
          status,
          problemBox({
            type: transfer.failureReason ?? 'about:blank',
            title: 'The transfer failed',
            status: 0,
            detail: transfer.failureReason ?? undefined,
          }),
        );
        return;
      }
      dialog.close();
      onDone(transfer);
    } catch (error) {
      replace(status, problemBox(problemOf(error), FIELD_LABELS));
    } finally {
      submit.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
}
