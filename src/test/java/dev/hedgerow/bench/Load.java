package dev.hedgerow.bench;

import io.vertx.core.Future;
import io.vertx.core.Promise;
import io.vertx.core.Vertx;
import io.vertx.core.buffer.Buffer;
import io.vertx.core.http.HttpClient;
import io.vertx.core.http.HttpClientOptions;
import io.vertx.core.http.HttpMethod;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.http.RequestOptions;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;

/**
 * The benchmark load client: a Vert.x HTTP/1.1 client with keep-alive, on loopback only. Two shapes of load:
 *
 * <ul>
 *   <li>{@link #openLoop}: requests are <em>scheduled</em> at a fixed rate and each latency is measured from its
 *       scheduled start, not from when it was actually sent, so a stalled server is charged for every request it
 *       delayed (no coordinated omission, as in wrk2);</li>
 *   <li>{@link #closedLoop}: a fixed number of concurrent exchanges back to back (throughput at saturation, and
 *       streams at a fixed concurrency), each timed from its send, with time to first byte and the gaps between
 *       body chunks.</li>
 * </ul>
 * Histograms are in microseconds. Thread-safe: results are recorded from event-loop threads into concurrent
 * structures.
 */
final class Load implements AutoCloseable {
    static final long MAX_MICROS = TimeUnit.SECONDS.toMicros(120);

    private final Vertx vertx;
    private final HttpClient client;

    Load(Vertx vertx, int poolSize) {
        this.vertx = vertx;
        this.client = vertx.createHttpClient(new HttpClientOptions().setKeepAlive(true).setTcpNoDelay(true)
                        .setConnectTimeout(5000).setIdleTimeout(0),
                new PoolOptions().setHttp1MaxSize(poolSize).setMaxWaitQueueSize(-1));
    }

    /** One request to send: target and body. */
    record Req(int port, String path, Map<String, String> headers, String body) {
    }

    /** One finished exchange: status, body, when its first byte and its end arrived (µs from its start). */
    record Exchange(int index, int status, String body, Map<String, String> headers, long ttfbMicros,
                    long totalMicros, String error) {
        boolean ok() {
            return error == null && status == 200;
        }
    }

    /** {@code BENCH_TRACE_SLOW_MS}: open-loop requests at least this slow are listed with their start (diagnosis). */
    static final long TRACE_SLOW_MICROS = (long) (BenchEnv.doubleEnv("BENCH_TRACE_SLOW_MS", 0) * 1000);

    /** Results of one run. */
    static final class Result {
        final Histogram latency = new ConcurrentHistogram(MAX_MICROS, 3);
        final Histogram ttfb = new ConcurrentHistogram(MAX_MICROS, 3);
        final Histogram gaps = new ConcurrentHistogram(MAX_MICROS, 3);
        final AtomicLong ok = new AtomicLong();
        final AtomicLong failed = new AtomicLong();
        final List<Exchange> exchanges = Collections.synchronizedList(new ArrayList<>());
        /** Open loop with {@code BENCH_TRACE_SLOW_MS} set: requests at least that slow, as "HH:mm:ss.SSS latency". */
        final List<String> slow = Collections.synchronizedList(new ArrayList<>());
        volatile long wallNanos;

        double throughput() {
            return wallNanos == 0 ? 0 : ok.get() / (wallNanos / 1e9);
        }
    }

    /**
     * Sends {@code rate} requests per second for {@code seconds}, each scheduled at {@code t0 + i / rate}; its latency
     * (to the last body byte) is taken from that scheduled instant.
     */
    Result openLoop(IntFunction<Req> requests, double rate, double seconds, boolean keepBodies) {
        Result r = new Result();
        long count = Math.round(rate * seconds);
        long periodNanos = (long) (1e9 / rate);
        CountDownLatch done = new CountDownLatch((int) count);
        long t0 = System.nanoTime() + 20_000_000L;
        long epochMillisAtT0 = System.currentTimeMillis() + 20;
        for (int i = 0; i < count; i++) {
            long intended = t0 + i * periodNanos;
            long wait;
            while ((wait = intended - System.nanoTime()) > 0) {
                LockSupport.parkNanos(wait);
            }
            int index = i;
            exchange(requests.apply(i), intended, null).onComplete(ar -> {
                record(r, ar.result(), index, keepBodies);
                if (TRACE_SLOW_MICROS > 0 && ar.result().totalMicros() >= TRACE_SLOW_MICROS) {
                    r.slow.add(String.format("%tT.%<tL %.2f", epochMillisAtT0 + (intended - t0) / 1_000_000,
                            ar.result().totalMicros() / 1000.0));
                }
                done.countDown();
            });
        }
        await(done, seconds + 90);
        r.wallNanos = System.nanoTime() - t0;
        return r;
    }

