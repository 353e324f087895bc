// Builds the explorer into explorer/dist, served by the service at /explorer/ (src/http/explorer-static.ts).
// `npm run explorer:dev` serves it with hot reload and forwards API calls to a running service
// (API_URL, default http://localhost:3000); sign-in then needs the service's PUBLIC_URL to be the
// dev server's origin, so that `/explorer/callback` is a registered redirect URI.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const api = process.env.API_URL ?? 'http://localhost:3000';
const backendPaths = [
  '/api',
  '/assets',
  '/wallets',
  '/authorize',
  '/token',
  '/interaction',
  '/.well-known',
  '/jwks',
];

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/explorer/',
  publicDir: 'public',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // Not "assets/": /assets/{id} is an API path, so built files live under /explorer/static/.
    assetsDir: 'static',
    target: 'es2022',
    chunkSizeWarningLimit: 400,
  },
  server: {
    proxy: {
      ...Object.fromEntries(backendPaths.map((path) => [path, { target: api, changeOrigin: false }])),
      '/ws': { target: api.replace(/^http/, 'ws'), ws: true },
    },
  },
});
