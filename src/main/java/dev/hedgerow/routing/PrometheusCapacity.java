package dev.hedgerow.routing;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Reads a route's headroom out of a vLLM or SGLang Prometheus text exposition ({@code metrics_url}): pure text in,
 * a {@link CapacityReport} out; the prober fetches the text and stores the report.
 *
 * <ul>
 *   <li>queue depth: {@code vllm:num_requests_waiting} or {@code sglang:num_queue_reqs}, summed over the samples
 *       of the model (a data-parallel server exports one per engine);</li>
 *   <li>memory pressure: {@code vllm:gpu_cache_usage_perc}, {@code vllm:kv_cache_usage_perc} (vLLM V1) or
 *       {@code sglang:token_usage}, the highest of them (the fullest engine limits admission), clamped to [0, 1];</li>
 *   <li>decode speed per stream: {@code sglang:gen_throughput} (or vLLM V0's
 *       {@code vllm:avg_generation_throughput_toks_per_s}) is the server's total generation rate, so it is divided
 *       by the running requests ({@code *:num_requests_running} / {@code sglang:num_running_reqs}, at least 1).
 *       vLLM V1 exports only counters, which one scrape cannot turn into a rate: speed is then 0 (not reported)
 *       and live traffic measures it.</li>
 * </ul>
 * A sample counts for {@code model} when its {@code model_name} label equals it, or when it has no
 * {@code model_name} label at all (a single-model server). Without any queue or memory sample for the model the
 * result is empty: the scrape says nothing about this route. Malformed lines are skipped. Stateless; thread-safe.
 */
public final class PrometheusCapacity {
    static final Set<String> WAITING = Set.of("vllm:num_requests_waiting", "sglang:num_queue_reqs");
    static final Set<String> RUNNING = Set.of("vllm:num_requests_running", "sglang:num_running_reqs");
    static final Set<String> PRESSURE = Set.of("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc",
            "sglang:token_usage");
    static final Set<String> THROUGHPUT = Set.of("sglang:gen_throughput",
            "vllm:avg_generation_throughput_toks_per_s");

    private PrometheusCapacity() {
    }

    /** The model's headroom, with the default queue bound {@value CapacityReport#DEFAULT_MAX_QUEUE}. */
    public static Optional<CapacityReport> parse(String text, String model) {
        return parse(text, model, CapacityReport.DEFAULT_MAX_QUEUE);
    }

    /** The model's headroom; {@code maxQueue} is the waiting-queue length at which the route counts as full. */
    public static Optional<CapacityReport> parse(String text, String model, int maxQueue) {
        if (text == null || model == null) {
            return Optional.empty();
        }
        double waiting = 0;
        double running = 0;
        double pressure = 0;
        double throughput = 0;
        boolean sawLoad = false;
        for (String raw : text.split("\n")) {
            Sample s = sample(raw.strip());
            if (s == null || !Double.isFinite(s.value) || s.value < 0) {
                continue;
            }
            String labelModel = s.labels.get("model_name");
            if (labelModel != null && !labelModel.equals(model)) {
                continue;
            }
            if (WAITING.contains(s.name)) {
                waiting += s.value;
                sawLoad = true;
            } else if (PRESSURE.contains(s.name)) {
                pressure = Math.max(pressure, s.value);
                sawLoad = true;
            } else if (RUNNING.contains(s.name)) {
                running += s.value;
            } else if (THROUGHPUT.contains(s.name)) {
                throughput += s.value;
            }
        }
        if (!sawLoad) {
            return Optional.empty();
        }
        int queue = (int) Math.min(Integer.MAX_VALUE, Math.round(waiting));
        double perStream = throughput / Math.max(1, running);
        return Optional.of(new CapacityReport(queue, Math.max(1, maxQueue), Math.min(1, pressure), perStream));
    }

    private record Sample(String name, Map<String, String> labels, double value) {
    }

    /** One sample line {@code name{label="v",...} value [timestamp]}, or null for comments and junk. */
    static Sample sample(String line) {
        if (line.isEmpty() || line.charAt(0) == '#') {
            return null;
        }
        int i = 0;
        int n = line.length();
        while (i < n && line.charAt(i) != '{' && !Character.isWhitespace(line.charAt(i))) {
            i++;
        }
        String name = line.substring(0, i);
        if (name.isEmpty()) {
            return null;
        }
        Map<String, String> labels = new HashMap<>();
        if (i < n && line.charAt(i) == '{') {
            i = labels(line, i + 1, labels);
            if (i < 0) {
                return null;
            }
        }
        String rest = line.substring(i).strip();
        if (rest.isEmpty()) {
            return null;
        }
        int sp = 0;
        while (sp < rest.length() && !Character.isWhitespace(rest.charAt(sp))) {
            sp++;
        }
        return new Sample(name, labels, number(rest.substring(0, sp)));
    }

    /** Parses labels after '{'; returns the index after '}', or -1 when the label set is malformed. */
    private static int labels(String line, int i, Map<String, String> out) {
        int n = line.length();
        while (true) {
            while (i < n && (line.charAt(i) == ',' || line.charAt(i) == ' ')) {
                i++;
            }
            if (i >= n) {
                return -1;
            }
            if (line.charAt(i) == '}') {
                return i + 1;
            }
            int eq = line.indexOf('=', i);
            if (eq < 0 || eq + 1 >= n || line.charAt(eq + 1) != '"') {
                return -1;
            }
            String key = line.substring(i, eq).strip();
            StringBuilder v = new StringBuilder();
            int j = eq + 2;
            for (; j < n; j++) {
                char c = line.charAt(j);
                if (c == '\\' && j + 1 < n) {
                    char e = line.charAt(++j);
                    v.append(e == 'n' ? '\n' : e);
                } else if (c == '"') {
                    break;
                } else {
                    v.append(c);
                }
            }
            if (j >= n) {
                return -1;
            }
            out.put(key, v.toString());
            i = j + 1;
        }
    }

    private static double number(String s) {
        switch (s) {
            case "+Inf", "Inf" -> {
                return Double.POSITIVE_INFINITY;
            }
            case "-Inf" -> {
                return Double.NEGATIVE_INFINITY;
            }
            case "NaN" -> {
                return Double.NaN;
            }
            default -> {
                try {
                    return Double.parseDouble(s);
                } catch (NumberFormatException e) {
                    return Double.NaN;
                }
            }
        }
    }
}
