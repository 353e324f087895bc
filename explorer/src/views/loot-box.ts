// Loot boxes in the explorer (issue 36): a box's published odds (every outcome with its exact
// probability, as a percentage and a fraction), opening one you hold (your wallet's server seed
// commitment read first, your own value mixed in, one Idempotency-Key per submission), the outcome,
// and the draw's proof: the inputs, the seed once revealed, and the draw recomputed in the browser
// (draw-check.ts) or the `npm run verify-draw` command that does the same.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import { randomToken } from '../auth/pkce.ts';
import type { Session } from '../auth/session.ts';
import { openDialog } from '../ui/dialog.ts';
import { h, replace } from '../ui/dom.ts';
import { labelled, textInput } from '../ui/field.ts';
import { problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';
import { canCheckInBrowser, checkDraw } from './draw-check.ts';

type LootBox = Schemas['LootBox'];
type Draw = Schemas['Draw'];
type Outcome = Schemas['DropOutcome'];
type Asset = Schemas['Asset'];

/** An outcome in words: "50 gold", "Dragon Hatchling (NFT)", a bundle, or "Nothing". */
export function describeOutcome(outcome: Outcome): string {
  if (outcome === null) return 'Nothing';
  if ('bundle' in outcome) return outcome.bundle.map((part) => describeOutcome(part)).join(' + ');
  if ('table' in outcome) return `A draw from table ${outcome.table}`;
  if ('nft' in outcome) return `${outcome.nft.name} (NFT)`;
  return `${outcome.amount} ${outcome.assetId}`;
}

/** "7/10" as "70 %", "1/3" as "33.33 %" (the exact fraction is shown beside it). */
export function percent(fraction: string): string {
  const [numerator, denominator] = fraction.split('/').map(Number);
  const value = ((numerator ?? 0) / (denominator || 1)) * 100;
  return `${Number.parseFloat(value.toFixed(value < 0.01 ? 4 : 2))} %`;
}

/** The pity rule in words, naming the guaranteed outcome. */
export function pityText(box: LootBox): string | null {
  if (!box.pity) return null;
  const entry = box.pity.entry;
  const line = box.odds.find((odds) => odds.path.length === 1 && odds.path[0] === entry);
  const what = line ? describeOutcome(line.outcome) : `Entry ${entry + 1} of the table`;
  return `Pity: ${what} is guaranteed by a wallet’s ${box.pity.after}th opening without it.`;
}

/** The box's published odds as a table. */
export function oddsTable(box: LootBox): HTMLElement {
  return h(
    'table',
    { class: 'odds-table', 'data-testid': 'odds' },
    h('caption', { class: 'visually-hidden' }, `Odds of ${box.name}`),
    h(
      'thead',
      {},
      h('tr', {}, h('th', { scope: 'col' }, 'Outcome'), h('th', { scope: 'col', class: 'number' }, 'Odds')),
    ),
    h(
      'tbody',
      {},
      box.odds.map((line) =>
        h(
          'tr',
          {},
          h('td', {}, describeOutcome(line.outcome)),
          h(
            'td',
            { class: 'number' },
            percent(line.odds),
            ' ',
            h('span', { class: 'muted small' }, `(${line.odds})`),
          ),
        ),
      ),
    ),
  );
}

/** The draw's inputs and how to check it; checks it in the browser once the seed is revealed. */
export function drawProof(session: Session, draw: Draw, box: LootBox): HTMLElement {
  const result = h('div', { class: 'draw-check', 'aria-live': 'polite' });
  const actions = h('div', { class: 'form-actions' });
  const facts: [string, string | HTMLElement][] = [
    ['Algorithm', draw.algorithm],
    ['Server seed commitment', h('code', { 'data-testid': 'commitment' }, draw.commitment)],
    ['Server seed', h('code', {}, draw.seed)],
    ['Nonce', String(draw.nonce)],
    ['Your value', h('code', {}, draw.clientSeed)],
    [
      'Rolls',
      h(
        'ul',
        { class: 'plain' },
        draw.rolls.map((roll) =>
          h('li', {}, `${roll.value} of ${roll.total} → entry ${roll.entry + 1} (table ${roll.tableId})`),
        ),
      ),
    ],
  ];
  if (draw.pity)
    facts.push([
      'Pity',
      `${draw.pity.countBefore} openings without it before this one (guaranteed at ${draw.pity.after})${draw.pity.applied ? ': applied' : ''}`,
    ]);
  facts.push(['Draw id', h('code', {}, draw.id)]);

  const seedRevealed = (serverSeed: string) => {
    replace(actions);
    result.before(
      h(
        'p',
        { class: 'small' },
        'Revealed server seed: ',
        h('code', { 'data-testid': 'server-seed' }, serverSeed),
      ),
    );
  };

  async function check(): Promise<void> {
    replace(result, h('p', { class: 'muted' }, 'Checking…'));
    try {
      const seed = unwrap(
        await session.api.GET('/api/v1/draw-seeds/{seed_id}', { params: { path: { seed_id: draw.seed } } }),
      );
      if (!seed.serverSeed) {
        replace(result, h('p', {}, 'The seed is not revealed yet.'));
        return;
      }
      seedRevealed(seed.serverSeed);
      const tables = new Map<string, Promise<Schemas['DropTable']>>();
      const { problems, steps } = await checkDraw(draw, seed, box, (id) => {
        let table = tables.get(id);
        if (!table) {
          table = session.api
            .GET('/api/v1/drop-tables/{table_id}', { params: { path: { table_id: id } } })
            .then(unwrap);
          tables.set(id, table);
        }
        return table;
      });
      replace(
        result,
        problems.length === 0
          ? h('p', { class: 'verified', 'data-testid': 'draw-verified' }, '✓ Verified in your browser.')
          : h(
              'div',
              { class: 'problem', role: 'alert' },
              h('p', { class: 'problem-title' }, 'Not verified'),
              h(
                'ul',
                {},
                problems.map((p) => h('li', {}, p)),
              ),
            ),
        h(
          'ol',
          { class: 'small' },
          steps.map((step) => h('li', {}, step)),
        ),
      );
    } catch (error) {
      replace(result, problemBox(problemOf(error)));
    }
  }

  const checkButton = h('button', { type: 'button', class: 'secondary' }, 'Check the draw');
  checkButton.addEventListener('click', () => void check());
  const revealButton = h('button', { type: 'button', class: 'secondary' }, 'Reveal the seed');
  revealButton.addEventListener('click', async () => {
    revealButton.disabled = true;
    try {
      unwrap(
        await session.api.POST('/api/v1/draw-seeds/{seed_id}/reveal', {
          params: { path: { seed_id: draw.seed } },
        }),
      );
      if (canCheckInBrowser()) await check();
      else replace(result, h('p', {}, 'The seed is revealed: run the command above to check the draw.'));
    } catch (error) {
      replace(result, problemBox(problemOf(error)));
    } finally {
      revealButton.disabled = false;
    }
  });

  // Was the seed revealed already? Then the check needs no reveal.
  void session.api
    .GET('/api/v1/draw-seeds/{seed_id}', { params: { path: { seed_id: draw.seed } } })
    .then((answer) => {
      const seed = answer.data;
      if (seed?.serverSeed) replace(actions, canCheckInBrowser() ? checkButton : null);
      else if (seed && session.controls(seed.wallet)) replace(actions, revealButton);
    })
    .catch(() => undefined);

  return h(
    'section',
    { class: 'draw-proof', 'aria-label': 'Proof of the draw' },
    h('h3', {}, 'Proof of the draw'),
    h(
      'dl',
      { class: 'facts' },
      facts.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
    ),
    h(
      'p',
      { class: 'small' },
      'The service committed to its server seed (the SHA-256 above) before you chose your value, so neither side could pick the outcome. Once the seed is revealed (revealing it ends this seed; your next openings use a new one), anyone can recompute the draw: here, or with ',
      h('code', {}, `npm run verify-draw -- ${draw.id}`),
      '.',
    ),
    actions,
    result,
  );
}

/** Opens `asset`, a box of `box` held by `wallet`; `onOpened` after the outcome is shown. */
export function openLootBoxDialog(
  session: Session,
  box: LootBox,
  asset: Pick<Asset, 'id' | 'name'>,
  wallet: string,
  onOpened: (opened: Schemas['OpenedLootBox']) => void,
): void {
  const guard = new SubmissionGuard();
  const commitment = h('code', { 'data-testid': 'seed-commitment' }, '…');
  const clientSeed = textInput('client-seed', {
    maxlength: 64,
    required: true,
    value: randomToken().slice(0, 16),
  });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', disabled: true }, `Open ${asset.name}`);
  const form = h(
    'form',
    { class: 'stack' },
    h('h3', {}, 'Odds'),
    oddsTable(box),
    box.pity
      ? h(
          'p',
          { class: 'small' },
          `Entry ${box.pity.entry + 1} is guaranteed by your ${box.pity.after}th opening without it.`,
        )
      : null,
    h('p', { class: 'small' }, 'Your wallet’s server seed commitment: ', commitment),
    labelled(
      'Your value',
      clientSeed,
      'Any 1 to 64 characters: mixed into the draw after the service committed to its seed.',
    ),
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  openDialog(`Open ${asset.name}`, form);
  let seedCommitment = '';

  async function readSeed(): Promise<void> {
    const seed = unwrap(await session.api.POST('/api/v1/draw-seeds', { body: { wallet } }));
    seedCommitment = seed.commitment;
    commitment.textContent = seed.commitment;
    submit.disabled = false;
  }
  readSeed().catch((error: unknown) => replace(status, problemBox(problemOf(error))));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy || !seedCommitment) return;
    const body: Schemas['OpenLootBoxRequest'] = {
      wallet,
      assetId: asset.id,
      clientSeed: clientSeed.value.trim(),
      seedCommitment,
    };
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    replace(status, h('p', { class: 'muted' }, 'Opening…'));
    try {
      const opened = await guard.run(body, async (key) =>
        unwrap(
          await session.api.POST('/api/v1/loot-boxes/{box_id}/open', {
            params: { path: { box_id: box.id }, header: { 'Idempotency-Key': key } },
            body,
          }),
        ),
      );
      if (!opened) return;
      replace(
        form,
        h(
          'div',
          { class: 'outcome', tabindex: '-1', 'data-testid': 'outcome' },
          h('p', { class: 'outcome-title' }, `You got: ${describeOutcome(opened.draw.outcome)}`),
        ),
        drawProof(session, opened.draw, box),
      );
      onOpened(opened);
      form.querySelector<HTMLElement>('.outcome')?.focus();
    } catch (error) {
      const problem = problemOf(error);
      replace(status, problemBox(problem, { '/body/clientSeed': 'Your value' }));
      // The seed was revealed meanwhile: read the new commitment, then the player opens again.
      if (problem.type === '/problems/draw-seed-changed') await readSeed().catch(() => undefined);
      submit.disabled = false;
    } finally {
      form.removeAttribute('aria-busy');
    }
  });
}
