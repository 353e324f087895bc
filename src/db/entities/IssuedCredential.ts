import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { StatusList } from './StatusList.ts';
import { User } from './User.ts';

/** A verifiable credential the service issued, with its slot in a status list (for revocation). */
export const IssuedCredential = defineEntity({
  name: 'IssuedCredential',
  properties: {
    /** `urn:uuid:...` */
    id: p.string().primary(),
    type: p.string(),
    subjectDid: p.string().index(),
    requestedBy: () => p.manyToOne(User).ref().index(),
    statusList: () => p.manyToOne(StatusList).ref(),
    statusListIndex: p.integer(),
    revokedAt: p.datetime().nullable(),
    issuedAt: p.datetime(),
    validUntil: p.datetime().nullable(),
  },
  uniques: [{ properties: ['statusList', 'statusListIndex'] }],
});
export type IssuedCredential = InferEntity<typeof IssuedCredential>;
