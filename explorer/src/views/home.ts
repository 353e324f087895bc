// The landing page: what the explorer is, and the way in (sign in, or your wallet when signed in).
import { paths } from '../router.ts';
import { h, replace } from '../ui/dom.ts';
import type { Cleanup, ViewContext } from './context.ts';
import { walletSearch } from './wallet.ts';

export function homeView(ctx: ViewContext): Cleanup {
  const wallet = ctx.session.user?.wallets[0];
  if (wallet) {
    ctx.navigate(paths.wallet(wallet), { replace: true });
    return () => undefined;
  }
  if (ctx.session.signedIn) {
    replace(ctx.root, h('h1', {}, 'Explorer'), walletSearch(ctx));
    return () => undefined;
  }
  replace(
    ctx.root,
    signInPrompt(ctx, 'See the game assets wallets hold, their prices and every transfer, live.'),
  );
  return () => undefined;
}

/** Shown wherever signing in is needed; comes back to the current page afterwards. */
export function signInPrompt(ctx: ViewContext, text: string): HTMLElement {
  const button = h('button', { type: 'button' }, 'Sign in');
  button.addEventListener('click', () => ctx.session.beginSignIn(location.pathname + location.search));
  return h(
    'section',
    { class: 'panel intro' },
    h('h1', {}, 'Game Asset Explorer'),
    h('p', {}, text),
    h(
      'p',
      { class: 'muted' },
      'Signing in takes you to the service’s own sign-in page; the explorer never sees your password.',
    ),
    button,
  );
}
