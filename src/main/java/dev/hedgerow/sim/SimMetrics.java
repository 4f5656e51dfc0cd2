package dev.hedgerow.sim;

import java.util.Map;

/**
 * Renders the simulator's load as Prometheus text exposition under the names vLLM and SGLang use, so a gateway's
 * metrics reader can be tested against either. Stateless.
 */
final class SimMetrics {

    private SimMetrics() {
    }

    static String render(Map<String, ModelState> models, double memoryPressure) {
        StringBuilder sb = new StringBuilder();
        gauge(sb, "vllm:num_requests_running", "Number of requests currently running on GPU.", models,
                ms -> ms.running());
        gauge(sb, "vllm:num_requests_waiting", "Number of requests waiting to be processed.", models,
                ms -> ms.waitingCount());
        gauge(sb, "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", models,
                ms -> memoryPressure);
        gauge(sb, "sglang:num_running_reqs", "The number of running requests.", models, ms -> ms.running());
        gauge(sb, "sglang:num_queue_reqs", "The number of requests in the waiting queue.", models,
                ms -> ms.waitingCount());
        gauge(sb, "sglang:token_usage", "The token usage.", models, ms -> memoryPressure);
        gauge(sb, "sglang:gen_throughput", "The generation throughput (token/s).", models,
                ms -> ms.speed().tokensPerSecond());
        gauge(sb, "hedgerow_sim_ttft_ms", "Measured time to first token (EWMA).", models,
                ms -> ms.speed().ttftMs());
        return sb.toString();
    }

    private interface Value {
        double of(ModelState ms);
    }

    private static void gauge(StringBuilder sb, String name, String help, Map<String, ModelState> models, Value v) {
        sb.append("# HELP ").append(name).append(' ').append(help).append('\n');
        sb.append("# TYPE ").append(name).append(" gauge\n");
        models.forEach((model, ms) -> sb.append(name).append("{model_name=\"").append(escape(model)).append("\"} ")
                .append(format(v.of(ms))).append('\n'));
    }

    private static String format(double d) {
        return d == Math.rint(d) && !Double.isInfinite(d) ? String.valueOf((long) d) + ".0" : String.valueOf(d);
    }

    private static String escape(String s) {
        return s.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n");
    }
}
