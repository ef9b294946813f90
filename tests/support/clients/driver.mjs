// The official Node.js client driving the proxy (tests/sidecar/test_clients.py).
// Usage: node driver.mjs URL API_KEY INDEX PHASE DOCS.json ; prints one JSON line per step.
import { readFileSync } from 'node:fs'
import { Client } from '@elastic/elasticsearch'

const [url, apiKey, index, phase, docsFile] = process.argv.slice(2)
const docs = JSON.parse(readFileSync(docsFile, 'utf8'))
const client = new Client({ node: url, auth: { apiKey }, maxRetries: 0, requestTimeout: 60000 })
const out = (step, data) => console.log(JSON.stringify({ step, ...data }))
const body = (item) => Object.values(item)[0]
const status = async (step, fn) => {
  try {
    const r = await fn()
    out(step, { status: 200, result: r.result })
  } catch (e) {
    out(step, { status: e.meta?.statusCode ?? -1, error: e.name })
  }
}

async function writes (prefix, list) {
  const dropped = []
  const stats = await client.helpers.bulk({
    datasource: list.slice(0, Math.floor(list.length / 2)),
    onDocument: (d) => [{ index: { _index: index, _id: prefix + d.id } }, { title: d.title, content: d.content, seq: d.seq }],
    onDrop: (d) => dropped.push(d.status),
    flushBytes: 100000,
    retries: 0
  })
  out('helpers.bulk', { total: stats.total, successful: stats.successful, failed: stats.failed, dropped })
  const ops = list.slice(Math.floor(list.length / 2)).flatMap((d) => [
    { create: { _index: index, _id: prefix + d.id } }, { title: d.title, content: d.content, seq: d.seq }])
  const r = await client.bulk({ operations: ops })
  out('bulk', { errors: r.errors, statuses: r.items.map((i) => body(i).status), results: r.items.map((i) => body(i).result) })
}

if (phase === 'main') {
  await writes('node/', docs.slice(0, -1))
  const odd = 'node/with space/中文'
  const last = docs[docs.length - 1]
  const r = await client.index({ index, id: odd, document: { content: last.content, seq: last.seq } })
  out('index', { result: r.result, id: r._id, version: r._version })
  const u = await client.update({ index, id: odd, doc: { content: last.content + ' 更新' } })
  out('update', { result: u.result })
  await status('create-existing', () => client.create({ index, id: odd, document: { content: 'x' } }))
  await status('get-missing', () => client.get({ index, id: 'node/missing' }))
  const d = await client.delete({ index, id: odd })
  out('delete', { result: d.result })
  await status('delete-missing', () => client.delete({ index, id: odd }))
} else {
  await writes('node-out/', docs.slice(0, -1))
  const last = docs[docs.length - 1]
  const r = await client.index({ index, id: 'node-out/single', document: { content: last.content, seq: last.seq } })
  out('index', { result: r.result, id: r._id, version: r._version, queued: r.fingerprint_indexer?.queued === true })
  const u = await client.update({ index, id: 'node-out/single', doc: { note: 'kept' } })
  out('update', { result: u.result })
  await client.index({ index, id: 'node-out/extra', document: { content: last.content + ' 又一篇' } })
  const d = await client.delete({ index, id: 'node-out/extra' })
  out('delete', { result: d.result })
}
await client.close()
