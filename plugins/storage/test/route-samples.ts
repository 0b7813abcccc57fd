import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { RouteSampleContext, RouteSamples } from '@hostd/sdk/testing'

// The route-table test runs without a root helper (routes that need it answer 423) and with the default root
// `files` = <data dir>/files, which the plugin creates at start.
async function sampleFile(c: RouteSampleContext): Promise<string> {
  const dir = join(c.t.kernel.config.dataDir, 'files')
  await mkdir(dir, { recursive: true })
  await writeFile(join(dir, 'sample.txt'), 'route table sample\n')
  return 'root=files&path=sample.txt'
}

export const samples: RouteSamples = {
  'GET /api/storage': async () => ({ url: '/api/storage' }),
  'GET /api/storage/smart/:id': async () => ({ url: '/api/storage/smart/vda', ok: [423] }),
  'POST /api/storage/eject': async () => ({ url: '/api/storage/eject', body: { device: 'sr0' }, ok: [423] }),
  'POST /api/storage/mount': async () => ({
    url: '/api/storage/mount',
    body: { url: 'smb://nas.example/media', name: 'media' },
    ok: [423],
  }),
  'POST /api/storage/unmount': async () => ({ url: '/api/storage/unmount', body: { name: 'media' }, ok: [423] }),
  'GET /api/storage/exports': async () => ({ url: '/api/storage/exports' }),
  'POST /api/storage/exports': async () => ({
    url: '/api/storage/exports',
    body: { name: 'pub', path: '/srv/pub' },
    ok: [423],
  }),
  'POST /api/storage/exports/remove': async () => ({
    url: '/api/storage/exports/remove',
    body: { name: 'pub' },
    ok: [423],
  }),
  'GET /api/storage/fs/list': async (c) => {
    await sampleFile(c)
    return { url: '/api/storage/fs/list?root=files&path=' }
  },
  'GET /api/storage/fs/read': async (c) => ({ url: `/api/storage/fs/read?${await sampleFile(c)}` }),
  'GET /api/storage/fs/download': async (c) => ({ url: `/api/storage/fs/download?${await sampleFile(c)}` }),
  'POST /api/storage/fs/upload': async () => ({
    url: '/api/storage/fs/upload?root=files&path=&name=uploaded.bin&overwrite=1',
    raw: Buffer.from('uploaded'),
    contentType: 'application/octet-stream',
  }),
  'POST /api/storage/fs/mkdir': async () => ({
    url: '/api/storage/fs/mkdir',
    body: { root: 'files', path: '', name: `made-${Date.now()}` },
    ok: [201],
  }),
  'POST /api/storage/fs/rename': async (c) => {
    await sampleFile(c)
    return { url: '/api/storage/fs/rename', body: { root: 'files', path: '', name: 'sample.txt', to: 'sample.txt' } }
  },
  'POST /api/storage/fs/move': async (c) => {
    await sampleFile(c)
    await mkdir(join(c.t.kernel.config.dataDir, 'files', 'moved'), { recursive: true })
    return { url: '/api/storage/fs/move', body: { root: 'files', path: '', names: ['sample.txt'], toPath: 'moved' } }
  },
  'POST /api/storage/fs/copy': async (c) => {
    await sampleFile(c)
    return { url: '/api/storage/fs/copy', body: { root: 'files', path: '', names: ['sample.txt'], toPath: '' } }
  },
  'POST /api/storage/fs/delete': async (c) => {
    await sampleFile(c)
    return { url: '/api/storage/fs/delete', body: { root: 'files', path: '', names: ['sample.txt'] } }
  },
  'GET /api/storage/fs/thumbnail': async (c) => ({
    url: `/api/storage/fs/thumbnail?${await sampleFile(c)}`,
    ok: [415],
  }),
}
