/**
 * `npm run admin`: account administration from the machine running the service, for what nobody
 * can do over the API yet, such as creating the first admin of a real deployment (15.2). It uses the
 * service's configuration (DATABASE_URL, or SQLITE_PATH / DATA_DIR; SECRET_KEY) and applies the
 * migrations first, so it works before the first start too.
 *
 *   npm run admin -- create-user NAME --role ROLE [--password-stdin]
 *       registers NAME with ROLE (player, studio, oracle, admin) and its custodial wallet. The
 *       password is the first line of standard input with --password-stdin; without it, one is
 *       generated and printed once.
 *   npm run admin -- set-role NAME ROLE
 *       changes an existing user's role (their grants are revoked; the last admin cannot be demoted).
 *
 * Exit codes: 0 done; 1 refused (name taken, unknown user, password policy, last admin);
 * 64 usage; 78 configuration.
 */
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { text } from 'node:stream/consumers';
import { parseArgs } from 'node:util';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { normalizeUsername, registerUser, setUserRole } from '../auth/accounts.ts';
import { ConfigError, loadConfig } from '../config/index.ts';
import { loadOpenApiDocument } from '../contract/operations.ts';
import { createSecretBox, resolveSecret } from '../crypto/secret-box.ts';
import { type Database, openDatabase } from '../db/database.ts';
import { USER_ROLES, User, type UserRole } from '../db/entities/User.ts';
import { migrate } from '../db/orm.ts';
import { auditDraft, commandOrigin, recordAudit, withAuditOrigin } from '../domain/audit.ts';
import { AppError } from '../domain/errors.ts';
import { createLedger } from '../domain/ledger/index.ts';
import { ledgerDatabase } from '../domain/ledger/store/index.ts';

const USAGE = `usage:
  npm run admin -- create-user NAME --role ${USER_ROLES.join('|')} [--password-stdin]
  npm run admin -- set-role NAME ${USER_ROLES.join('|')}`;

class UsageError extends Error {}

/** The contract's Username schema: the command accepts exactly the names registration accepts. */
function checkUsername(name: string): void {
  const schemas = (loadOpenApiDocument() as { components: { schemas: Record<string, object> } }).components
    .schemas;
  const valid = new Ajv2020().compile(schemas.Username);
  if (!valid(name))
    throw new UsageError(`"${name}" is not a valid user name: 3 to 32 letters, digits, _ . -`);
}

function role(value: string | undefined): UserRole {
  if (!value || !(USER_ROLES as readonly string[]).includes(value))
    throw new UsageError(`the role must be one of ${USER_ROLES.join(', ')}; got "${value ?? ''}"`);
  return value as UserRole;
}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: { role: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
  });
  const [command, name, ...rest] = positionals;
  if (command !== 'create-user' && command !== 'set-role')
    throw new UsageError(`unknown command "${command ?? ''}"`);
  if (!name) throw new UsageError('a user name is needed');
  const plan =
    command === 'create-user' && rest.length === 0
      ? { command: 'create-user' as const, name, role: role(values.role) }
      : command === 'set-role' && rest.length === 1 && values.role === undefined
        ? { command: 'set-role' as const, name, role: role(rest[0]) }
        : undefined;
  if (!plan) throw new UsageError(`unknown command or arguments: ${argv.join(' ')}`);
  if (plan.command === 'create-user') checkUsername(plan.name);

  const config = loadConfig();
  // Read before opening the database, so a missing password fails without touching it.
  const given = values['password-stdin'] ? (await text(process.stdin)).split(/\r?\n/)[0] : undefined;
  if (values['password-stdin'] && !given) throw new UsageError('--password-stdin read an empty password');

  const db = await openDatabase({ databaseUrl: config.databaseUrl, sqlitePath: config.sqlitePath });
  // Audit entries of the command name it (and the machine's user) as who acted.
  const origin = commandOrigin(`admin ${plan.command} (${userInfo().username})`);
  try {
    await withAuditOrigin(origin, () => run(db, config, plan, given));
  } finally {
    await db.close();
  }
}

async function run(
  db: Database,
  config: ReturnType<typeof loadConfig>,
  plan: { command: 'create-user' | 'set-role'; name: string; role: UserRole },
  given: string | undefined,
): Promise<void> {
  const { orm } = db;
  await migrate(orm);
  if (plan.command === 'create-user') {
    const secretBox = createSecretBox(resolveSecret(config.secretKey, config.dataDir, !config.databaseUrl));
    const ledger = createLedger({ database: ledgerDatabase(db), config, secretBox });
    const password = given ?? randomBytes(18).toString('base64url');
    const user = await registerUser(orm, { username: plan.name, password }, async (em, created) => {
      await ledger.wallets.createCustodialWallet(em, created.id);
      await recordAudit(
        em,
        auditDraft(
          'user.created',
          { type: 'user', id: created.id, ownerId: created.id },
          { after: { username: created.username, role: created.role } },
        ),
      );
    });
    const view = plan.role === 'player' ? user : await setUserRole(orm, user.id, plan.role);
    console.log(`created ${view.username} (${view.id}) with role ${view.role}, wallet ${view.wallets[0]}`);
    if (given === undefined) console.log(`password (shown once, store it now): ${password}`);
  } else {
    const user = await orm.em.fork().findOne(User, { usernameNormalized: normalizeUsername(plan.name) });
    if (!user) throw new AppError(404, '/problems/not-found', { detail: `no user named ${plan.name}` });
    const view = await setUserRole(orm, user.id, plan.role);
    console.log(`${view.username} (${view.id}) now has role ${view.role}`);
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError || (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    console.error(`${(error as Error).message}\n${USAGE}`);
    process.exitCode = 64; // EX_USAGE
  } else if (error instanceof ConfigError) {
    console.error(`Configuration error: ${error.message}`);
    process.exitCode = 78; // EX_CONFIG
  } else if (error instanceof AppError) {
    const fields = (error.errors ?? []).map((field) => `\n  ${field.detail}`).join('');
    console.error(`refused: ${error.detail ?? error.title}${fields}`);
    process.exitCode = 1;
  } else {
    throw error;
  }
}
