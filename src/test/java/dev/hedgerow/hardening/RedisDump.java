package dev.hedgerow.hardening;

import dev.hedgerow.testsupport.Resp;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** Everything a private test Redis holds, key by key, as text: for scanning stored state for secrets. */
final class RedisDump {
    private RedisDump() {
    }

    static Map<String, String> all(int port) {
        try {
            Map<String, String> out = new LinkedHashMap<>();
            String keys = Resp.command(port, "KEYS", "*");
            if (keys == null || keys.isEmpty()) {
                return out;
            }
            for (String k : keys.split("\n")) {
                String type = Resp.command(port, "TYPE", k);
                String v = switch (type) {
                    case "string" -> Resp.command(port, "GET", k);
                    case "hash" -> Resp.command(port, "HGETALL", k);
                    case "list" -> Resp.command(port, "LRANGE", k, "0", "-1");
                    case "set" -> Resp.command(port, "SMEMBERS", k);
                    case "zset" -> Resp.command(port, "ZRANGE", k, "0", "-1", "WITHSCORES");
                    case "stream" -> Resp.command(port, "XRANGE", k, "-", "+");
                    default -> "<" + type + ">";
                };
                out.put(k, v);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
