// /explorer/callback: the end of the authorization code flow.
import { problemOf } from '../api/problem.ts';
import { safeReturnPath } from '../auth/session.ts';
import { h, replace } from '../ui/dom.ts';
import type { Cleanup, ViewContext } from './context.ts';

export function callbackView(ctx: ViewContext): Cleanup {
  const params = new URLSearchParams(location.search);
  replace(
    ctx.root,
    h(
      'section',
      { class: 'panel', 'aria-busy': 'true' },
      h('h1', {}, 'Signing you in…'),
      h('p', { class: 'muted' }, 'Exchanging the authorization code and creating this session’s API key.'),
    ),
  );
  ctx.session
    .completeSignIn(params)
    .then((returnTo) => ctx.navigate(safeReturnPath(returnTo), { replace: true }))
    .catch((error: unknown) => {
      const again = h('button', { type: 'button' }, 'Sign in again');
      again.addEventListener('click', () => ctx.session.beginSignIn(safeReturnPath(null)));
      const problem = problemOf(error);
      replace(
        ctx.root,
        h(
          'section',
          { class: 'panel' },
          h('h1', {}, problem.title),
          problem.detail ? h('p', {}, problem.detail) : null,
          again,
        ),
      );
    });
  return () => undefined;
}
