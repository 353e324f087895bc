/**
 * Modelina TypeScript models of every AsyncAPI message payload and the schemas they use.
 *
 * Output is erasable TypeScript only (interfaces and union types: no enums, no classes), with
 * property names exactly as on the wire. Modelina's own file writer emits extension-less imports
 * that `nodenext` rejects, so the files are assembled here: one model per file, `.ts` imports.
 */
import {
  ConstrainedDictionaryModel,
  TypeScriptGenerator,
  type TypeScriptPreset,
  typeScriptDefaultModelNameConstraints,
} from '@asyncapi/modelina';
import { tsHeader } from './files.ts';

type JsonObject = Record<string, unknown>;

/** Model file name -> file content, including `index.ts`. */
export type ModelFiles = Map<string, string>;

/**
 * JSON Schema allows extra properties unless `additionalProperties: false`. Modelina would render
 * them as a property literally named `additionalProperties`; on the wire they are siblings.
 */
const additionalPropertiesAsIndexSignature: TypeScriptPreset = {
  interface: {
    property({ property, content }) {
      const model = property.property;
      if (model instanceof ConstrainedDictionaryModel && model.serializationType === 'unwrap') {
        return '[key: string]: unknown;';
      }
      return content;
    },
  },
};

const generator = new TypeScriptGenerator({
  modelType: 'interface',
  enumType: 'union',
  mapType: 'record',
  rawPropertyNames: true,
  useJavascriptReservedKeywords: false,
  moduleSystem: 'ESM',
  presets: [additionalPropertiesAsIndexSignature],
  constraints: {
    // Names come from schema titles; the default would rename `Event` (a DOM global) to `ReservedEvent`.
    modelName: typeScriptDefaultModelNameConstraints({ NO_RESERVED_KEYWORDS: (name: string) => name }),
  },
});

export async function asyncApiModels(bundled: JsonObject): Promise<ModelFiles> {
  const models = await generator.generate(nameAnonymousSchemas(messagesOnly(structuredClone(bundled))));
  const files: ModelFiles = new Map();
  const anonymous = models.filter((m) => m.modelName.startsWith('AnonymousSchema'));
  if (anonymous.length > 0) {
    throw new Error(`Modelina found schemas without a title: ${anonymous.map((m) => m.result).join('\n')}`);
  }
  for (const output of [...models].sort((a, b) => (a.modelName < b.modelName ? -1 : 1))) {
    if (!/^(interface|type) /.test(output.result)) {
      throw new Error(`unexpected Modelina output for ${output.modelName}:\n${output.result}`);
    }
    const imports = output.model
      .getNearestDependencies()
      .map((dependency) => dependency.name)
      .filter((name) => name !== output.modelName)
      .sort()
      .map((name) => `import type { ${name} } from './${name}.ts';\n`)
      .join('');
    const body = `export ${output.result}\n`;
    files.set(`${output.modelName}.ts`, `${tsHeader('asyncapi')}${imports}${imports ? '\n' : ''}${body}`);
  }
  files.set('channels.ts', channelUnions(bundled));
  const names = [...files.keys()].map((file) => file.slice(0, -'.ts'.length));
  const index = names.map((name) => `export type * from './${name}.ts';\n`).join('');
  files.set('index.ts', tsHeader('asyncapi') + index);
  return files;
}

/** Follows `$ref`s inside the bundled document. */
function deref(doc: JsonObject, node: unknown): unknown {
  let current = node;
  while (isObject(current) && typeof current.$ref === 'string') {
    let target: unknown = doc;
    for (const token of current.$ref.slice(2).split('/')) target = (target as JsonObject)[token];
    current = target;
  }
  return current;
}

/**
 * Per channel, the union of the messages each side sends: `<Channel>ClientMessage` (what the
 * channel's `receive` operations take) and `<Channel>ServerMessage` (everything else: `send`
 * operations and replies). Written here from the operations, because Modelina's per-channel union
 * keeps one operation's messages only (`PongMessage | ErrorMessage`).
 */
function channelUnions(doc: JsonObject): string {
  const received = new Set<unknown>();
  for (const operation of Object.values(isObject(doc.operations) ? doc.operations : {})) {
    if (!isObject(operation) || operation.action !== 'receive') continue;
    for (const message of Array.isArray(operation.messages) ? operation.messages : [])
      received.add(deref(doc, message));
  }
  const modelOf = (message: unknown): string => {
    const payload = isObject(message) ? deref(doc, message.payload) : undefined;
    if (!isObject(payload) || typeof payload.title !== 'string')
      throw new Error('a message payload without a title');
    return payload.title;
  };
  const imports = new Set<string>();
  const unions: string[] = [];
  for (const [channelId, channel] of Object.entries(isObject(doc.channels) ? doc.channels : {})) {
    if (!isObject(channel) || !isObject(channel.messages)) continue;
    const messages = Object.values(channel.messages).map((m) => deref(doc, m));
    const side = (client: boolean): string[] => [
      ...new Set(messages.filter((m) => received.has(m) === client).map(modelOf)),
    ];
    for (const [suffix, models] of [
      ['ClientMessage', side(true)],
      ['ServerMessage', side(false)],
    ] as const) {
      for (const model of models) imports.add(model);
      const address = String(channel.address);
      const who = suffix === 'ClientMessage' ? 'a client sends on' : 'the service sends on';
      unions.push(
        `/** Every message ${who} \`${address}\`. */\nexport type ${pascal(channelId)}${suffix} =\n  | ${models.join('\n  | ')};\n`,
      );
    }
  }
  const importLines = [...imports]
    .sort()
    .map((name) => `import type { ${name} } from './${name}.ts';\n`)
    .join('');
  return `${tsHeader('asyncapi')}${importLines}\n${unions.join('\n')}`;
}

