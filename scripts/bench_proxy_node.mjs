// The Node.js client's bulk helper, with its defaults, sending a JSON-lines file of documents to a
// URL (the proxy or Elasticsearch itself). Usage: node bench_proxy_node.mjs URL INDEX DOCS.jsonl [API_KEY]
// Prints {"total", "successful", "failed", "seconds", "docs_per_s"}.
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import { Client } from '@elastic/elasticsearch'

const [url, index, file, apiKey] = process.argv.slice(2)
const client = new Client({ node: url, ...(apiKey ? { auth: { apiKey } } : {}), requestTimeout: 600000 })
const lines = createInterface({ input: createReadStream(file), crlfDelay: Infinity })
async function * docs () { for await (const line of lines) if (line) yield JSON.parse(line) }
const t0 = process.hrtime.bigint()
const stats = await client.helpers.bulk({
  datasource: docs(),
  onDocument: (d) => { const id = d.id; delete d.id; return { index: { _index: index, _id: id } } },
  onDrop: (d) => console.error('dropped', d.status, JSON.stringify(d.error).slice(0, 200))
})
const seconds = Number(process.hrtime.bigint() - t0) / 1e9
console.log(JSON.stringify({ total: stats.total, successful: stats.successful, failed: stats.failed,
  seconds: Math.round(seconds * 100) / 100, docs_per_s: Math.round(stats.successful / seconds * 10) / 10 }))
await client.close()
