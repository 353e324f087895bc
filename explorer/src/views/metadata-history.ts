// Every version of an asset's name and metadata, newest first, a page at a time (GET
// /api/v1/assets/{id}/metadata/history): the level-ups of a living item. Shown on the asset page,
// and with who made each change on the console's item page.
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { PAGE_SIZE } from '../config.ts';
import { h, replace, skeleton } from '../ui/dom.ts';
import { formatTime } from '../ui/format.ts';
import { CursorPager } from '../ui/pager.ts';
import { problemBox } from '../ui/problem-view.ts';

export interface MetadataHistory {
  /** The list and its pager. */
  elements: HTMLElement[];
  /** Shows the newest page again. */
  reload(): Promise<void>;
}

export function metadataHistory(
  session: Session,
  assetId: string,
  signal: AbortSignal,
  options: { showAuthor?: boolean } = {},
): MetadataHistory {
  const list = h('div', { class: 'metadata-history' }, skeleton('row', 2));
  const pager = new CursorPager('metadata-history', () => void show());
  async function show(): Promise<void> {
    try {
      const page = unwrap(
        await session.api.GET('/api/v1/assets/{asset_id}/metadata/history', {
          params: {
            path: { asset_id: assetId },
            query: { cursor: pager.cursor, limit: PAGE_SIZE.transfers },
          },
          signal,
        }),
      );
      pager.update(page.next_cursor);
      replace(
        list,
        h(
          'ul',
          { class: 'history-list' },
          page.data.map((version) =>
            h(
              'li',
              { 'data-version': String(version.version) },
              h('strong', {}, `v${version.version}`),
              ' ',
              version.name,
              ' ',
              h('time', { datetime: version.changedAt, class: 'muted small' }, formatTime(version.changedAt)),
              options.showAuthor && version.changedBy
                ? h('span', { class: 'muted small' }, ` by ${version.changedBy}`)
                : null,
              ' ',
              h(
                'span',
                { class: 'small' },
                version.metadata.attributes.map((a) => `${a.trait_type}: ${String(a.value)}`).join(', '),
              ),
            ),
          ),
        ),
      );
    } catch (error) {
      if (!signal.aborted) replace(list, problemBox(problemOf(error)));
    }
  }
  return {
    elements: [list, pager.element],
    reload() {
      pager.reset();
      return show();
    },
  };
}
