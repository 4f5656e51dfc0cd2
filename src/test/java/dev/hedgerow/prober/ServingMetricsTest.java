package dev.hedgerow.prober;

import dev.hedgerow.routing.CapacityReport;
import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reading vLLM and SGLang Prometheus text into capacity reports. */
class ServingMetricsTest {
    static final String VLLM = """
            # HELP vllm:num_requests_waiting Number of requests waiting to be processed.
            # TYPE vllm:num_requests_waiting gauge
            vllm:num_requests_waiting{engine="0",model_name="qwen3-32b"} 7.0
            vllm:num_requests_waiting{engine="0",model_name="llama-8b"} 1.0
            # TYPE vllm:gpu_cache_usage_perc gauge
            vllm:gpu_cache_usage_perc{engine="0",model_name="qwen3-32b"} 0.83
            vllm:gpu_cache_usage_perc{engine="0",model_name="llama-8b"} 0.10
            vllm:num_requests_running{model_name="qwen3-32b"} 12
            """;

    @Test
    void readsTheVllmQueueAndCacheUseOfTheRoutesModel() {
        CapacityReport r = ServingMetrics.report(VLLM, "qwen3-32b", 64).orElseThrow();
        assertEquals(7, r.queueDepth());
        assertEquals(0.83, r.memoryPressure(), 1e-9);
        assertEquals(64, r.maxQueue());
        assertTrue(r.hasHeadroom());
    }

    @Test
    void readsSglangGaugesWithoutModelLabelsAsTheWholeServer() {
        String text = """
                sglang:num_queue_reqs 70
                sglang:token_usage 0.97
                sglang:gen_throughput 812.5
                """;
        CapacityReport r = ServingMetrics.report(text, "any-model", 64).orElseThrow();
        assertEquals(70, r.queueDepth());
        assertEquals(0.97, r.memoryPressure(), 1e-9);
        assertEquals(812.5, r.tokensPerSecond(), 1e-9);
        assertFalse(r.hasHeadroom());
    }

    @Test
    void countsAQueueOnceWhenBothDialectsAreExposed() {
        String text = """
                vllm:num_requests_waiting{model_name="m"} 3.0
                vllm:gpu_cache_usage_perc{model_name="m"} 0.5
                sglang:num_queue_reqs{model_name="m"} 3.0
                sglang:token_usage{model_name="m"} 0.5
                """;
        assertEquals(3, ServingMetrics.report(text, "m", 64).orElseThrow().queueDepth());
    }

    @Test
    void givesNothingForTextWithoutKnownMetrics() {
        assertEquals(Optional.empty(), ServingMetrics.report("# nothing\nprocess_cpu_seconds_total 12\n", "m", 64));
        assertEquals(Optional.empty(), ServingMetrics.report("garbage {{{ line\n\n", "m", 64));
    }

    @Test
    void unescapesLabelValues() {
        assertEquals("a\"b", ServingMetrics.label("x=\"1\",model_name=\"a\\\"b\"", "model_name"));
    }
}
