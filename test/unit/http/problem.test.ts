// One error middleware renders every failure; unexpected ones reveal nothing.
import { createServer } from 'node:http';
import Koa from 'koa';
import { describe, expect, it } from 'vitest';
import { PROBLEM_TYPES } from '../../../generated/problems.ts';
import { AppError, ConflictError, NotFoundError } from '../../../src/domain/errors.ts';
import { errorMiddleware } from '../../../src/http/problem.ts';

async function call(
  thrown: unknown,
): Promise<{ status: number; type: string; body: Record<string, unknown> }> {
  const koa = new Koa();
  koa.silent = true;
  koa.use(async (ctx, next) => {
    ctx.state.requestId = 'req-1';
    await next();
  });
  koa.use(errorMiddleware());
  koa.use(() => {
    throw thrown;
  });
  const server = createServer(koa.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const response = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/x`);
    return {
      status: response.status,
      type: response.headers.get('content-type') ?? '',
      body: (await response.json()) as Record<string, unknown>,
    };
  } finally {
    server.close();
  }
}

describe('error middleware', () => {
  it('renders a domain error as problem+json with its type, detail, instance and request id', async () => {
    const result = await call(
      new ConflictError('A currency with id gold already exists.', '/problems/asset-exists'),
    );
    expect(result.status).toBe(409);
    expect(result.type).toMatch(/^application\/problem\+json/);
    expect(result.body).toEqual({
      type: '/problems/asset-exists',
      // The registry's title for the type (contracts/problems.yaml), not the class's.
      title: 'Asset already exists',
      status: 409,
      detail: 'A currency with id gold already exists.',
      instance: '/x',
      requestId: 'req-1',
    });
  });

  it('masks an unexpected error: no message, no stack', async () => {
    const result = await call(new Error('password=hunter2 at db.ts:12'));
    expect(result.status).toBe(500);
    expect(JSON.stringify(result.body)).not.toContain('hunter2');
    expect(result.body).toMatchObject({
      type: '/problems/internal',
      status: 500,
      detail: 'An unexpected error occurred.',
    });
  });

  it('masks a thrown non-error value too', async () => {
    const result = await call('boom');
    expect(result.status).toBe(500);
    expect(result.body.detail).toBe('An unexpected error occurred.');
  });

  it('takes problem types from the contract registry only (checked by typecheck)', () => {
    // Each @ts-expect-error fails `npm run typecheck` once the line it marks compiles.
    const unregistered = () =>
      // @ts-expect-error: not a type of contracts/problems.yaml
      new AppError(400, '/problems/no-such-problem');
    const otherStatus = () =>
      // @ts-expect-error: a 409 type given to a 404 error
      new NotFoundError('No such thing.', '/problems/conflict');
    expect(unregistered().type).toBe('/problems/no-such-problem');
    expect(otherStatus().status).toBe(404);
    const registered = new ConflictError('Exists.', '/problems/asset-exists');
    expect(PROBLEM_TYPES[registered.type].status).toBe(registered.status);
  });
});
