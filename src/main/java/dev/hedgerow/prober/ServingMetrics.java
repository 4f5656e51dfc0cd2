package dev.hedgerow.prober;

import dev.hedgerow.routing.CapacityReport;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Reads the serving load of vLLM and SGLang out of Prometheus text exposition: queue depth
 * ({@code vllm:num_requests_waiting}, {@code sglang:num_queue_reqs}), KV-cache use ({@code vllm:gpu_cache_usage_perc},
 * {@code sglang:token_usage}) and, when SGLang reports it, generation throughput ({@code sglang:gen_throughput}).
 * Series labelled {@code model_name} are matched to the route's model; without a match every series counts
 * (queues summed, memory pressure its maximum). Stateless; thread-safe.
 */
public final class ServingMetrics {
    private ServingMetrics() {
    }

    /** One sample line: metric name, its {@code model_name} label (null when absent), value. */
    record Sample(String name, String model, double value) {
    }

    /**
     * The capacity of the route serving {@code model}, or empty when the text holds none of the known metrics.
     *
     * @param maxQueue the queue depth at which the route has no headroom left
     */
    public static Optional<CapacityReport> report(String text, String model, int maxQueue) {
        List<Sample> samples = parse(text);
        boolean labelled = samples.stream().anyMatch(s -> model.equals(s.model()));
        List<Sample> mine = samples.stream().filter(s -> !labelled || model.equals(s.model())).toList();
        // vLLM names win when a process exposes both dialects (the simulator does), so nothing counts twice
        double[] vllm = load(mine, "vllm:num_requests_waiting", "vllm:gpu_cache_usage_perc");
        double[] sglang = load(mine, "sglang:num_queue_reqs", "sglang:token_usage");
        double[] use = vllm != null ? vllm : sglang;
        if (use == null) {
            return Optional.empty();
        }
        double tps = mine.stream().filter(s -> s.name().equals("sglang:gen_throughput"))
                .mapToDouble(Sample::value).max().orElse(0);
        return Optional.of(new CapacityReport((int) Math.round(use[0]), maxQueue, Math.max(0, Math.min(1, use[1])),
                tps));
    }

    /** {queue summed, pressure max} of one dialect's two gauges, or null when neither is present. */
    private static double[] load(List<Sample> samples, String queueName, String pressureName) {
        double queue = 0;
        double pressure = 0;
        boolean any = false;
        for (Sample s : samples) {
            if (s.name().equals(queueName)) {
                queue += s.value();
                any = true;
            } else if (s.name().equals(pressureName)) {
                pressure = Math.max(pressure, s.value());
                any = true;
            }
        }
        return any ? new double[] {queue, pressure} : null;
    }

    /** The sample lines of a text exposition; comments, blank and malformed lines are skipped. */
    static List<Sample> parse(String text) {
        List<Sample> out = new ArrayList<>();
        if (text == null) {
            return out;
        }
        for (String line : text.split("\n")) {
            String l = line.strip();
            if (l.isEmpty() || l.startsWith("#")) {
                continue;
            }
            int brace = l.indexOf('{');
            int space;
            String name;
            String model = null;
            if (brace > 0) {
                int close = l.lastIndexOf('}');
                if (close < brace) {
                    continue;
                }
                name = l.substring(0, brace);
                model = label(l.substring(brace + 1, close), "model_name");
                space = close + 1;
            } else {
                space = l.indexOf(' ');
                if (space <= 0) {
                    continue;
                }
                name = l.substring(0, space);
            }
            String[] rest = l.substring(space).strip().split("\\s+");
            if (rest.length == 0) {
                continue;
            }
            try {
                double v = Double.parseDouble(rest[0]);
                if (Double.isFinite(v)) {
                    out.add(new Sample(name, model, v));
                }
            } catch (NumberFormatException e) {
                // NaN/garbage values are skipped
            }
        }
        return out;
    }

    /** The unescaped value of one label in a {@code k="v",...} list, or null. */
    static String label(String labels, String key) {
        int i = 0;
        while (i < labels.length()) {
            int eq = labels.indexOf('=', i);
            if (eq < 0) {
                return null;
            }
            String k = labels.substring(i, eq).strip();
            if (eq + 1 >= labels.length() || labels.charAt(eq + 1) != '"') {
                return null;
            }
            StringBuilder v = new StringBuilder();
            int j = eq + 2;
            while (j < labels.length() && labels.charAt(j) != '"') {
                char c = labels.charAt(j);
                if (c == '\\' && j + 1 < labels.length()) {
                    char n = labels.charAt(++j);
                    v.append(n == 'n' ? '\n' : n);
                } else {
                    v.append(c);
                }
                j++;
            }
            if (k.equals(key)) {
                return v.toString();
            }
            i = labels.indexOf(',', j);
            if (i < 0) {
                return null;
            }
            i++;
        }
        return null;
    }
}