const isObject = (value: unknown): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const pascal = (text: string): string =>
  text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word[0].toUpperCase() + word.slice(1))
    .join('');

/**
 * Modelina turns every operation with several messages into a union named after the channel,
 * each operation overwriting the previous one's: misleading models. Without channels it models
 * each message payload on its own, so the copy handed to it keeps the messages only.
 */
function messagesOnly(doc: JsonObject): JsonObject {
  const components = isObject(doc.components) ? doc.components : {};
  const messages: JsonObject = { ...(isObject(components.messages) ? components.messages : {}) };
  const moved = new Map<string, string>();
  for (const [channelId, channel] of Object.entries(isObject(doc.channels) ? doc.channels : {})) {
    if (!isObject(channel) || !isObject(channel.messages)) continue;
    for (const [key, message] of Object.entries(channel.messages)) {
      messages[`${channelId}_${key}`] = message;
      moved.set(`#/channels/${channelId}/messages/${key}`, `#/components/messages/${channelId}_${key}`);
    }
  }
  const { channels: _channels, operations: _operations, ...rest } = doc;
  return retarget({ ...rest, components: { ...components, messages } }, moved) as JsonObject;
}

/** Rewrites `$ref`s into moved nodes (`from` prefix -> `to` prefix). */
function retarget(node: unknown, moved: ReadonlyMap<string, string>): unknown {
  if (Array.isArray(node)) return node.map((item) => retarget(item, moved));
  if (!isObject(node)) return node;
  const out: JsonObject = {};
  for (const [key, value] of Object.entries(node)) {
    out[key] =
      key === '$ref' && typeof value === 'string' ? retargetRef(value, moved) : retarget(value, moved);
  }
  return out;
}

function retargetRef(ref: string, moved: ReadonlyMap<string, string>): string {
  for (const [from, to] of moved) {
    if (ref === from || ref.startsWith(`${from}/`)) return to + ref.slice(from.length);
  }
  return ref;
}

/** Does Modelina turn this inline schema into a model of its own? (Unions of types stay inline.) */
const becomesModel = (schema: JsonObject): boolean =>
  schema.$ref === undefined && (Array.isArray(schema.enum) || isObject(schema.properties));

/**
 * Gives untitled inline schemas a title derived from where they sit (`Asset.kind` -> `AssetKind`),
 * so Modelina names them predictably instead of `AnonymousSchema_<n>`. Only the copy handed to
 * Modelina is changed.
 */
function nameAnonymousSchemas(doc: JsonObject): JsonObject {
  const visit = (schema: unknown, name: string): void => {
    if (!isObject(schema) || schema.$ref !== undefined) return;
    const own = typeof schema.title === 'string' ? schema.title : name;
    const child = (sub: unknown, suffix: string): void => {
      if (isObject(sub) && sub.title === undefined && becomesModel(sub)) sub.title = own + suffix;
      visit(sub, own + suffix);
    };
    if (isObject(schema.properties)) {
      for (const [key, sub] of Object.entries(schema.properties)) child(sub, pascal(key));
    }
    if (isObject(schema.additionalProperties)) child(schema.additionalProperties, 'Value');
    if (isObject(schema.items)) child(schema.items, 'Item');
    for (const keyword of ['oneOf', 'anyOf', 'allOf'] as const) {
      const list = schema[keyword];
      if (!Array.isArray(list)) continue;
      for (const [i, sub] of list.entries()) child(sub, `Option${i + 1}`);
    }
  };
  const components = isObject(doc.components) ? doc.components : {};
  for (const [name, schema] of Object.entries(isObject(components.schemas) ? components.schemas : {})) {
    visit(schema, name);
  }
  for (const [key, message] of Object.entries(isObject(components.messages) ? components.messages : {})) {
    if (!isObject(message)) continue;
    const name = pascal(typeof message.name === 'string' ? message.name : key);
    const payload =
      isObject(message.payload) && isObject(message.payload.schema)
        ? message.payload.schema
        : message.payload;
    if (isObject(payload) && payload.title === undefined && payload.$ref === undefined)
      payload.title = `${name}Payload`;
    visit(payload, `${name}Payload`);
  }
  return doc;
}
