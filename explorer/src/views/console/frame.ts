// The console's frame: who sees which section (decided from the role GET /api/v1/me reported at
// sign-in; the service stays the authority and refuses what the role may not do), the section's
// own navigation, and the page heading.
import type { Schemas } from '../../api/client.ts';
import { problemOf } from '../../api/problem.ts';
import { paths } from '../../router.ts';
import { type Child, h, replace } from '../../ui/dom.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import type { ViewContext } from '../context.ts';

type Role = Schemas['Role'];

/** Studios run their collections; an admin may do everything a studio does, for every studio. */
export function canUseStudio(role: Role | undefined): boolean {
  return role === 'studio' || role === 'admin';
}

export function canUseAdmin(role: Role | undefined): boolean {
  return role === 'admin';
}

export type Section = 'studio' | 'admin';

const PAGES: Record<Section, readonly (readonly [path: () => string, text: string])[]> = {
  studio: [
    [paths.studio, 'Collections'],
    [paths.studioAudit, 'Audit log'],
    [paths.studioWebhooks, 'Webhooks'],
    [paths.studioServiceAccounts, 'Service accounts'],
  ],
  admin: [
    [paths.adminUsers, 'Users and roles'],
    [paths.adminAudit, 'Audit log'],
    [paths.adminChains, 'Chain indexer'],
    [paths.adminHealth, 'Health'],
  ],
};

/**
 * Renders the section's navigation and heading into the page, or, for a role without the section,
 * says so (the header does not link it then; this is for a typed or bookmarked address).
 * Returns false in that case: the view renders nothing more.
 */
export function consolePage(ctx: ViewContext, section: Section, title: string, ...content: Child[]): boolean {
  const role = ctx.session.user?.role;
  const allowed = section === 'studio' ? canUseStudio(role) : canUseAdmin(role);
  document.title = `${title} · ${section === 'studio' ? 'Studio' : 'Admin'} · GATS Explorer`;
  if (!allowed) {
    replace(
      ctx.root,
      h(
        'section',
        { class: 'panel intro' },
        h('h1', {}, section === 'studio' ? 'Studio console' : 'Admin console'),
        h(
          'p',
          {},
          section === 'studio'
            ? 'The studio console is for accounts with the studio or admin role. Your role is '
            : 'The admin console is for accounts with the admin role. Your role is ',
          h('strong', {}, role ?? 'unknown'),
          '. An admin can change it.',
        ),
      ),
    );
    return false;
  }
  const here = location.pathname;
  replace(
    ctx.root,
    h(
      'nav',
      { class: 'console-nav', 'aria-label': section === 'studio' ? 'Studio console' : 'Admin console' },
      PAGES[section].map(([path, text]) =>
        h('a', { href: path(), 'aria-current': path() === here ? 'page' : null }, text),
      ),
    ),
    h('h1', {}, title),
    content,
  );
  return true;
}

/** A panel with a heading (its id labels the section for screen readers). */
export function panel(id: string, heading: string, ...content: Child[]): HTMLElement {
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': `${id}-heading` },
    h('h2', { id: `${id}-heading` }, heading),
    content,
  );
}

/** Fills `target` with one element per item `read` answers, `empty` when there is none, or the problem. */
export async function showList<T>(
  target: HTMLElement,
  signal: AbortSignal,
  read: () => Promise<{ data: T[] }>,
  render: (item: T) => HTMLElement,
  empty: string,
): Promise<void> {
  try {
    const { data } = await read();
    replace(target, data.length ? data.map(render) : emptyState(empty));
  } catch (error) {
    if (!signal.aborted) replace(target, problemBox(problemOf(error)));
  }
}
