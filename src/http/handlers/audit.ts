// The audit trail's read (issue 37): who may read which entries is decided in
// src/domain/authorization.ts (`auditOwnersVisibleTo`, through `auditReadableOwners`, which the
// `auditRecorded` webhooks use too), the entries are read in src/domain/audit.ts.
import type { Orm } from '../../db/orm.ts';
import { auditEntryView, listAudit } from '../../domain/audit.ts';
import { auditReadableOwners } from '../../domain/authorization.ts';
import { decodeCursor, isInteger, page } from '../../domain/ledger/cursor.ts';
import { caller, type HandlerMap, respond, typedHandlers } from '../handler.ts';
import { actorOf, cursorOf, limitOf } from './ledger-request.ts';

const LIST = 'audit-log';

export function auditHandlers(orm: Orm): HandlerMap {
  return typedHandlers<'listAuditLog'>({
    async listAuditLog(request, ctx) {
      const em = orm.em.fork();
      const actor = actorOf(request);
      const ownerIds = await auditReadableOwners(em, actor, caller(request).account);
      const limit = limitOf(request);
      const { query } = request;
      const rows = await listAudit(em, {
        actor: query.actor,
        objectType: query.objectType,
        objectId: query.objectId,
        action: query.action,
        from: query.from === undefined ? undefined : new Date(query.from),
        to: query.to === undefined ? undefined : new Date(query.to),
        ownerIds,
        beforeSeq: decodeCursor(cursorOf(request), LIST, isInteger),
        limit,
      });
      const result = page(rows, limit, LIST, (row) => row.seq);
      respond(ctx, 'listAuditLog', 200, {
        data: result.data.map(auditEntryView),
        next_cursor: result.next_cursor,
      });
    },
  });
}
