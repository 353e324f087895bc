// The console's screens by route: the studio's (collections, items, audit log, webhooks, service
// accounts) and the admin's (users and roles, audit log, chain indexer, health).
import type { ConsoleRoute } from '../../router.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { chainsView } from './admin-chains.ts';
import { healthView } from './admin-health.ts';
import { usersView } from './admin-users.ts';
import { auditLogView } from './audit-log.ts';
import { collectionView } from './collection.ts';
import { collectionsView } from './collections.ts';
import { itemView } from './item.ts';
import { serviceAccountsView } from './service-accounts.ts';
import { webhooksView } from './webhooks.ts';

export function consoleView(ctx: ViewContext, route: ConsoleRoute): Cleanup {
  switch (route.name) {
    case 'studio':
      return collectionsView(ctx);
    case 'studio-collection':
      return collectionView(ctx, route.id);
    case 'studio-item':
      return itemView(ctx, route.id);
    case 'studio-audit':
      return auditLogView(ctx, 'studio');
    case 'studio-webhooks':
      return webhooksView(ctx);
    case 'studio-service-accounts':
      return serviceAccountsView(ctx);
    case 'admin-users':
      return usersView(ctx);
    case 'admin-audit':
      return auditLogView(ctx, 'admin');
    case 'admin-chains':
      return chainsView(ctx);
    case 'admin-health':
      return healthView(ctx);
  }
}
