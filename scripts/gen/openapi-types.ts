/** TypeScript types of the bundled OpenAPI document, by openapi-typescript. */
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import { tsHeader } from './files.ts';

export async function openApiTypes(bundled: Record<string, unknown>): Promise<string> {
  // openapi-typescript may annotate the object it reads: give it a copy.
  const ast = await openapiTS(structuredClone(bundled) as unknown as OpenAPI3);
  return tsHeader('openapi') + astToString(ast);
}
