package dev.hedgerow.routing;

import dev.hedgerow.sim.ModelScript;
import dev.hedgerow.sim.SimConfig;
import dev.hedgerow.sim.SimServer;
import io.vertx.core.Vertx;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PrometheusCapacityTest {

    static final String VLLM = """
            # HELP vllm:num_requests_running Number of requests currently running on GPU.
            # TYPE vllm:num_requests_running gauge
            vllm:num_requests_running{engine="0",model_name="meta/llama-3"} 12.0
            # HELP vllm:num_requests_waiting Number of requests waiting to be processed.
            # TYPE vllm:num_requests_waiting gauge
            vllm:num_requests_waiting{engine="0",model_name="meta/llama-3"} 3.0
            vllm:num_requests_waiting{engine="1",model_name="meta/llama-3"} 2.0
            vllm:num_requests_waiting{engine="0",model_name="other"} 40.0
            # HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
            # TYPE vllm:gpu_cache_usage_perc gauge
            vllm:gpu_cache_usage_perc{engine="0",model_name="meta/llama-3"} 0.42
            vllm:gpu_cache_usage_perc{engine="1",model_name="meta/llama-3"} 6.1e-1
            vllm:generation_tokens_total{model_name="meta/llama-3"} 123456.0
            """;

    static final String SGLANG = """
            # TYPE sglang:num_running_reqs gauge
            sglang:num_running_reqs{model_name="qwen"} 4
            sglang:num_queue_reqs{model_name="qwen"} 20 1718000000000
            sglang:token_usage{model_name="qwen"} 0.97
            sglang:gen_throughput{model_name="qwen"} 320.0
            """;

    @Test
    void vllmQueueIsSummedOverEnginesAndPressureIsTheFullestEngine() {
        CapacityReport r = PrometheusCapacity.parse(VLLM, "meta/llama-3").orElseThrow();
        assertEquals(5, r.queueDepth());
        assertEquals(0.61, r.memoryPressure(), 1e-9);
        assertEquals(CapacityReport.DEFAULT_MAX_QUEUE, r.maxQueue());
        assertEquals(0, r.tokensPerSecond(), "vLLM V1 exports counters only: speed is not reported");
        assertTrue(r.hasHeadroom());
    }

    @Test
    void samplesOfAnotherModelAreIgnored() {
        CapacityReport r = PrometheusCapacity.parse(VLLM, "other").orElseThrow();
        assertEquals(40, r.queueDepth());
        assertEquals(0, r.memoryPressure());
        assertFalse(r.hasHeadroom());
    }

    @Test
    void sglangThroughputIsSharedAmongRunningStreamsAndTimestampsAreSkipped() {
        CapacityReport r = PrometheusCapacity.parse(SGLANG, "qwen", 64).orElseThrow();
        assertEquals(20, r.queueDepth());
        assertEquals(64, r.maxQueue());
        assertEquals(0.97, r.memoryPressure(), 1e-9);
        assertEquals(80, r.tokensPerSecond(), 1e-9);
        assertFalse(r.hasHeadroom(), "memory pressure above the limit");
    }

    @Test
    void unlabelledSamplesCountForAnySingleModelServer() {
        String text = "vllm:num_requests_waiting 7\nvllm:kv_cache_usage_perc 0.2\n";
        CapacityReport r = PrometheusCapacity.parse(text, "whatever").orElseThrow();
        assertEquals(7, r.queueDepth());
        assertEquals(0.2, r.memoryPressure(), 1e-9);
    }

    @Test
    void aScrapeWithoutTheModelSaysNothing() {
        assertEquals(Optional.empty(), PrometheusCapacity.parse(VLLM, "absent"));
        assertEquals(Optional.empty(), PrometheusCapacity.parse("", "m"));
        assertEquals(Optional.empty(), PrometheusCapacity.parse("process_cpu_seconds_total 12\n", "m"));
        assertEquals(Optional.empty(), PrometheusCapacity.parse(null, "m"));
    }

    @Test
    void malformedLinesAndNonFiniteValuesAreSkipped() {
        String text = """
                vllm:num_requests_waiting{model_name="m" 9
                vllm:num_requests_waiting{model_name="m"} NaN
                vllm:num_requests_waiting{model_name="m"} +Inf
                vllm:num_requests_waiting{model_name="m"} -3
                vllm:num_requests_waiting{model_name="m"} abc
                vllm:num_requests_waiting{model_name="m\\"x"} 50
                vllm:num_requests_waiting{model_name="m"} 2
                """;
        assertEquals(2, PrometheusCapacity.parse(text, "m").orElseThrow().queueDepth());
        assertEquals(50, PrometheusCapacity.parse(text, "m\"x").orElseThrow().queueDepth());
    }

    @Test
    void readsTheSimulatorsRealMetricsEndpoint() throws Exception {
        Vertx vertx = Vertx.vertx();
        SimServer sim = SimServer.startBlocking(vertx, SimConfig.of(1).withModel("sim-model", ModelScript.defaults()));
        try {
            sim.memoryPressure(0.97);
            HttpResponse<String> resp = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(URI.create(sim.rootUrl() + "/metrics")).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            CapacityReport r = PrometheusCapacity.parse(resp.body(), "sim-model").orElseThrow();
            assertEquals(0, r.queueDepth());
            assertEquals(0.97, r.memoryPressure(), 1e-9);
            assertFalse(r.hasHeadroom());
        } finally {
            sim.close();
            vertx.close().toCompletionStage().toCompletableFuture().join();
        }
    }
}
