// The explorer's shell: header (navigation, live indicator, session), the routed view in <main>,
// and the wiring between the session, the live connection and the views.
import './styles.css';
import { Session } from './auth/session.ts';
import { LiveConnection } from './live/connection.ts';
import { liveIndicator } from './live/indicator.ts';
import { interceptLinks, parseRoute, paths } from './router.ts';
import { h, replace } from './ui/dom.ts';
import { toastRegion } from './ui/toast.ts';
import { assetView } from './views/asset.ts';
import { callbackView } from './views/callback.ts';
import { canUseAdmin, canUseStudio } from './views/console/frame.ts';
import type { Cleanup, ViewContext } from './views/context.ts';
import { homeView, signInPrompt } from './views/home.ts';
import { marketView } from './views/market.ts';
import { storesView, storeView } from './views/store.ts';
import { tradesView } from './views/trades.ts';
import { walletView } from './views/wallet.ts';

const session = new Session();
const live = new LiveConnection(session);

const main = h('main', { id: 'content', tabindex: '-1' });
const account = h('div', { class: 'account' });
const nav = h('nav', { 'aria-label': 'Main' });

document.body.replaceChildren(
  h('a', { class: 'skip-link', href: '#content' }, 'Skip to content'),
  h(
    'header',
    { class: 'site-header' },
    h(
      'a',
      { class: 'brand', href: paths.home() },
      h('span', { 'aria-hidden': 'true' }, '◆ '),
      'GATS Explorer',
    ),
    nav,
    liveIndicator(live),
    account,
  ),
  main,
  toastRegion(),
);

function renderHeader(): void {
  const user = session.user;
  replace(
    nav,
    user?.wallets[0] ? h('a', { href: paths.wallet(user.wallets[0]) }, 'My wallet') : null,
    user ? h('a', { href: paths.trades() }, 'Trades') : null,
    user ? h('a', { href: paths.stores() }, 'Stores') : null,
    // Shown by the role /api/v1/me reported; the service refuses what the role may not do anyway.
    canUseStudio(user?.role) ? h('a', { href: paths.studio() }, 'Studio') : null,
    canUseAdmin(user?.role) ? h('a', { href: paths.adminUsers() }, 'Admin') : null,
  );
  if (user || session.signedIn) {
    const signOut = h('button', { type: 'button', class: 'secondary' }, 'Sign out');
    signOut.addEventListener('click', async () => {
      signOut.disabled = true;
      await session.signOut();
    });
    replace(account, h('span', { class: 'user' }, user?.username ?? ''), signOut);
  } else {
    const signIn = h('button', { type: 'button' }, 'Sign in');
    signIn.addEventListener('click', () => session.beginSignIn(location.pathname + location.search));
    replace(account, signIn);
  }
}

let cleanup: Cleanup = () => undefined;
let controller = new AbortController();

function render(): void {
  cleanup();
  controller.abort();
  controller = new AbortController();
  const ctx: ViewContext = { session, live, navigate, root: main, signal: controller.signal };
  const route = parseRoute(location.pathname);
  document.title = 'GATS Explorer';
  if (route.name === 'callback') cleanup = callbackView(ctx);
  else if (route.name === 'home') cleanup = homeView(ctx);
  else if (route.name === 'not-found') {
    replace(
      main,
      h(
        'section',
        { class: 'panel' },
        h('h1', {}, 'Page not found'),
        h('p', {}, h('a', { href: paths.home() }, 'Back to the explorer')),
      ),
    );
    cleanup = () => undefined;
  } else if (!session.signedIn) {
    // Everything the API shows needs a token and an API key.
    replace(
      main,
      signInPrompt(
        ctx,
        route.name === 'wallet'
          ? 'Sign in to see this wallet.'
          : route.name === 'trades'
            ? 'Sign in to see your trades.'
            : route.name === 'asset'
              ? 'Sign in to see this asset.'
              : route.name === 'store' || route.name === 'stores'
                ? 'Sign in to see the stores.'
                : route.name === 'market'
                  ? 'Sign in to see this market.'
                  : 'Sign in to use the console.',
      ),
    );
    cleanup = () => undefined;
  } else if (route.name === 'wallet') cleanup = walletView(ctx, route.address);
  else if (route.name === 'trades') cleanup = tradesView(ctx);
  else if (route.name === 'asset') cleanup = assetView(ctx, route.id);
  else if (route.name === 'store') cleanup = storeView(ctx, route.collection);
  else if (route.name === 'stores') cleanup = storesView(ctx);
  else if (route.name === 'market') cleanup = marketView(ctx, route.collection);
  else {
    // The console is loaded when first opened: players never download it.
    let consoleCleanup: Cleanup = () => undefined;
    cleanup = () => consoleCleanup();
    void import('./views/console/index.ts').then(({ consoleView }) => {
      if (!ctx.signal.aborted) consoleCleanup = consoleView(ctx, route);
    });
  }
}

function navigate(path: string, options: { replace?: boolean } = {}): void {
  if (options.replace) history.replaceState(null, '', path);
  else history.pushState(null, '', path);
  render();
  // Move focus to the new content, as a page load would, for keyboard and screen reader users.
  if (!options.replace) main.focus({ preventScroll: false });
}

session.addEventListener('change', () => {
  renderHeader();
  if (!session.signedIn) live.stop();
  if (parseRoute(location.pathname).name !== 'callback') render();
});
window.addEventListener('popstate', render);
interceptLinks(navigate);
renderHeader();
render();
