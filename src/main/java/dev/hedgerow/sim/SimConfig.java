package dev.hedgerow.sim;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Configuration of one simulator instance. Immutable; build with {@link #of(long)} and the {@code withX} methods,
 * or read from JSON with {@link SimJson#readConfig(String)}.
 *
 * @param textSeed   seeds the completion text (with the first user message), shared by every model so that two
 *                   simulated routes write the same text for the same prompt
 * @param apiKey     when not null, {@code /v1/*} requests need {@code Authorization: Bearer <apiKey>} (else 401)
 * @param models     scripted models by the name a request's {@code model} field uses
 * @param maxRunning requests generated at once; more wait in a FIFO queue (0 = no limit)
 */
public record SimConfig(long textSeed, String apiKey, Map<String, ModelScript> models, int maxRunning) {

    public SimConfig {
        models = models == null ? Map.of() : java.util.Collections.unmodifiableMap(new LinkedHashMap<>(models));
        maxRunning = Math.max(0, maxRunning);
    }

    public static SimConfig of(long textSeed) {
        return new SimConfig(textSeed, null, Map.of(), 0);
    }

    public SimConfig withApiKey(String key) {
        return new SimConfig(textSeed, key, models, maxRunning);
    }

    public SimConfig withModel(String name, ModelScript script) {
        Map<String, ModelScript> m = new LinkedHashMap<>(models);
        m.put(name, script);
        return new SimConfig(textSeed, apiKey, m, maxRunning);
    }

    public SimConfig withMaxRunning(int n) {
        return new SimConfig(textSeed, apiKey, models, n);
    }
}