    /**
     * Runs {@code concurrency} workers, each sending its next request as soon as the last one ended, until
     * {@code total} requests were sent or {@code seconds} passed (whichever comes first; 0 = no limit).
     */
    Result closedLoop(IntFunction<Req> requests, int concurrency, int total, double seconds, boolean keepBodies) {
        Result r = new Result();
        AtomicInteger next = new AtomicInteger();
        long t0 = System.nanoTime();
        long deadline = seconds <= 0 ? Long.MAX_VALUE : t0 + (long) (seconds * 1e9);
        CountDownLatch workers = new CountDownLatch(concurrency);
        for (int w = 0; w < concurrency; w++) {
            worker(requests, r, next, total, deadline, keepBodies, workers);
        }
        await(workers, (seconds <= 0 ? 3600 : seconds) + 120);
        r.wallNanos = System.nanoTime() - t0;
        return r;
    }

    private void worker(IntFunction<Req> requests, Result r, AtomicInteger next, int total, long deadline,
                        boolean keepBodies, CountDownLatch workers) {
        int index = next.getAndIncrement();
        if ((total > 0 && index >= total) || System.nanoTime() >= deadline) {
            workers.countDown();
            return;
        }
        exchange(requests.apply(index), System.nanoTime(), r.gaps).onComplete(ar -> {
            Exchange e = ar.result();
            r.ttfb.recordValue(clamp(e.ttfbMicros() < 0 ? e.totalMicros() : e.ttfbMicros()));
            record(r, e, index, keepBodies);
            worker(requests, r, next, total, deadline, keepBodies, workers);
        });
    }

    private static void record(Result r, Exchange e, int index, boolean keepBodies) {
        if (e.ok()) {
            r.ok.incrementAndGet();
            r.latency.recordValue(clamp(e.totalMicros()));
        } else {
            r.failed.incrementAndGet();
        }
        if (keepBodies || !e.ok()) {
            r.exchanges.add(new Exchange(index, e.status(), e.body(), e.headers(), e.ttfbMicros(), e.totalMicros(),
                    e.error()));
        }
    }

    static long clamp(long micros) {
        return Math.max(1, Math.min(MAX_MICROS, micros));
    }

    /** One exchange; never fails: errors come back inside the {@link Exchange}. */
    Future<Exchange> exchange(Req q, long startNanos, Histogram gaps) {
        Promise<Exchange> p = Promise.promise();
        RequestOptions o = new RequestOptions().setMethod(HttpMethod.POST).setHost("127.0.0.1").setPort(q.port())
                .setURI(q.path()).setTimeout(TimeUnit.SECONDS.toMillis(30));
        q.headers().forEach(o::addHeader);
        // The response handlers are registered before the request is sent, so they run on the event loop in the
        // same tick as the response head: registered any later, a fast answer's end could pass unseen.
        client.request(o).onComplete(rq -> {
            if (rq.failed()) {
                p.tryComplete(new Exchange(0, 0, "", Map.of(), -1, micros(startNanos), rq.cause().toString()));
                return;
            }
            rq.result().response().onComplete(ar -> onResponse(ar, p, startNanos, gaps));
            rq.result().end(Buffer.buffer(q.body())).onFailure(t -> p.tryComplete(
                    new Exchange(0, 0, "", Map.of(), -1, micros(startNanos), t.toString())));
        });
        return p.future();
    }

    private static void onResponse(io.vertx.core.AsyncResult<io.vertx.core.http.HttpClientResponse> ar,
                                   Promise<Exchange> p, long startNanos, Histogram gaps) {
        {
            if (ar.failed()) {
                p.tryComplete(new Exchange(0, 0, "", Map.of(), -1, micros(startNanos), ar.cause().toString()));
                return;
            }
            var resp = ar.result();
            Buffer body = Buffer.buffer();
            long[] first = {-1};
            long[] last = {0};
            resp.handler(b -> {
                long now = System.nanoTime();
                if (first[0] < 0) {
                    first[0] = now;
                } else if (gaps != null) {
                    gaps.recordValue(clamp((now - last[0]) / 1000));
                }
                last[0] = now;
                body.appendBuffer(b);
            });
            resp.exceptionHandler(t -> p.tryComplete(new Exchange(0, resp.statusCode(),
                    body.toString(StandardCharsets.UTF_8), Map.of(), -1, micros(startNanos), t.toString())));
            resp.endHandler(v -> {
                Map<String, String> h = new java.util.HashMap<>();
                resp.headers().forEach(en -> h.put(en.getKey().toLowerCase(java.util.Locale.ROOT), en.getValue()));
                p.tryComplete(new Exchange(0, resp.statusCode(), body.toString(StandardCharsets.UTF_8), h,
                        first[0] < 0 ? -1 : (first[0] - startNanos) / 1000, micros(startNanos), null));
            });
        }
    }

    private static long micros(long startNanos) {
        return (System.nanoTime() - startNanos) / 1000;
    }

    private static void await(CountDownLatch l, double seconds) {
        try {
            if (!l.await((long) seconds, TimeUnit.SECONDS)) {
                throw new IllegalStateException("load did not finish within " + seconds + " s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        client.close().toCompletionStage().toCompletableFuture().join();
    }

    Vertx vertx() {
        return vertx;
    }
}
