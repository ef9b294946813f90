// The official Java client driving the proxy (tests/service/test_clients.py).
// Usage: java Driver URL API_KEY INDEX PHASE DOCS.json ; prints one JSON line per step.
import co.elastic.clients.elasticsearch.ElasticsearchClient;
import co.elastic.clients.elasticsearch._helpers.bulk.BulkIngester;
import co.elastic.clients.elasticsearch._helpers.bulk.BulkListener;
import co.elastic.clients.elasticsearch._types.ElasticsearchException;
import co.elastic.clients.elasticsearch.core.BulkRequest;
import co.elastic.clients.elasticsearch.core.BulkResponse;
import co.elastic.clients.elasticsearch.core.IndexResponse;
import co.elastic.clients.elasticsearch.core.bulk.BulkOperation;
import co.elastic.clients.elasticsearch.core.bulk.BulkResponseItem;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

public class Driver {
    static final ObjectMapper JSON = new ObjectMapper();

    static void out(String step, Map<String, Object> data) throws Exception {
        Map<String, Object> line = new LinkedHashMap<>();
        line.put("step", step);
        line.putAll(data);
        System.out.println(JSON.writeValueAsString(line));
    }

    static Map<String, Object> source(Map<String, Object> d) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("title", d.get("title"));
        s.put("content", d.get("content"));
        s.put("seq", d.get("seq"));
        return s;
    }

    static void writes(ElasticsearchClient es, String index, String prefix, List<Map<String, Object>> list)
            throws Exception {
        int half = list.size() / 2;
        AtomicInteger ok = new AtomicInteger(), failed = new AtomicInteger(), requestErrors = new AtomicInteger();
        BulkListener<Void> listener = new BulkListener<>() {
            public void beforeBulk(long id, BulkRequest req, List<Void> ctx) {}
            public void afterBulk(long id, BulkRequest req, List<Void> ctx, BulkResponse resp) {
                for (BulkResponseItem it : resp.items()) {
                    if (it.error() == null) ok.incrementAndGet(); else failed.incrementAndGet();
                }
            }
            public void afterBulk(long id, BulkRequest req, List<Void> ctx, Throwable err) {
                requestErrors.incrementAndGet();
                System.err.println("bulk failed: " + err);
            }
        };
        try (BulkIngester<Void> ingester = BulkIngester.of(b -> b.client(es).maxOperations(20).listener(listener))) {
            for (Map<String, Object> d : list.subList(0, half)) {
                String id = prefix + d.get("id");
                ingester.add(op -> op.index(i -> i.index(index).id(id).document(source(d))));
            }
        }
        out("BulkIngester", Map.of("successful", ok.get(), "failed", failed.get(), "request_errors", requestErrors.get()));
        List<BulkOperation> ops = new ArrayList<>();
        for (Map<String, Object> d : list.subList(half, list.size())) {
            String id = prefix + d.get("id");
            ops.add(BulkOperation.of(op -> op.create(c -> c.index(index).id(id).document(source(d)))));
        }
        BulkResponse r = es.bulk(b -> b.operations(ops));
        List<Object> statuses = new ArrayList<>(), results = new ArrayList<>();
        for (BulkResponseItem it : r.items()) {
            statuses.add(it.status());
            results.add(it.result());
        }
        out("bulk", Map.of("errors", r.errors(), "statuses", statuses, "results", results));
    }

    static void status(String step, ThrowingRunnable fn) throws Exception {
        try {
            Object result = fn.run();
            out(step, Map.of("status", 200, "result", String.valueOf(result)));
        } catch (ElasticsearchException e) {
            out(step, Map.of("status", e.status(), "error", e.error().type()));
        }
    }

    interface ThrowingRunnable { Object run() throws Exception; }

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        String url = args[0], apiKey = args[1], index = args[2], phase = args[3];
        List<Map<String, Object>> docs = JSON.readValue(Files.readString(Path.of(args[4])), List.class);
        try (ElasticsearchClient es = ElasticsearchClient.of(b -> b.host(url).apiKey(apiKey))) {
            Map<String, Object> last = docs.get(docs.size() - 1);
            if (phase.equals("main")) {
                writes(es, index, "java/", docs.subList(0, docs.size() - 1));
                String odd = "java/with space/中文";
                IndexResponse r = es.index(i -> i.index(index).id(odd).document(source(last)));
                out("index", Map.of("result", r.result().jsonValue(), "id", r.id(), "version", r.version()));
                Map<String, Object> change = Map.of("content", last.get("content") + " 更新");
                var u = es.update(b -> b.index(index).id(odd).doc(change), Map.class);
                out("update", Map.of("result", u.result().jsonValue()));
                status("create-existing", () -> es.create(c -> c.index(index).id(odd).document(Map.of("content", "x"))).result());
                var g = es.get(b -> b.index(index).id("java/missing"), Map.class);
                out("get-missing", Map.of("status", g.found() ? 200 : 404));
                var d = es.delete(b -> b.index(index).id(odd));
                out("delete", Map.of("result", d.result().jsonValue()));
                var d2 = es.delete(b -> b.index(index).id(odd));
                out("delete-missing", Map.of("status", 404, "result", d2.result().jsonValue()));
            } else {
                writes(es, index, "java-out/", docs.subList(0, docs.size() - 1));
                IndexResponse r = es.index(i -> i.index(index).id("java-out/single").document(source(last)));
                out("index", Map.of("result", r.result().jsonValue(), "id", r.id(), "version", r.version()));
                var u = es.update(b -> b.index(index).id("java-out/single").doc(Map.of("note", "kept")), Map.class);
                out("update", Map.of("result", u.result().jsonValue()));
                es.index(i -> i.index(index).id("java-out/extra").document(Map.of("content", last.get("content") + " 又一篇")));
                var d = es.delete(b -> b.index(index).id("java-out/extra"));
                out("delete", Map.of("result", d.result().jsonValue()));
            }
        }
    }
}
